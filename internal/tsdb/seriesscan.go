package tsdb

import (
	"bytes"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

// Opener opens an iterator over a table's keys from lower (a key's rest,
// vnode | memcomparable key; nil: the table's first key) to its end, in
// one snapshot.
type Opener func(lower []byte) (storage.Iterator, error)

// SeriesScan iterates the rows of a time-series table whose time index
// lies in [lo, hi] (Unix µs) in key order. A table's key is (vnode,
// series..., time, ...), so each series' rows are contiguous and ordered
// by time: when a key is before lo, the scan starts a new iterator at
// (its series, lo), and when it is past hi, at the next series — a seek
// by reopening, since storage iterators do not seek. A query over a short
// window of a long history reads a few keys per series instead of all of
// them; a query over all of it never reopens. Every iterator comes from
// the Opener, so from one snapshot.
//
//	keys:   a@1 a@2 a@3 a@4 b@1 b@2 b@3 b@4     window [2, 3]
//	read:   a@1→reopen a@2 a@3 a@4→reopen b@1→reopen b@2 b@3 b@4→reopen(end)
//	rows:       a@2 a@3 b@2 b@3
type SeriesScan struct {
	open   Opener
	lo, hi int64
	skip   []types.Type // key columns before the time index
	tt     types.Type
	it     storage.Iterator
	err    error
	done   bool
	// stepped counts the keys read outside the window since the last row
	// or seek: a few are cheaper to read than a reopen.
	stepped int
	// prefix is the series prefix of the last key split: the next key
	// of the same series needs only its time decoded.
	prefix []byte
	// gen counts the series prefixes split (a new one each time the
	// prefix changes); rowGen is gen at the last row returned, and
	// newSeries tells whether that row's prefix differs from the row
	// before it (NewSeries).
	gen, rowGen uint64
	newSeries   bool
	// Reopens counts the seeks (tests and benchmarks read it).
	Reopens int
}

// NewSeriesScan returns the scan, or nil when rel is not a time-series
// table (the caller then scans everything and filters).
func NewSeriesScan(rel *catalog.Relation, open Opener, lo, hi int64) *SeriesScan {
	sp, ok := SpecOf(rel)
	if !ok {
		return nil
	}
	s := &SeriesScan{open: open, lo: lo, hi: hi, tt: rel.Columns[sp.TimeIndex].Type}
	for _, k := range rel.PK {
		if k == sp.TimeIndex {
			break
		}
		s.skip = append(s.skip, rel.Columns[k].Type)
	}
	return s
}

// split returns the length of key's series prefix (vnode and the key
// columns before the time) and its time.
func (s *SeriesScan) split(key []byte) (int, int64, bool) {
	if len(key) < 2 {
		return 0, 0, false
	}
	var b []byte
	if n := len(s.prefix); n > 0 && len(key) > n && bytes.Equal(key[:n], s.prefix) {
		b = key[n:]
	} else {
		b = key[2:]
		for _, t := range s.skip {
			var err error
			if _, b, err = types.DecodeKey(b, t, false, false); err != nil {
				return 0, 0, false
			}
		}
		s.prefix = append(s.prefix[:0], key[:len(key)-len(b)]...)
		s.gen++
	}
	n := len(key) - len(b)
	d, _, err := types.DecodeKey(b, s.tt, false, false)
	if err != nil || d.IsNull() {
		return 0, 0, false
	}
	return n, d.Int(), true
}

// readAhead is how many keys outside the window are read before a seek:
// a reopen seeks in every SST that may hold the table, costing about as
// much as reading tens of keys.
const readAhead = 32

func (s *SeriesScan) reopen(lower []byte) bool {
	s.stepped = 0
	if s.it != nil {
		s.it.Close()
		s.it = nil
	}
	s.Reopens++
	it, err := s.open(lower)
	if err != nil {
		s.err, s.done = err, true
		return false
	}
	s.it = it
	return true
}

// Next moves to the next row in the window.
func (s *SeriesScan) Next() bool {
	if s.done {
		return false
	}
	if s.it == nil && !s.reopen(nil) {
		return false
	}
	for {
		if !s.it.Next() {
			s.err, s.done = s.it.Err(), true
			return false
		}
		key := s.it.Key()
		n, t, ok := s.split(key)
		switch {
		case !ok:
			// Not a key this scan understands: the caller filters. The
			// row after it starts a series again.
			s.newSeries = true
			s.rowGen = s.gen - 1
			return true
		case (t < s.lo || t > s.hi) && s.stepped < readAhead:
			s.stepped++
		case t < s.lo:
			lower := types.AppendKey(append([]byte(nil), key[:n]...), timeDatum(s.tt, s.lo), s.tt, false, false)
			if !s.reopen(lower) {
				return false
			}
		case t > s.hi:
			next := successor(key[:n])
			if next == nil {
				s.done = true
				return false
			}
			if !s.reopen(next) {
				return false
			}
		default:
			s.stepped = 0
			s.newSeries = s.gen != s.rowGen
			s.rowGen = s.gen
			return true
		}
	}
}

func timeDatum(t types.Type, micros int64) types.Datum {
	if t.Kind == types.KindTimestamp {
		return types.DTimestamp(micros)
	}
	return types.DTimestamptz(micros)
}

// successor is the first key after every key that starts with prefix, or
// nil when there is none (all 0xff).
func successor(prefix []byte) []byte {
	out := append([]byte(nil), prefix...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] != 0xff {
			out[i]++
			return out[:i+1]
		}
	}
	return nil
}

// NewSeries reports whether the current row's series (its key before
// the time index: vnode, tags or series id) differs from the previous
// row's; false means every key column before the time is the same, so
// the tags need not be decoded again. The first row is a new series.
// Memcomparable encodings are self-delimiting, so equal prefix bytes are
// equal columns.
func (s *SeriesScan) NewSeries() bool { return s.newSeries }

func (s *SeriesScan) Key() []byte   { return s.it.Key() }
func (s *SeriesScan) Value() []byte { return s.it.Value() }
func (s *SeriesScan) Err() error    { return s.err }

func (s *SeriesScan) Close() error {
	s.done = true
	if s.it != nil {
		err := s.it.Close()
		s.it = nil
		return err
	}
	return nil
}

var _ storage.Iterator = (*SeriesScan)(nil)
