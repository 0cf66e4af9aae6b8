package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

// tsKey is a key whose first 8 bytes are its time (Unix µs, big-endian),
// as the retention test's TimeOf reads it.
func tsKey(t time.Time, i int) []byte {
	return fmt.Appendf(binary.BigEndian.AppendUint64(nil, uint64(t.UnixMicro())), "-%04d", i)
}

// fakeClock is a settable clock starting at 2026-01-10.
func fakeClock() (clock func() time.Time, advance func(time.Duration)) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	return func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

func tsTimeOf(rest []byte) (int64, bool) {
	if len(rest) < 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(rest)), true
}

// TestRetention: rows past a table's TTL disappear from Get, Iter (both
// directions) and snapshot reads the moment the clock passes them, and a
// compaction drops them through the version, so after GC their objects
// are gone and Check is clean (I1). Another table without a retention
// keeps its rows. Fails without retention.go's read filter or the
// compaction's drop.
func TestRetention(t *testing.T) {
	noLeaks(t)
	ctx := context.Background()
	clock, advance := fakeClock()
	now := clock()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) { o.Clock = clock; o.InlineMaxBytes = -1; o.GCGrace = time.Millisecond })
	if err := e.RegisterTables(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	e.SetRetention(1, &Retention{TTL: 7 * 24 * time.Hour, TimeOf: tsTimeOf})
	old, recent := now.Add(-6*24*time.Hour), now.Add(-time.Hour)
	var kvs []KV
	for i := range 50 {
		kvs = append(kvs, KV{Key: tsKey(old, i), Value: []byte("old")}, KV{Key: tsKey(recent, i), Value: []byte("recent")})
	}
	for ep, tbl := range []TableID{1, 2} {
		if err := e.Ingest(uint64(ep+1), tbl, kvs); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, uint64(ep+1)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(tbl TableID, reverse bool) (n int) {
		t.Helper()
		it, err := e.Iter(ctx, tbl, nil, nil, 2, ReadOptions{Reverse: reverse})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for it.Next() {
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(1, false); n != 100 {
		t.Fatalf("before the TTL: %d rows; want 100", n)
	}
	advance(2 * 24 * time.Hour) // the old rows are now 8 days old
	if n, r := count(1, false), count(1, true); n != 50 || r != 50 {
		t.Fatalf("past the TTL: %d rows (reverse %d); want 50", n, r)
	}
	if _, ok, err := e.Get(ctx, 1, tsKey(old, 3), 2, ReadOptions{}); err != nil || ok {
		t.Fatalf("get of an expired row: found=%v err=%v", ok, err)
	}
	if v, ok, err := e.Get(ctx, 1, tsKey(recent, 3), 2, ReadOptions{}); err != nil || !ok || string(v) != "recent" {
		t.Fatalf("get of a live row: %q %v %v", v, ok, err)
	}
	snap := e.Snapshot()
	if _, ok, err := snap.Get(ctx, 1, tsKey(old, 4)); err != nil || ok {
		t.Fatalf("snapshot get of an expired row: found=%v err=%v", ok, err)
	}
	snap.Close()
	if n := count(2, false); n != 100 {
		t.Fatalf("table without a TTL: %d rows; want 100", n)
	}
	// Compaction drops the expired keys: table 1's old rows leave storage.
	for {
		ran, err := e.Compact(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			break
		}
	}
	e.SetRetention(1, nil) // storage no longer hides them: they must be gone
	if n := count(1, false); n != 50 {
		t.Fatalf("after compaction, without the read filter: %d rows; want 50 (expired rows not dropped)", n)
	}
	if n := count(2, false); n != 100 {
		t.Fatalf("after compaction, table without a TTL: %d rows; want 100", n)
	}
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, store, meta, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Violations(); len(v) > 0 {
		t.Fatalf("storage check: %v", v)
	}
}

// An SST whose rows are all past their table's TTL leaves the version
// whole, without being read or rewritten (a drop-only compaction: no
// output), once its time range — recorded per table in the version, and
// surviving a reopen — ends before the cutoff; an SST with one live row
// stays. GC then deletes the object and Check is clean (I1). Fails
// without SSTMeta.Times or the picker's expiredWhole rule (the old SST
// would stay until a compaction happened to rewrite it).
func TestExpiredSSTDroppedWhole(t *testing.T) {
	noLeaks(t)
	ctx := context.Background()
	clock, advance := fakeClock()
	now := clock()
	store, meta := objstore.NewMem(), openMeta(t)
	mod := func(o *Options) { o.Clock = clock; o.InlineMaxBytes = -1; o.GCGrace = time.Millisecond }
	e := openEngine(t, store, meta, mod)
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ret := &Retention{TTL: 7 * 24 * time.Hour, TimeOf: tsTimeOf}
	e.SetRetention(1, ret)
	old, recent := now.Add(-6*24*time.Hour), now.Add(-time.Hour)
	for ep, ts := range []time.Time{old, recent} {
		var kvs []KV
		for i := range 20 {
			kvs = append(kvs, KV{Key: tsKey(ts.Add(time.Duration(i)*time.Second), i), Value: []byte("v")})
		}
		if err := e.Ingest(uint64(ep+1), 1, kvs); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, uint64(ep+1)); err != nil {
			t.Fatal(err)
		}
	}
	l0 := func(e *Engine) []*SSTMeta {
		e.mu.RLock()
		defer e.mu.RUnlock()
		return slices.Clone(e.cur.Levels[0])
	}
	files := l0(e)
	if len(files) != 2 || len(files[1].Times) != 1 || !files[1].Times[0].Valid || files[1].Times[0].Min != old.UnixMicro() || files[1].Times[0].Max != old.Add(19*time.Second).UnixMicro() {
		t.Fatalf("L0 after two commits: %d files, the older's times %+v", len(files), files[len(files)-1].Times)
	}
	oldID, recentID := files[1].ID, files[0].ID
	// The time ranges are in the version: they survive a reopen.
	e.Close()
	e = openEngine(t, store, meta, mod)
	e.SetRetention(1, ret)
	if files := l0(e); len(files) != 2 || len(files[1].Times) != 1 || files[1].Times[0].Max != old.Add(19*time.Second).UnixMicro() {
		t.Fatalf("after reopen: times %+v", files[1].Times)
	}
	if ran, err := e.Compact(ctx, false); err != nil || ran {
		t.Fatalf("before the TTL: compaction ran=%v err=%v; want nothing to do", ran, err)
	}
	advance(2 * 24 * time.Hour) // the old SST's rows are now 8 days old
	if ran, err := e.Compact(ctx, false); err != nil || !ran {
		t.Fatalf("past the TTL: compaction ran=%v err=%v; want the expired SST dropped", ran, err)
	}
	if files := l0(e); len(files) != 1 || files[0].ID != recentID {
		t.Fatalf("after the drop: L0 = %v; want only SST %d (SST %d dropped whole, nothing rewritten)", ids(files), recentID, oldID)
	}
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, objectKey(oldID)); err == nil {
		t.Fatalf("object of the dropped SST %d still in the store after GC", oldID)
	}
	r, err := Check(ctx, store, meta, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Violations(); len(v) > 0 {
		t.Fatalf("storage check: %v", v)
	}
}

func ids(fs []*SSTMeta) []uint64 {
	out := make([]uint64, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

// ReadOptions.Time prunes by the SSTs' time ranges: a scan for a time
// window opens only the SSTs whose range for the table overlaps it (here
// one of three), through Iter and snapshots alike, and still returns every
// row of the SSTs it reads. Fails without overlapsTime in newIter.
func TestTimeRangePruning(t *testing.T) {
	noLeaks(t)
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, uploadOnly)
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.SetRetention(1, &Retention{TimeOf: tsTimeOf}) // no TTL: time ranges only
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for ep := range 3 {
		var kvs []KV
		for i := range 10 {
			kvs = append(kvs, KV{Key: tsKey(day.Add(time.Duration(ep)*24*time.Hour+time.Duration(i)*time.Minute), i), Value: []byte("v")})
		}
		if err := e.Ingest(uint64(ep+1), 1, kvs); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, uint64(ep+1)); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(r *TimeRange, snap bool) (sources, rows int) {
		t.Helper()
		var it Iterator
		var err error
		if snap {
			s := e.Snapshot()
			defer s.Close()
			it, err = s.Iter(ctx, 1, nil, nil, ReadOptions{Time: r})
		} else {
			it, err = e.Iter(ctx, 1, nil, nil, 3, ReadOptions{Time: r})
		}
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		sources = len(it.(*tableIter).m.all)
		for it.Next() {
			rows++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return sources, rows
	}
	second := day.Add(24 * time.Hour)
	for _, snap := range []bool{false, true} {
		if s, n := scan(nil, snap); s != 3 || n != 30 {
			t.Fatalf("snap=%v: unpruned scan: %d sources, %d rows; want 3, 30", snap, s, n)
		}
		r := &TimeRange{Min: second.Add(5 * time.Minute).UnixMicro(), Max: second.Add(5 * time.Minute).UnixMicro(), Valid: true}
		if s, n := scan(r, snap); s != 1 || n != 10 {
			t.Fatalf("snap=%v: scan of one instant of day 2: %d sources, %d rows; want 1 SST and all its 10 rows", snap, s, n)
		}
		r = &TimeRange{Min: second.Add(9 * time.Minute).UnixMicro(), Max: second.Add(24 * time.Hour).UnixMicro(), Valid: true}
		if s, _ := scan(r, snap); s != 2 {
			t.Fatalf("snap=%v: scan from day 2's last row on: %d sources; want 2 (bounds inclusive)", snap, s)
		}
	}
}
