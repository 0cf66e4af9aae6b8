package storage

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// Pebble compares bare prefixes with the Comparer too (the row-block writer
// compares consecutive keys' prefixes). With short and long rests of
// different tables in one SST, a comparer that could not tell a prefix from
// a full key rejected increasing keys ("keys must be added in strictly
// increasing order: t2/0000, t4/00000180000000").
func TestComparerOnShortAndLongPrefixes(t *testing.T) {
	var prefixes, suffixes [][]byte
	for _, tbl := range []TableID{2, 4} {
		for _, rest := range []string{"", "\x00", "\x00\x00", "\x00\x00\x01\x80\x00\x00\x00", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"} {
			prefixes = append(prefixes, appendPrefix(nil, tbl, []byte(rest)))
		}
	}
	for _, e := range []uint64{^uint64(0), 10, 1, 0} {
		suffixes = append(suffixes, appendSuffix(nil, e))
	}
	if err := pebble.CheckComparer(Comparer, prefixes, suffixes); err != nil {
		t.Fatal(err)
	}
	b := newSSTBuilder()
	for _, k := range [][]byte{
		makeKey(2, []byte("\x00\x00"), 10),
		makeKey(4, []byte("\x00\x00\x01\x80\x00\x00\x00"), 10),
		makeKey(4, []byte("\x00\x01"), 10),
	} {
		if err := b.add(k, []byte{tagPut, 'v'}); err != nil {
			t.Fatalf("add %v: %v", formatKey(k), err)
		}
	}
	for _, k := range [][]byte{makeKey(9, nil, 3), makeKey(9, []byte("abc"), 3)} {
		tb, rest, e, ok := splitKey(k)
		if !ok || tb != 9 || e != 3 || len(rest) > 3 {
			t.Fatalf("splitKey(%x) = %d %q %d %v", k, tb, rest, e, ok)
		}
	}
}
