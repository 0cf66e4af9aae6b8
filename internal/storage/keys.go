package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2/sstable"
)

// TableID identifies a state table in the key space. It is the first four
// bytes (big-endian) of every stored key.
type TableID uint32

// Key layout inside SSTs (see docs/storage-format.md):
//
//	+----------------+----------------------+------+------------------+------+
//	| table_id (4 B) | rest (caller's bytes)| 0x00 | ^epoch (8 B, BE) | 0x09 |
//	+----------------+----------------------+------+------------------+------+
//	 \_____________________ prefix _______________/ \_______ suffix ______/
//
// The suffix is the bitwise complement of the epoch so that, for one prefix,
// newer versions sort first: SeekPrefixGE(prefix, prefix+suffix(E)) lands on
// the newest version <= E.
//
// The key is self-describing: its last byte is the suffix length (9), and a
// bare prefix ends with the 0x00 sentinel (suffix length 0). Pebble calls
// Split and Compare on bare prefixes as well as full keys (the row-block
// writer compares consecutive keys' prefixes); a fixed-length suffix cannot
// tell the two apart and ordered prefixes of different lengths wrongly.
// Appending 0x00 to every rest preserves the byte order of rests.
const (
	tableIDLen = 4
	// suffixLen is the epoch plus the trailing suffix-length byte.
	suffixLen = 9
)

// Value tags: every stored value starts with one tag byte.
const (
	tagPut    byte = 0
	tagDelete byte = 1
)

// appendPrefix appends table_id | rest | 0x00 to dst.
func appendPrefix(dst []byte, table TableID, rest []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(table))
	dst = append(dst, rest...)
	return append(dst, 0)
}

// appendSuffix appends the inverted big-endian epoch and the suffix length.
func appendSuffix(dst []byte, epoch uint64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, ^epoch)
	return append(dst, suffixLen)
}

// makeKey returns table_id | rest | 0x00 | ^epoch | 0x09.
func makeKey(table TableID, rest []byte, epoch uint64) []byte {
	k := make([]byte, 0, tableIDLen+len(rest)+1+suffixLen)
	return appendSuffix(appendPrefix(k, table, rest), epoch)
}

// splitKey decomposes a stored key. ok is false if the key is not a full
// stored key (too short, or not ending in a suffix).
func splitKey(k []byte) (table TableID, rest []byte, epoch uint64, ok bool) {
	if len(k) < tableIDLen+1+suffixLen || k[len(k)-1] != suffixLen || k[len(k)-suffixLen-1] != 0 {
		return 0, nil, 0, false
	}
	table = TableID(binary.BigEndian.Uint32(k))
	rest = k[tableIDLen : len(k)-suffixLen-1]
	epoch = ^binary.BigEndian.Uint64(k[len(k)-suffixLen : len(k)-1])
	return table, rest, epoch, true
}

// epochSplit returns the length of the prefix of k: the last byte of a
// key is its suffix length (0 for a bare prefix, which ends with the 0x00
// sentinel). Malformed keys are all prefix.
func epochSplit(k []byte) int {
	if len(k) == 0 {
		return 0
	}
	n := int(k[len(k)-1])
	if n > len(k) {
		return len(k)
	}
	return len(k) - n
}

func epochCompare(a, b []byte) int {
	na, nb := epochSplit(a), epochSplit(b)
	if c := bytes.Compare(a[:na], b[:nb]); c != 0 {
		return c
	}
	return bytes.Compare(a[na:], b[nb:])
}

// abbreviatedKey is the first 8 bytes of the prefix, zero padded; it is
// monotone in the prefix order, which is all pebble requires.
func abbreviatedKey(k []byte) uint64 {
	p := k[:epochSplit(k)]
	var buf [8]byte
	copy(buf[:], p)
	return binary.BigEndian.Uint64(buf[:])
}

// Comparer is the pebble comparer for Runnel's stored keys. Separator and
// Successor do not shorten keys: every index key stays a real, splittable
// key, which keeps the comparer trivially consistent.
var Comparer = &sstable.Comparer{
	Compare:              epochCompare,
	Equal:                func(a, b []byte) bool { return bytes.Equal(a, b) },
	AbbreviatedKey:       abbreviatedKey,
	Separator:            func(dst, a, b []byte) []byte { return append(dst, a...) },
	Successor:            func(dst, a []byte) []byte { return append(dst, a...) },
	ImmediateSuccessor:   func(dst, a []byte) []byte { return append(append(dst, a...), 0) },
	Split:                epochSplit,
	ComparePointSuffixes: bytes.Compare,
	CompareRangeSuffixes: bytes.Compare,
	FormatKey:            formatKey,
	Name:                 "runnel.epoch-suffix.v1",
}

type formattedKey []byte

func (k formattedKey) Format(s fmt.State, _ rune) {
	t, rest, e, ok := splitKey(k)
	if !ok {
		fmt.Fprintf(s, "%x", []byte(k))
		return
	}
	fmt.Fprintf(s, "t%d/%x@%d", t, rest, e)
}

func formatKey(k []byte) fmt.Formatter { return formattedKey(k) }
