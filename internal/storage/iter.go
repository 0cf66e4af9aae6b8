package storage

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2/sstable"
)

// source is one sorted input of a merge: a write-buffer run or an SST.
// Entries are ordered by (table, rest) ascending, then epoch descending.
// A source is used in one direction only (forward or reverse).
type source interface {
	// first positions at the first entry >= (table, lower) in forward
	// mode, or the last entry < (table, upper) in reverse mode.
	first() bool
	next() bool
	table() TableID
	rest() []byte
	epoch() uint64
	// tagged returns the stored value, tag byte first.
	tagged() ([]byte, error)
	// value returns the entry's value without copying; valid until the
	// source moves.
	value() (del bool, val []byte, err error)
	err() error
	close() error
}

// ---- run source ----

type runSource struct {
	r          *run
	lo, hi     int // [lo, hi) bound indexes
	i          int
	reverse    bool
	tagBuf     []byte
	lowerBound []byte
}

func newRunSource(r *run, lower, upper []byte, reverse bool) *runSource {
	s := &runSource{r: r, reverse: reverse, lo: 0, hi: len(r.ents)}
	if lower != nil {
		s.lo = r.seek(lower)
	}
	if upper != nil {
		s.hi = r.seek(upper)
	}
	return s
}

func (s *runSource) first() bool {
	if s.reverse {
		s.i = s.hi - 1
	} else {
		s.i = s.lo
	}
	return s.valid()
}

func (s *runSource) valid() bool { return s.i >= s.lo && s.i < s.hi }

func (s *runSource) next() bool {
	if s.reverse {
		s.i--
	} else {
		s.i++
	}
	return s.valid()
}

func (s *runSource) table() TableID { return s.r.table }
func (s *runSource) rest() []byte   { return s.r.key(s.i) }
func (s *runSource) epoch() uint64  { return s.r.epoch }
func (s *runSource) value() (bool, []byte, error) {
	if s.r.ents[s.i].del {
		return true, nil, nil
	}
	return false, s.r.value(s.i), nil
}
func (s *runSource) tagged() ([]byte, error) {
	s.tagBuf = s.tagBuf[:0]
	if s.r.ents[s.i].del {
		return append(s.tagBuf, tagDelete), nil
	}
	s.tagBuf = append(append(s.tagBuf, tagPut), s.r.value(s.i)...)
	return s.tagBuf, nil
}
func (s *runSource) err() error   { return nil }
func (s *runSource) close() error { return nil }

// ---- SST source ----

type sstSource struct {
	name         string
	lower, upper []byte
	it           sstable.Iterator
	reverse      bool
	kv           *sstKV
	cur          curKV
	e            error
}

type sstKV = struct{}

type curKV struct {
	table TableID
	rest  []byte
	epoch uint64
	kv    interface {
		Value(buf []byte) ([]byte, bool, error)
	}
}

func newSSTSource(ctx context.Context, r *sstable.Reader, name string, lower, upper []byte, reverse bool) (s *sstSource, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("iterate %s: %v: %w", name, p, ErrCorrupt)
		}
	}()
	it, err := r.NewPointIter(ctx, sstable.IterOptions{Lower: lower, Upper: upper})
	if err != nil {
		return nil, fmt.Errorf("iterate %s: %w", name, err)
	}
	return &sstSource{name: name, it: it, reverse: reverse, lower: lower, upper: upper}, nil
}

func (s *sstSource) set(kv interface {
	Value(buf []byte) ([]byte, bool, error)
}, key []byte) bool {
	t, rest, e, ok := splitKey(key)
	if !ok {
		s.e = fmt.Errorf("%s: malformed key %x: %w", s.name, key, ErrCorrupt)
		return false
	}
	s.cur = curKV{table: t, rest: rest, epoch: e, kv: kv}
	return true
}

func (s *sstSource) first() (ok bool) {
	defer s.recoverPanic(&ok)
	if s.reverse {
		if s.upper == nil {
			kv := s.it.Last()
			if kv == nil {
				s.checkErr()
				return false
			}
			return s.set(kv, kv.K.UserKey)
		}
		kv := s.it.SeekLT(s.upper, 0)
		if kv == nil {
			s.checkErr()
			return false
		}
		return s.set(kv, kv.K.UserKey)
	}
	if s.lower == nil {
		kv := s.it.First()
		if kv == nil {
			s.checkErr()
			return false
		}
		return s.set(kv, kv.K.UserKey)
	}
	kv := s.it.SeekGE(s.lower, 0)
	if kv == nil {
		s.checkErr()
		return false
	}
	return s.set(kv, kv.K.UserKey)
}

