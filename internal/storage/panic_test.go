package storage

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/panics"
)

// I6, I1: a compaction that panics is a failed job, not a dead process:
// its record stays live and owns what it wrote (nothing unowned), the
// data reads the same, later commits work, and a reopen settles the job.
func TestCompactionPanicIsAJobFailure(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	var armed atomic.Bool
	hooks := &Hooks{Compaction: func(at HookPoint, j *CompactionJob) error {
		if at == HookBetweenOutputs && armed.CompareAndSwap(true, false) {
			panic("injected compaction bug")
		}
		return nil
	}}
	e := openEngine(t, store, meta, func(o *Options) { o.TargetFileSize = 4 << 10; o.Hooks = hooks })
	model := fillForCompaction(t, e)
	armed.Store(true)
	j, err := e.StartCompaction(ctx, true)
	if err != nil || j == nil {
		t.Fatalf("start compaction: %v %v", j, err)
	}
	<-j.Done()
	if committed, err := j.Result(); committed || !errors.Is(err, errPanicked) {
		t.Fatalf("compaction that panicked: committed %v, err %v; want a failure wrapping errPanicked", committed, err)
	}
	rep, err := Check(ctx, store, meta, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("after a compaction panic: %s", rep.Summary())
	}
	verifyModel(t, e, model)
	if err := e.Ingest(10, 1, []KV{{Key: k(1), Value: []byte("after")}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, 10); err != nil {
		t.Fatalf("commit after a compaction panic: %v", err)
	}
	model[string(k(1))] = "after"
	e.Close()
	e2 := openEngine(t, store, meta, nil)
	verifyModel(t, e2, model)
	if _, err := e2.Compact(ctx, true); err != nil {
		t.Fatalf("compaction after reopen: %v", err)
	}
	if _, err := e2.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyReferenced(t, store, meta)
}

// I6: a GC pass that panics is logged; the GC loop goes on with the next.
func TestGCLoopSurvivesPanic(t *testing.T) {
	var passes atomic.Int32
	hooks := &Hooks{MetaWrite: func(op string, after bool) error {
		if op == "purge-jobs" && !after && passes.Add(1) == 1 {
			panic("injected gc bug")
		}
		return nil
	}}
	openEngine(t, objstore.NewMem(), openMeta(t), func(o *Options) { o.Hooks = hooks; o.GCInterval = 5 * time.Millisecond })
	deadline := time.Now().Add(10 * time.Second)
	for passes.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d GC passes ran; want the loop to go on after the first panicked", passes.Load())
		}
		time.Sleep(5 * time.Millisecond) // polling a counter, not ordering a race
	}
}

// I5: an iterator whose reader was cancelled stops within a few hundred
// entries even inside a long run of tombstones (one Next call), forward
// and reverse, with the context's error.
func TestIterHonoursCancellation(t *testing.T) {
	ctx := context.Background()
	e := openEngine(t, objstore.NewMem(), openMeta(t), nil)
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var kvs []KV
	for i := range 20000 {
		kvs = append(kvs, KV{Key: k(i), Value: []byte("v")})
	}
	if err := e.Ingest(1, 1, kvs); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	kvs = kvs[:0]
	for i := 1; i < 19999; i++ { // keep the first and the last key
		kvs = append(kvs, KV{Key: k(i), Delete: true})
	}
	if err := e.Ingest(2, 1, kvs); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, reverse := range []bool{false, true} {
		cctx, cancel := context.WithCancel(ctx)
		it, err := e.Iter(cctx, 1, nil, nil, 2, ReadOptions{Reverse: reverse})
		if err != nil {
			t.Fatal(err)
		}
		if !it.Next() {
			t.Fatalf("reverse=%v: first key: %v", reverse, it.Err())
		}
		cancel()
		if it.Next() || !errors.Is(it.Err(), context.Canceled) {
			t.Fatalf("reverse=%v: Next across 19,998 tombstones after cancel: key %q, err %v; want context.Canceled", reverse, it.Key(), it.Err())
		}
		it.Close()
	}
}

// I6: warming a compaction's outputs runs on its own goroutine; a panic
// there is logged and the engine reads and compacts on. Without the
// recover in warmOutputs this test binary dies.
func TestWarmOutputsSurvivesPanic(t *testing.T) {
	defer panics.Arm(warmSite, 1)()
	e := openEngine(t, objstore.NewMem(), openMeta(t), func(o *Options) { o.TargetFileSize = 4 << 10; o.DisableAutoCompaction = false })
	model := fillForCompaction(t, e)
	if _, err := e.Compact(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for panics.Remaining(warmSite) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("no compaction output was warmed")
		}
		time.Sleep(5 * time.Millisecond) // polling a counter, not ordering a race
	}
	verifyModel(t, e, model)
}

// blockingReads is a Store whose reads of objects written after it was
// armed wait for their context (a store that hangs until the caller gives
// up), so that only reads of a compaction's outputs hang.
type blockingReads struct {
	objstore.Store
	armed   atomic.Bool
	old     map[string]bool // objects when armed
	entered chan struct{}
	once    sync.Once
	release chan struct{}
}

func (b *blockingReads) arm(t *testing.T) {
	objs, err := b.Store.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	b.old = map[string]bool{}
	for _, o := range objs {
		b.old[o.Key] = true
	}
	b.armed.Store(true)
}

func (b *blockingReads) wait(ctx context.Context, key string) error {
	if !b.armed.Load() || b.old[key] {
		return nil
	}
	b.once.Do(func() { close(b.entered) })
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-b.release:
		return nil
	}
}

func (b *blockingReads) Get(ctx context.Context, key string) ([]byte, error) {
	if err := b.wait(ctx, key); err != nil {
		return nil, err
	}
	return b.Store.Get(ctx, key)
}

func (b *blockingReads) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := b.wait(ctx, key); err != nil {
		return nil, err
	}
	return b.Store.GetRange(ctx, key, off, n)
}

// Issue 13 item 8: warming a compaction's outputs reads them under a
// context that Close cancels, so Close returns while the object store
// hangs. Before, warming read with context.Background() and Close waited
// for the hung read.
func TestCloseCancelsWarming(t *testing.T) {
	store := &blockingReads{Store: objstore.NewMem(), entered: make(chan struct{}), release: make(chan struct{})}
	defer close(store.release)
	// Auto compaction off, so that the only reads of the new outputs are
	// the warming's.
	e := openEngine(t, store, openMeta(t), func(o *Options) { o.TargetFileSize = 4 << 10; o.warmAlways = true })
	fillForCompaction(t, e)
	store.arm(t)
	if _, err := e.Compact(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-store.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no compaction output was warmed")
	}
	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for a hung warming read")
	}
}
