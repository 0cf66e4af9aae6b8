package storage

import (
	"context"
	"encoding/binary"
	"fmt"
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
	var (
		mu  sync.Mutex
		now = time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
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
