package storage

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
)

// Iterator walks one table's live keys at an epoch, in key order (or
// reverse). Usage: for it.Next() { it.Key(); it.Value() }; then Err, Close.
// Key and Value are valid until the next call to Next.
type Iterator interface {
	Next() bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

// Iter returns an iterator over keys in [lower, upper) of table (nil bounds
// are open) as of epoch.
func (e *Engine) Iter(ctx context.Context, table TableID, lower, upper []byte, epoch uint64, opt ReadOptions) (Iterator, error) {
	v, buf, err := e.pin(table)
	if err != nil {
		return nil, err
	}
	if opt.CommittedOnly {
		buf = nil
	}
	it, err := e.newIter(ctx, v, buf, table, lower, upper, epoch, opt.Reverse, opt.Time)
	if err != nil {
		e.unpin(v)
		return nil, err
	}
	it.unpin = true
	return it, nil
}

func (e *Engine) newIter(ctx context.Context, v *Version, buf []*bufItem, table TableID, lower, upper []byte, epoch uint64, reverse bool, times *TimeRange) (*tableIter, error) {
	if err := e.checkTable(v, table); err != nil {
		return nil, err
	}
	if epoch < v.SafeEpoch {
		return nil, fmt.Errorf("storage: read table %d at epoch %d: %w (%d)", table, epoch, ErrEpochTooOld, v.SafeEpoch)
	}
	lo := appendPrefix(nil, table, lower)
	var hi []byte
	if upper != nil {
		hi = appendPrefix(nil, table, upper)
	} else if table != ^TableID(0) {
		hi = appendPrefix(nil, table+1, nil)
	}
	// SST bounds must be whole keys (the comparer splits a fixed-length
	// suffix): the smallest key of a prefix is prefix | ^maxEpoch.
	loK := appendSuffix(bytesClone(lo), ^uint64(0))
	var hiK []byte
	if hi != nil {
		hiK = appendSuffix(bytesClone(hi), ^uint64(0))
	}
	var srcs []source
	fail := func(err error) (*tableIter, error) {
		for _, s := range srcs {
			s.close()
		}
		return nil, err
	}
	for i := len(buf) - 1; i >= 0; i-- {
		it := buf[i]
		if it.epoch > epoch {
			continue
		}
		if it.run != nil {
			if it.table == table {
				srcs = append(srcs, newRunSource(it.run, lower, upper, reverse))
			}
			continue
		}
		if !overlaps(it.sst, table, lo, hi) || !overlapsTime(it.sst, table, times) {
			continue
		}
		s, err := e.openSSTSource(ctx, it.sst, loK, hiK, reverse)
		if err != nil {
			return fail(err)
		}
		srcs = append(srcs, s)
	}
	// pruned counts the files of the table's key range skipped for their
	// time range (ReadStats).
	// selected counts the SSTs the scan reads (a sorted level's files are
	// opened lazily, as the scan reaches them).
	var pruned, selected uint64
	inRange := func(f *SSTMeta) bool {
		if !overlaps(f, table, lo, hi) {
			return false
		}
		if !overlapsTime(f, table, times) {
			pruned++
			return false
		}
		selected++
		return true
	}
	defer func() {
		e.reads.scans.Add(1)
		e.reads.opened.Add(selected)
		e.reads.pruned.Add(pruned)
	}()
	// L0, then the window level's files of the table (the windows the
	// scan's time range overlaps; window.go): files that may overlap in
	// key range, each a source of its own.
	for _, files := range [][]*SSTMeta{v.Levels[0], windowFiles(v, table)} {
		for _, f := range files {
			if f.MinEpoch > epoch || !inRange(f) {
				continue
			}
			s, err := e.openSSTSource(ctx, f, loK, hiK, reverse)
			if err != nil {
				return fail(err)
			}
			srcs = append(srcs, s)
		}
	}
	for l := 1; l < NumLevels; l++ {
		var files []*SSTMeta
		for _, f := range v.Levels[l] {
			if inRange(f) {
				files = append(files, f)
			}
		}
		switch len(files) {
		case 0:
		case 1:
			s, err := e.openSSTSource(ctx, files[0], loK, hiK, reverse)
			if err != nil {
				return fail(err)
			}
			srcs = append(srcs, s)
		default:
			srcs = append(srcs, &levelSource{ctx: ctx, e: e, files: files, lo: loK, hi: hiK, reverse: reverse})
		}
	}
	t := &tableIter{ctx: ctx, e: e, v: v, table: table, epoch: epoch, reverse: reverse, expired: e.expiry(table)}
	t.m = newMergeIter(srcs, reverse)
	return t, nil
}

// overlapsTime reports whether f may hold rows of table whose time is in
// r (nil: any): false only when f's time range for table is known and
// disjoint from r.
func overlapsTime(f *SSTMeta, table TableID, r *TimeRange) bool {
	if r == nil || len(f.Times) != len(f.Tables) {
		return true
	}
	i := slices.Index(f.Tables, table)
	if i < 0 || !f.Times[i].Valid {
		return true
	}
	return f.Times[i].Max >= r.Min && f.Times[i].Min <= r.Max
}

// overlaps reports whether f may hold keys of table in [lo, hi) (full
// prefixes; hi nil = unbounded).
func overlaps(f *SSTMeta, table TableID, lo, hi []byte) bool {
	smallest, largest, ok := f.tableRange(table)
	if !ok {
		return false
	}
	if bytes.Compare(largest, lo) < 0 {
		return false
	}
	if hi != nil && bytes.Compare(smallest, hi) >= 0 {
		return false
	}
	return true
}

func (e *Engine) openSSTSource(ctx context.Context, f *SSTMeta, lo, hi []byte, reverse bool) (*sstSource, error) {
	r, err := e.tc.get(ctx, f)
	if err != nil {
		return nil, err
	}
	return newSSTSource(ctx, r, objectKey(f.ID), lo, hi, reverse)
}

// levelSource concatenates the files of one sorted level, opening each
// lazily.
type levelSource struct {
	ctx     context.Context
	e       *Engine
	files   []*SSTMeta
	lo, hi  []byte
	reverse bool
	i       int
	cur     *sstSource
	er      error
}

func (s *levelSource) open(i int) bool {
	if s.cur != nil {
		s.cur.close()
		s.cur = nil
	}
	for ; i >= 0 && i < len(s.files); i = s.step(i) {
		src, err := s.e.openSSTSource(s.ctx, s.files[i], s.lo, s.hi, s.reverse)
		if err != nil {
			s.er = err
			return false
		}
		s.i, s.cur = i, src
		if src.first() {
			return true
		}
		if err := src.err(); err != nil {
			s.er = err
			return false
		}
		src.close()
		s.cur = nil
	}
	return false
}

func (s *levelSource) step(i int) int {
	if s.reverse {
		return i - 1
	}
	return i + 1
}

func (s *levelSource) first() bool {
	if s.reverse {
		return s.open(len(s.files) - 1)
	}
	return s.open(0)
}

func (s *levelSource) next() bool {
	if s.cur == nil {
		return false
	}
	if s.cur.next() {
		return true
	}
	if err := s.cur.err(); err != nil {
		s.er = err
		return false
	}
	return s.open(s.step(s.i))
}

func (s *levelSource) table() TableID               { return s.cur.table() }
func (s *levelSource) rest() []byte                 { return s.cur.rest() }
func (s *levelSource) epoch() uint64                { return s.cur.epoch() }
func (s *levelSource) value() (bool, []byte, error) { return s.cur.value() }
func (s *levelSource) tagged() ([]byte, error)      { return s.cur.tagged() }
func (s *levelSource) err() error                   { return s.er }
func (s *levelSource) close() error {
	if s.cur != nil {
		err := s.cur.close()
		s.cur = nil
		return err
	}
	return nil
}

// tableIter resolves versions: for each key, the newest version <= epoch
// (tombstones hide the key).
type tableIter struct {
	ctx     context.Context
	e       *Engine
	v       *Version
	snap    *Snapshot
	table   TableID
	epoch   uint64
	reverse bool
	m       *mergeIter
	started bool
	done    bool
	key     []byte
	val     []byte
	grp     []byte
	err     error
	n       int
	steps   int // entries visited (cancellation checks)
	unpin   bool
	closed  bool
	// expired, when the table has a retention, tells the keys past its
	// TTL: they are skipped like deleted ones (retention.go).
	expired func(rest []byte) bool
}

func (t *tableIter) Key() []byte   { return t.key }
func (t *tableIter) Value() []byte { return t.val }
func (t *tableIter) Err() error    { return t.err }

func (t *tableIter) fail(err error) bool {
	t.err, t.done = err, true
	return false
}

func (t *tableIter) finish() bool {
	t.done = true
	if t.m.e != nil {
		t.err = t.m.e
	}
	return false
}

func (t *tableIter) Next() bool {
	if t.done || t.err != nil {
		return false
	}
	// I4 on the streaming path too: an iterator outliving an unregister
	// fails instead of returning stale rows.
	if t.n++; t.n%128 == 1 {
		if err := t.e.checkTable(t.v, t.table); err != nil {
			return t.fail(err)
		}
	}
	if t.reverse {
		return t.nextReverse()
	}
	if !t.started {
		t.started = true
		if !t.m.start() {
			return t.finish()
		}
	} else if !t.skipGroup() {
		return t.finish()
	}
	for {
		// I5: a run of tombstones or old versions can be long; a
		// cancelled reader stops within a few hundred entries.
		if t.steps++; t.steps%256 == 0 && t.ctx.Err() != nil {
			return t.fail(t.ctx.Err())
		}
		s := t.m.top()
		if s.epoch() <= t.epoch {
			del, v, err := s.value()
			if err != nil {
				return t.fail(err)
			}
			t.key = append(t.key[:0], s.rest()...)
			if !del && (t.expired == nil || !t.expired(t.key)) {
				t.val = v // valid until the next Next, as documented
				return true
			}
			if !t.skipGroup() {
				return t.finish()
			}
			continue
		}
		if !t.m.advance() {
			return t.finish()
		}
	}
}

// skipGroup advances past every entry whose key equals t.key.
func (t *tableIter) skipGroup() bool {
	for {
		if !t.m.advance() {
			return false
		}
		if !bytes.Equal(t.m.top().rest(), t.key) {
			return true
		}
	}
}

func (t *tableIter) nextReverse() bool {
	if !t.started {
		t.started = true
		if !t.m.start() {
			return t.finish()
		}
	} else if t.m.h.Len() == 0 {
		return t.finish()
	}
	for {
		if t.steps++; t.steps%256 == 0 && t.ctx.Err() != nil { // I5, as in Next
			return t.fail(t.ctx.Err())
		}
		t.grp = append(t.grp[:0], t.m.top().rest()...)
		have, put := false, false
		exhausted := false
		for {
			s := t.m.top()
			if !bytes.Equal(s.rest(), t.grp) {
				break
			}
			if s.epoch() <= t.epoch {
				del, v, err := s.value()
				if err != nil {
					return t.fail(err)
				}
				have, put = true, !del
				if put {
					t.val = append(t.val[:0], v...)
				}
			}
			if !t.m.advance() {
				exhausted = true
				break
			}
		}
		if t.m.e != nil {
			return t.fail(t.m.e)
		}
		if have && put && (t.expired == nil || !t.expired(t.grp)) {
			t.key = append(t.key[:0], t.grp...)
			return true
		}
		if exhausted {
			return t.finish()
		}
	}
}

func (t *tableIter) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	err := t.m.close()
	if t.unpin {
		t.e.unpin(t.v)
	}
	return err
}

