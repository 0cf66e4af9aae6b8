package storage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

// TestFullGCAndDescribe: an object nobody owns is reported as unowned and
// deleted by FullGC only once older than the grace period; owned objects
// are never touched; DescribeVersion shows levels, SSTs and tables.
func TestFullGCAndDescribe(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	store, meta := objstore.NewMem(), openMeta(t)
	store.Now = func() time.Time { return now }
	e := openEngine(t, store, meta, func(o *Options) { o.Clock = func() time.Time { return now } })
	model := fillForCompaction(t, e)
	// A stray object, as a writer that ignored I1 would leave.
	stray := objectKey(1 << 40)
	if err := store.Put(ctx, stray, []byte("junk")); err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, store, meta, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.Objects[stray] != ClassUnowned || r.Counts[ClassReferenced] != 3 {
		t.Fatalf("check: %s, stray is %s", r.Summary(), r.Objects[stray])
	}
	if want := "objects: 3 referenced, 0 job-owned, 0 queued, 1 unowned, 0 missing"; r.Summary() != want {
		t.Fatalf("summary %q; want %q", r.Summary(), want)
	}
	// Within the grace period (and above the id watermark): kept.
	if n, err := fullGC(ctx, store, meta, time.Minute, now); err != nil || n != 0 {
		t.Fatalf("full gc within grace deleted %d (%v)", n, err)
	}
	// A stray below the watermark and older than grace goes; nothing else.
	refs := e.cur.objects()
	var free uint64
	for id := uint64(1); ; id++ {
		if _, ok := refs[id]; !ok {
			free = id
			break
		}
	}
	stray2 := objectKey(free)
	store.Put(ctx, stray2, []byte("junk"))
	store.Delete(ctx, stray)
	now = now.Add(2 * time.Minute)
	if n, err := fullGC(ctx, store, meta, time.Minute, now); err != nil || n != 1 {
		t.Fatalf("full gc after grace deleted %d; want 1 (%v)", n, err)
	}
	checkExactlyReferenced(t, store, meta)
	verifyModel(t, e, model)
	desc, err := DescribeVersion(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"committed epoch 3", "tables: [1]", "L0: 3 ssts", "sst/"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe lacks %q:\n%s", want, desc)
		}
	}
}

// TestGCDequeuesInOneWrite: a GC pass deletes every unreferenced queued
// object and then drops their queue rows in one metastore transaction —
// not one synchronous commit per object, which a concurrent FLUSH waits
// behind — and a crash after the deletes only repeats them (I1: every
// object stays owned; the queue rows outlive their objects, never the
// reverse).
func TestGCDequeuesInOneWrite(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	var mu sync.Mutex
	writes := map[string]int{}
	failDequeue := true
	hooks := &Hooks{MetaWrite: func(op string, after bool) error {
		mu.Lock()
		defer mu.Unlock()
		if !after && op == "dequeue" && failDequeue {
			failDequeue = false
			return ErrSimulatedCrash
		}
		if after {
			writes[op]++
		}
		return nil
	}}
	e := openEngine(t, store, meta, func(o *Options) { o.Hooks = hooks; o.InlineMaxBytes = -1 })
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for ep := uint64(1); ep <= 12; ep++ {
		if err := e.Ingest(ep, 1, []KV{{Key: k(int(ep)), Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	if ran, err := e.Compact(ctx, true); err != nil || !ran {
		t.Fatalf("compaction: ran=%v err=%v", ran, err)
	}
	queued := func() int {
		var n int
		if err := meta.QueryRow(ctx, `SELECT COUNT(*) FROM storage_deletion_queue`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := queued()
	if n < 10 {
		t.Fatalf("setup: %d queued objects; want the 12 compacted L0 files", n)
	}
	// The first pass deletes the objects and "crashes" before the rows go.
	if _, err := e.RunGC(ctx); !errors.Is(err, ErrSimulatedCrash) {
		t.Fatalf("first GC pass: %v; want the injected crash", err)
	}
	if got := queued(); got != n {
		t.Fatalf("%d queue rows after a crash before the dequeue; want all %d", got, n)
	}
	checkI1(t, store, meta)
	mu.Lock()
	writes = map[string]int{}
	mu.Unlock()
	deleted, err := e.RunGC(ctx)
	if err != nil || deleted != n {
		t.Fatalf("second GC pass: deleted %d, %v; want %d", deleted, err, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if writes["dequeue"] != 1 {
		t.Fatalf("%d dequeue transactions for %d objects; want 1", writes["dequeue"], n)
	}
	if queued() != 0 {
		t.Fatalf("queue not empty after GC")
	}
	checkExactlyReferenced(t, store, meta)
}
