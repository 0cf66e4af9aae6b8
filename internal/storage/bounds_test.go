package storage

import (
	"bytes"
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

// TestSSTTableBounds: an SST written by one commit spans several tables;
// a read of one table must not open it for key ranges of that table it
// holds nothing in. Before per-table bounds, a one-row commit touching
// tables 1 and 3 made every range read of table 3 below its key open the
// SST (a point lookup in a view fanned out over 256 vnodes paid for every
// such SST 128 times). The bounds survive the version's encoding and a
// reopen; versions written in format 1 (no bounds) still decode.
func TestSSTTableBounds(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, nil)
	if err := e.RegisterTables(ctx, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	for tbl, keys := range map[TableID][]string{1: {"a", "q"}, 3: {"m", "n"}} {
		var kvs []KV
		for _, key := range keys {
			kvs = append(kvs, KV{Key: []byte(key), Value: []byte("v")})
		}
		if err := e.Ingest(1, tbl, kvs); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	check := func(e *Engine, what string) {
		t.Helper()
		e.mu.RLock()
		l0 := e.cur.Levels[0]
		e.mu.RUnlock()
		if len(l0) != 1 {
			t.Fatalf("%s: %d L0 files; want 1", what, len(l0))
		}
		f := l0[0]
		pre := func(tbl TableID, key string) []byte { return appendPrefix(nil, tbl, []byte(key)) }
		for _, c := range []struct {
			tbl    TableID
			lo, hi string
			want   bool
		}{
			{3, "a", "b", false}, // below table 3's keys, above table 1's
			{3, "a", "m\x00", true},
			{3, "n", "z", true},
			{3, "o", "z", false},
			{1, "r", "z", false}, // above table 1's keys, below table 3's
			{1, "b", "r", true},
			{2, "a", "z", false},
		} {
			if got := overlaps(f, c.tbl, pre(c.tbl, c.lo), pre(c.tbl, c.hi)); got != c.want {
				t.Errorf("%s: overlaps(table %d, [%q, %q)) = %v; want %v (bounds %q)", what, c.tbl, c.lo, c.hi, got, c.want, f.Bounds)
			}
		}
		if sstMayContain(f, pre(3, "b"), 3) || !sstMayContain(f, pre(3, "m"), 3) {
			t.Errorf("%s: sstMayContain ignores the per-table bounds", what)
		}
		if v, ok, err := e.Get(ctx, 3, []byte("n"), 1, ReadOptions{}); err != nil || !ok || string(v) != "v" {
			t.Errorf("%s: get 3/n: %q %v %v", what, v, ok, err)
		}
	}
	check(e, "after commit")
	e.Close()
	e2 := openEngine(t, store, meta, nil)
	check(e2, "after reopen")

	// Format 1 (no bounds) decodes and falls back to the overall range.
	e2.mu.RLock()
	f := e2.cur.Levels[0][0]
	e2.mu.RUnlock()
	v1 := &encoder{}
	v1.uvarint(deltaFormatV1)
	for _, x := range []uint64{7, 1, 0, 0} { // id, committed, safe, no jobs
		v1.uvarint(x)
	}
	v1.tables(nil)
	v1.tables(nil)
	v1.uvarint(0) // removed
	v1.uvarint(1) // added
	v1.uvarint(0) // level
	for _, x := range []uint64{f.ID, f.Size, f.NumEntries, f.MinEpoch, f.MaxEpoch} {
		v1.uvarint(x)
	}
	v1.bytes(f.Smallest)
	v1.bytes(f.Largest)
	v1.tables(f.Tables)
	d, err := decodeDelta(v1.b)
	if err != nil {
		t.Fatal(err)
	}
	old := d.Added[0].SST
	if old.Bounds != nil {
		t.Fatalf("format 1 decoded bounds %q", old.Bounds)
	}
	if !overlaps(old, 3, appendPrefix(nil, 3, []byte("a")), appendPrefix(nil, 3, []byte("b"))) {
		t.Fatal("format 1 SST: overlaps must fall back to the overall range")
	}
	// And format 2 round-trips.
	d2, err := decodeDelta(encodeDelta(&VersionDelta{ID: 8, Added: []LevelSST{{Level: 0, SST: f}}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := d2.Added[0].SST.Bounds; len(got) != 2 || string(got[1].Smallest) != string(appendPrefix(nil, 3, []byte("m"))) ||
		string(got[1].Largest) != string(appendPrefix(nil, 3, []byte("n"))) {
		t.Fatalf("format 2 round trip: bounds %q", got)
	}
}

// TestCompactionPicksByTableRanges: an L0 file from a one-row commit
// holds keys of tables 1 and 3; its L0 -> L1 compaction must rewrite only
// the L1 files those keys fall in, not every file of table 2 in between
// (before, a one-row commit to a view over a big table made each L0
// compaction rewrite most of L1). The files left in place stay disjoint
// from the outputs, and every key reads back.
func TestCompactionPicksByTableRanges(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) { o.TargetFileSize = 4 << 10 })
	if err := e.RegisterTables(ctx, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("x"), 100)
	for _, tbl := range []TableID{1, 2, 3} {
		var kvs []KV
		for i := range 2000 {
			kvs = append(kvs, KV{Key: k(i), Value: val})
		}
		if err := e.Ingest(1, tbl, kvs); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if ran, err := e.Compact(ctx, true); err != nil || !ran {
		t.Fatalf("first compaction: ran=%v err=%v", ran, err)
	}
	l1 := func() map[uint64]bool {
		e.mu.RLock()
		defer e.mu.RUnlock()
		ids := map[uint64]bool{}
		for _, f := range e.cur.Levels[1] {
			ids[f.ID] = true
		}
		return ids
	}
	before := l1()
	if len(before) < 50 {
		t.Fatalf("setup: %d L1 files; want many small ones", len(before))
	}
	// One commit touching table 1 (key 10) and table 3 (key 1990).
	if err := e.Ingest(2, 1, []KV{{Key: k(10), Value: []byte("new1")}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Ingest(2, 3, []KV{{Key: k(1990), Value: []byte("new3")}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if ran, err := e.Compact(ctx, true); err != nil || !ran {
		t.Fatalf("second compaction: ran=%v err=%v", ran, err)
	}
	after := l1()
	rewritten := 0
	for id := range before {
		if !after[id] {
			rewritten++
		}
	}
	if rewritten > 4 {
		t.Errorf("a two-key L0 file rewrote %d of %d L1 files; want at most 4 (the files its keys fall in)", rewritten, len(before))
	}
	for _, tbl := range []TableID{1, 2, 3} {
		for i := range 2000 {
			want := string(val)
			if tbl == 1 && i == 10 {
				want = "new1"
			} else if tbl == 3 && i == 1990 {
				want = "new3"
			}
			if v, ok, err := e.Get(ctx, tbl, k(i), 2, ReadOptions{}); err != nil || !ok || string(v) != want {
				t.Fatalf("table %d key %d: %q %v %v", tbl, i, v, ok, err)
			}
		}
	}
	checkI1(t, store, meta)
}

// TestIntraL0Compaction: while the L1 files an L0->L1 compaction would
// rewrite outweigh L0 many times, L0 is merged within L0 and L1 is left
// alone. A commit landing while the merge runs stays in front of the
// merged file, so its newer versions win (reads see the newest committed
// value, I3), and every object stays owned (I1).
func TestIntraL0Compaction(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	paused, resume := make(chan struct{}), make(chan struct{})
	var pauseNext atomic.Bool
	hooks := &Hooks{Compaction: func(p HookPoint, j *CompactionJob) error {
		if p == HookAfterOutputsBeforeCommit && j.Level == 0 && pauseNext.CompareAndSwap(true, false) {
			close(paused)
			<-resume
		}
		return nil
	}}
	e := openEngine(t, store, meta, func(o *Options) {
		o.TargetFileSize = 32 << 10
		o.L0CompactionTrigger = 2
		o.Hooks = hooks
	})
	if err := e.RegisterTables(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	// Incompressible values, so L1 file sizes are what TargetFileSize says.
	rng := rand.New(rand.NewPCG(1, 2))
	vals := map[[2]int]string{}
	for _, tbl := range []TableID{1, 2} {
		var kvs []KV
		for i := range 2000 {
			v := make([]byte, 100)
			for j := range v {
				v[j] = byte('a' + rng.IntN(26))
			}
			vals[[2]int{int(tbl), i}] = string(v)
			kvs = append(kvs, KV{Key: k(i), Value: v})
		}
		if err := e.Ingest(1, tbl, kvs); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if ran, err := e.Compact(ctx, true); err != nil || !ran {
		t.Fatalf("setup compaction: ran=%v err=%v", ran, err)
	}
	levels := func() (l0 []uint64, l1 map[uint64]bool) {
		e.mu.RLock()
		defer e.mu.RUnlock()
		l1 = map[uint64]bool{}
		for _, f := range e.cur.Levels[0] {
			l0 = append(l0, f.ID)
		}
		for _, f := range e.cur.Levels[1] {
			l1[f.ID] = true
		}
		return l0, l1
	}
	want := map[[2]int]string{}
	put := func(epoch uint64, tbl TableID, i int, v string) {
		t.Helper()
		if err := e.Ingest(epoch, tbl, []KV{{Key: k(i), Value: []byte(v)}}); err != nil {
			t.Fatal(err)
		}
		want[[2]int{int(tbl), i}] = v
	}
	commit := func(epoch uint64) {
		t.Helper()
		if err := e.Commit(ctx, epoch); err != nil {
			t.Fatal(err)
		}
	}
	check := func(epoch uint64) {
		t.Helper()
		for _, tbl := range []TableID{1, 2} {
			for i := range 2000 {
				w, ok := want[[2]int{int(tbl), i}]
				if !ok {
					w = vals[[2]int{int(tbl), i}]
				}
				if v, ok, err := e.Get(ctx, tbl, k(i), epoch, ReadOptions{}); err != nil || !ok || string(v) != w {
					t.Fatalf("epoch %d table %d key %d: %q %v %v, want %q", epoch, tbl, i, v, ok, err, w)
				}
			}
		}
	}
	_, l1Before := levels()
	put(2, 1, 10, "e2")
	commit(2)
	put(3, 2, 1500, "e3")
	commit(3)
	if ran, err := e.Compact(ctx, false); err != nil || !ran {
		t.Fatalf("first merge: ran=%v err=%v", ran, err)
	}
	l0, l1 := levels()
	if len(l0) != 1 || len(l1) != len(l1Before) {
		t.Fatalf("after the first merge: L0 %v, %d L1 files (was %d); want one L0 file and L1 untouched", l0, len(l1), len(l1Before))
	}
	for id := range l1Before {
		if !l1[id] {
			t.Fatalf("L1 file %d was rewritten by an intra-L0 merge", id)
		}
	}
	merged1 := l0[0]
	check(3)

	// A second merge, paused before its commit while epoch 5 commits a
	// newer version of a key the merge holds.
	put(4, 1, 10, "e4")
	commit(4)
	put(5, 2, 20, "e5")
	commit(5)
	pauseNext.Store(true)
	j, err := e.StartCompaction(ctx, false)
	if err != nil || j == nil {
		t.Fatalf("second merge: %v %v", j, err)
	}
	<-paused
	put(6, 1, 10, "e6")
	commit(6)
	l0, _ = levels()
	newest := l0[0]
	close(resume)
	<-j.Done()
	if ok, err := j.Result(); !ok || err != nil {
		t.Fatalf("second merge: committed=%v err=%v", ok, err)
	}
	l0, _ = levels()
	if len(l0) != 2 || l0[0] != newest || l0[1] == merged1 {
		t.Fatalf("L0 after the second merge: %v; want [%d (epoch 6), a new merged file]", l0, newest)
	}
	check(6)

	// Once L0 is large relative to the L1 files it touches, it moves down.
	var big []KV
	for i := range 2000 {
		v := make([]byte, 100)
		for j := range v {
			v[j] = byte('a' + rng.IntN(26))
		}
		big = append(big, KV{Key: k(i), Value: v})
		want[[2]int{1, i}] = string(v)
	}
	if err := e.Ingest(7, 1, big); err != nil {
		t.Fatal(err)
	}
	commit(7)
	if ran, err := e.Compact(ctx, false); err != nil || !ran {
		t.Fatalf("third compaction: ran=%v err=%v", ran, err)
	}
	l0, _ = levels()
	if len(l0) != 0 {
		t.Fatalf("L0 after a compaction of a large L0: %v; want it moved to L1", l0)
	}
	check(7)
	checkI1(t, store, meta)
}

// TestIntraL0KeepsOlderLargeFiles: an intra-L0 merge takes the newest L0
// files and leaves an older file larger than all of them together (it
// would otherwise be rewritten every few commits); its output takes the
// inputs' place in L0 — behind a file committed while it ran, in front of
// the file it left — so L0 stays ordered newest first.
func TestIntraL0KeepsOlderLargeFiles(t *testing.T) {
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) { o.L0CompactionTrigger = 4 })
	mk := func(id, size uint64, lo, hi int) *SSTMeta {
		s := appendSuffix(appendPrefix(nil, 1, k(lo)), 5)
		g := appendSuffix(appendPrefix(nil, 1, k(hi)), 5)
		return &SSTMeta{ID: id, Size: size, NumEntries: 1, MinEpoch: 5, MaxEpoch: 5, Smallest: s, Largest: g, Tables: []TableID{1},
			Bounds: []KeyRange{{Smallest: appendPrefix(nil, 1, k(lo)), Largest: appendPrefix(nil, 1, k(hi))}}}
	}
	base := func(oldSize uint64) *Version {
		v := newEmptyVersion()
		v.ID = 10
		v.Tables[1] = struct{}{}
		v.Levels[0] = []*SSTMeta{mk(10, 1000, 5, 5), mk(9, 1000, 6, 6), mk(8, 1000, 7, 7), mk(7, oldSize, 1, 90)}
		v.Levels[1] = []*SSTMeta{mk(1, 100<<20, 0, 100)}
		return v
	}
	ids := func(p *compactionPick) []uint64 {
		var out []uint64
		for _, in := range p.inputs {
			out = append(out, in.ID)
		}
		return out
	}
	e.compactMu.Lock()
	p := e.pick(base(100_000), false)
	p2 := e.pick(base(2_000), false)
	e.compactMu.Unlock()
	if p == nil || p.outLevel != 0 || !slices.Equal(ids(p), []uint64{10, 9, 8}) {
		t.Fatalf("pick with an older 100 KB L0 file: %+v; want an intra-L0 merge of 10, 9, 8", p)
	}
	if p2 == nil || p2.outLevel != 0 || !slices.Equal(ids(p2), []uint64{10, 9, 8, 7}) {
		t.Fatalf("pick with an older 2 KB L0 file: %+v; want an intra-L0 merge of all four", p2)
	}
	// A commit lands while the merge runs, then the merge commits.
	v, err := base(100_000).apply(&VersionDelta{ID: 11, CommittedEpoch: 6, Added: []LevelSST{{Level: 0, SST: mk(12, 500, 3, 3)}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err = v.apply(&VersionDelta{ID: 12, CommittedEpoch: 6, Removed: p.inputs, Added: []LevelSST{{Level: 0, SST: mk(11, 3000, 5, 7)}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, f := range v.Levels[0] {
		got = append(got, f.ID)
	}
	if !slices.Equal(got, []uint64{12, 11, 7}) {
		t.Fatalf("L0 after the merge: %v; want [12 (committed meanwhile), 11 (merged), 7 (left)]", got)
	}
}

// TestCompactionWarmsOutputs: a compaction's outputs are opened in the
// table cache in the background once it commits, so the next read (an
// UPDATE's point read after an idle spell) does not open them itself.
func TestCompactionWarmsOutputs(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) {
		o.TargetFileSize = 8 << 10
		// Background work on (warming is part of it), but nothing for the
		// picker to do on its own.
		o.DisableAutoCompaction = false
		o.L0CompactionTrigger = 1000
		o.LevelBaseBytes = 1 << 40
	})
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var kvs []KV
	for i := range 1000 {
		kvs = append(kvs, KV{Key: k(i), Value: bytes.Repeat([]byte{byte(i)}, 50)})
	}
	if err := e.Ingest(1, 1, kvs); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if ran, err := e.Compact(ctx, true); err != nil || !ran {
		t.Fatalf("compaction: ran=%v err=%v", ran, err)
	}
	e.mu.RLock()
	outs := slices.Clone(e.cur.Levels[1])
	e.mu.RUnlock()
	if len(outs) < 2 {
		t.Fatalf("setup: %d outputs", len(outs))
	}
	warm := func() bool {
		e.tc.mu.Lock()
		defer e.tc.mu.Unlock()
		for _, f := range outs {
			if e.tc.m[f.ID] == nil { // nothing else reads the outputs here
				return false
			}
		}
		return true
	}
	// The warming goroutine is tracked by the engine: Close waits for it,
	// and until then poll for its result.
	for deadline := time.Now().Add(10 * time.Second); !warm(); {
		if time.Now().After(deadline) {
			t.Fatal("compaction outputs not opened in the table cache 10 s after the compaction")
		}
		runtime.Gosched()
	}
}