func (s *sstSource) next() (ok bool) {
	defer s.recoverPanic(&ok)
	if s.reverse {
		kv := s.it.Prev()
		if kv == nil {
			s.checkErr()
			return false
		}
		return s.set(kv, kv.K.UserKey)
	}
	kv := s.it.Next()
	if kv == nil {
		s.checkErr()
		return false
	}
	return s.set(kv, kv.K.UserKey)
}

func (s *sstSource) recoverPanic(ok *bool) {
	if p := recover(); p != nil {
		s.e = fmt.Errorf("read %s: %v: %w", s.name, p, ErrCorrupt)
		*ok = false
	}
}

func (s *sstSource) checkErr() {
	if err := s.it.Error(); err != nil && s.e == nil {
		s.e = fmt.Errorf("read %s: %w", s.name, err)
	}
}

func (s *sstSource) table() TableID { return s.cur.table }
func (s *sstSource) rest() []byte   { return s.cur.rest }
func (s *sstSource) epoch() uint64  { return s.cur.epoch }
func (s *sstSource) value() (bool, []byte, error) {
	v, err := s.tagged()
	if err != nil {
		return false, nil, err
	}
	return v[0] == tagDelete, v[1:], nil
}
func (s *sstSource) tagged() ([]byte, error) {
	v, _, err := s.cur.kv.Value(nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.name, err)
	}
	if len(v) == 0 || v[0] > tagDelete {
		return nil, fmt.Errorf("read %s: bad value tag: %w", s.name, ErrCorrupt)
	}
	return v, nil
}
func (s *sstSource) err() error { return s.e }
func (s *sstSource) close() error {
	if s.it == nil {
		return nil
	}
	err := s.it.Close()
	s.it = nil
	return err
}

// ---- merge ----

// mergeIter merges sources by (table, rest) then epoch descending; ties
// (same key and epoch in two sources) go to the source with the lower
// priority number, which callers give to the newer source. In reverse mode
// the whole order is reversed.
type mergeIter struct {
	h       mergeHeap
	all     []*mergeItem
	reverse bool
	e       error
}

type mergeItem struct {
	src  source
	prio int
}

type mergeHeap struct {
	items   []*mergeItem
	reverse bool
}

func compareEntries(a, b source) int {
	if a.table() != b.table() {
		if a.table() < b.table() {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(a.rest(), b.rest()); c != 0 {
		return c
	}
	ea, eb := a.epoch(), b.epoch()
	switch {
	case ea > eb:
		return -1
	case ea < eb:
		return 1
	}
	return 0
}

func (h *mergeHeap) Len() int { return len(h.items) }
func (h *mergeHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	c := compareEntries(a.src, b.src)
	if h.reverse {
		c = -c
	}
	if c != 0 {
		return c < 0
	}
	if h.reverse {
		return a.prio > b.prio
	}
	return a.prio < b.prio
}
func (h *mergeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap) Push(x any)    { h.items = append(h.items, x.(*mergeItem)) }
func (h *mergeHeap) Pop() any {
	n := len(h.items)
	x := h.items[n-1]
	h.items = h.items[:n-1]
	return x
}

func newMergeIter(srcs []source, reverse bool) *mergeIter {
	m := &mergeIter{reverse: reverse}
	m.h.reverse = reverse
	for i, s := range srcs {
		m.all = append(m.all, &mergeItem{src: s, prio: i})
	}
	return m
}

// start positions every source; returns false if all are empty.
func (m *mergeIter) start() bool {
	m.h.items = m.h.items[:0]
	for _, it := range m.all {
		if it.src.first() {
			m.h.items = append(m.h.items, it)
		} else if err := it.src.err(); err != nil {
			m.e = err
			return false
		}
	}
	heap.Init(&m.h)
	return len(m.h.items) > 0
}

// top is the current smallest entry's source; valid while m.h.Len() > 0.
func (m *mergeIter) top() source { return m.h.items[0].src }

// advance moves past the current top entry.
func (m *mergeIter) advance() bool {
	it := m.h.items[0]
	if len(m.h.items) == 1 {
		// One live source: no ordering work.
		if it.src.next() {
			return true
		}
		m.e = it.src.err()
		m.h.items = m.h.items[:0]
		return false
	}
	if it.src.next() {
		heap.Fix(&m.h, 0)
	} else {
		if err := it.src.err(); err != nil {
			m.e = err
			return false
		}
		heap.Pop(&m.h)
	}
	return len(m.h.items) > 0
}

func (m *mergeIter) close() error {
	var first error
	for _, it := range m.all {
		if err := it.src.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
