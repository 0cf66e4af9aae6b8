package storage

import (
	"bytes"
	"slices"
)

// KV is one write handed to Ingest. Key is the table-relative key ("rest",
// i.e. vnode | memcomparable pk for state tables).
type KV struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// run is one sorted, de-duplicated batch of writes for one (epoch, table),
// copied into a single arena so that a batch costs three allocations no
// matter how many keys it holds.
type run struct {
	epoch uint64
	table TableID
	arena []byte
	ents  []runEntry // sorted by key, unique
	bytes int64      // memory accounted to the write buffer
}

type runEntry struct {
	koff, klen uint32
	voff, vlen uint32
	del        bool
}

func (r *run) key(i int) []byte {
	e := &r.ents[i]
	return r.arena[e.koff : e.koff+e.klen : e.koff+e.klen]
}

func (r *run) value(i int) []byte {
	e := &r.ents[i]
	return r.arena[e.voff : e.voff+e.vlen : e.voff+e.vlen]
}

// newRun copies kvs and sorts them; for duplicate keys the later write wins.
func newRun(epoch uint64, table TableID, kvs []KV) *run {
	size := 0
	for i := range kvs {
		size += len(kvs[i].Key) + len(kvs[i].Value)
	}
	r := &run{epoch: epoch, table: table, arena: make([]byte, 0, size), ents: make([]runEntry, len(kvs))}
	for i := range kvs {
		kv := &kvs[i]
		e := &r.ents[i]
		e.koff = uint32(len(r.arena))
		e.klen = uint32(len(kv.Key))
		r.arena = append(r.arena, kv.Key...)
		e.voff = uint32(len(r.arena))
		if !kv.Delete {
			e.vlen = uint32(len(kv.Value))
			r.arena = append(r.arena, kv.Value...)
		}
		e.del = kv.Delete
	}
	// Ties are broken by input position (koff grows with it), so the last
	// write of a key sorts last and wins.
	sorted := true
	for i := 1; i < len(r.ents); i++ {
		if bytes.Compare(r.key(i-1), r.key(i)) >= 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortFunc(r.ents, func(a, b runEntry) int {
			if c := bytes.Compare(r.arena[a.koff:a.koff+a.klen], r.arena[b.koff:b.koff+b.klen]); c != 0 {
				return c
			}
			return int(a.koff) - int(b.koff)
		})
		out := r.ents[:0]
		for i := range r.ents {
			if i+1 < len(r.ents) && bytes.Equal(r.key(i), r.key(i+1)) {
				continue
			}
			out = append(out, r.ents[i])
		}
		r.ents = out
	}
	r.bytes = int64(cap(r.arena)) + int64(cap(r.ents))*16 + 96
	return r
}

// find returns the index of key in the run, or -1.
func (r *run) find(key []byte) int {
	lo, hi := 0, len(r.ents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(r.key(m), key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(r.ents) && bytes.Equal(r.key(lo), key) {
		return lo
	}
	return -1
}

// seek returns the first index whose key is >= key.
func (r *run) seek(key []byte) int {
	lo, hi := 0, len(r.ents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(r.key(m), key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
