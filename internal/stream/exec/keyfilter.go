package exec

import (
	"hash/maphash"
	"math/bits"
)

// keyFilter is a growable Bloom filter over storage keys: mayContain is
// false only for a key that was never added. Materialize uses it to know,
// without a storage read, that a key it is about to insert is absent from
// its state table (see Materialize.SetFresh).
//
// It is a chain of blocked Bloom filters (one 512-bit block per key, 7
// bits set in it, 16 bits per key: about 0.1% false positives), each twice
// the capacity of the one before; a key is looked up in every filter of
// the chain. When the chain would exceed keyFilterMaxBytes it stops
// accepting keys and reports itself full: every key may then be present.
type keyFilter struct {
	seed    maphash.Seed
	filters []*bloomBlocks
	full    bool
}

// keyFilterMaxBytes caps one filter chain (~16-32 M keys).
const keyFilterMaxBytes = 64 << 20

// keyFilterFirstKeys is the capacity of the first filter of a chain.
const keyFilterFirstKeys = 1 << 14

const bloomBitsPerKey = 16

type bloomBlocks struct {
	words []uint64 // len is a multiple of 8: blocks of 512 bits
	n     int      // keys added
	cap   int      // keys it is sized for
}

func newKeyFilter() *keyFilter {
	return &keyFilter{seed: maphash.MakeSeed()}
}

// bytes returns the memory the filter holds.
func (f *keyFilter) bytes() int64 {
	var n int64
	for _, b := range f.filters {
		n += int64(len(b.words)) * 8
	}
	return n
}

// add records key; false when the filter is full (and useless from now
// on: it no longer knows every key).
func (f *keyFilter) add(key []byte) bool {
	if f.full {
		return false
	}
	return f.addHash(maphash.Bytes(f.seed, key))
}

// addString is add for a key held as a string.
func (f *keyFilter) addString(key string) bool {
	if f.full {
		return false
	}
	return f.addHash(maphash.String(f.seed, key))
}

func (f *keyFilter) addHash(h uint64) bool {
	if f.full {
		return false
	}
	if f.containsHash(h) {
		// Known already (or a false positive, which stays one: bits are
		// never cleared). Not counting it keeps repeated keys from
		// filling the filter.
		return true
	}
	var cur *bloomBlocks
	if n := len(f.filters); n > 0 && f.filters[n-1].n < f.filters[n-1].cap {
		cur = f.filters[n-1]
	} else {
		c := keyFilterFirstKeys
		if n > 0 {
			c = f.filters[n-1].cap * 2
		}
		words := (c*bloomBitsPerKey/512 + 1) * 8
		if f.bytes()+int64(words)*8 > keyFilterMaxBytes {
			f.full = true
			f.filters = nil
			return false
		}
		cur = &bloomBlocks{words: make([]uint64, words), cap: c}
		f.filters = append(f.filters, cur)
	}
	cur.set(h)
	cur.n++
	return true
}

// mayContain reports whether key may have been added (always true once
// the filter is full).
func (f *keyFilter) mayContain(key []byte) bool {
	if f.full || len(f.filters) == 0 {
		return f.full
	}
	return f.containsHash(maphash.Bytes(f.seed, key))
}

// mayContainString is mayContain for a key held as a string.
func (f *keyFilter) mayContainString(key string) bool {
	if f.full || len(f.filters) == 0 {
		return f.full
	}
	return f.containsHash(maphash.String(f.seed, key))
}

func (f *keyFilter) containsHash(h uint64) bool {
	for i := len(f.filters) - 1; i >= 0; i-- {
		if f.filters[i].has(h) {
			return true
		}
	}
	return false
}

// The block is chosen by the hash's high bits; seven 9-bit slices of the
// hash multiplied by an odd constant pick the bits within the block's 512.
func (b *bloomBlocks) block(h uint64) []uint64 {
	nb := uint64(len(b.words) / 8)
	hi, _ := bits.Mul64(h, nb)
	return b.words[hi*8 : hi*8+8]
}

func (b *bloomBlocks) set(h uint64) {
	blk := b.block(h)
	g := h * 0x9e3779b97f4a7c15
	for range 7 {
		bit := g & 511
		blk[bit>>6] |= 1 << (bit & 63)
		g >>= 9
	}
}

func (b *bloomBlocks) has(h uint64) bool {
	blk := b.block(h)
	g := h * 0x9e3779b97f4a7c15
	for range 7 {
		bit := g & 511
		if blk[bit>>6]&(1<<(bit&63)) == 0 {
			return false
		}
		g >>= 9
	}
	return true
}