// Snapshot pins a committed version and its epoch for batch reads.
type Snapshot struct {
	e      *Engine
	v      *Version
	epoch  uint64
	err    error
	closed atomic.Bool
}

// Snapshot pins the current committed version. Close it when done: a
// pinned snapshot holds back compaction's version dropping and GC.
func (e *Engine) Snapshot() *Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return &Snapshot{e: e, err: ErrClosed}
	}
	e.cur.refs.Add(1)
	s := &Snapshot{e: e, v: e.cur, epoch: e.cur.CommittedEpoch}
	e.snaps[s] = struct{}{}
	return s
}

// Epoch is the snapshot's committed epoch.
func (s *Snapshot) Epoch() uint64 { return s.epoch }

// Get reads key at the snapshot's epoch.
func (s *Snapshot) Get(ctx context.Context, table TableID, key []byte) ([]byte, bool, error) {
	if err := s.check(); err != nil {
		return nil, false, err
	}
	if err := s.e.checkTable(s.v, table); err != nil {
		return nil, false, err
	}
	return s.e.get(ctx, s.v, nil, table, key, s.epoch)
}

// Iter iterates [lower, upper) of table at the snapshot's epoch.
func (s *Snapshot) Iter(ctx context.Context, table TableID, lower, upper []byte, opt ReadOptions) (Iterator, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.e.newIter(ctx, s.v, nil, table, lower, upper, s.epoch, opt.Reverse, opt.Time)
}

func (s *Snapshot) check() error {
	if s.err != nil {
		return s.err
	}
	if s.closed.Load() {
		return fmt.Errorf("storage: snapshot at epoch %d is closed", s.epoch)
	}
	return nil
}

// Close releases the pin. Iterators from the snapshot must be closed first.
func (s *Snapshot) Close() {
	if s.err != nil || s.closed.Swap(true) {
		return
	}
	s.e.mu.Lock()
	delete(s.e.snaps, s)
	s.e.mu.Unlock()
	s.e.unpin(s.v)
}

func bytesClone(b []byte) []byte { return append(make([]byte, 0, len(b)+suffixLen), b...) }
