package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

// I5, issue 13 item 8: a spill runs under the ingesting actor's context.
// With the object store hanging on PUT, an aborted actor's IngestContext
// returns once its context ends (it used to spill under
// context.Background() and hold the write lock — and the recovery waiting
// for it — as long as the PUT hung). The data stays buffered and commits
// once the store answers.
func TestSpillHonoursCancellation(t *testing.T) {
	store := objstore.NewFault(objstore.NewMem(), 1)
	e := openEngine(t, store, openMeta(t), func(o *Options) { uploadOnly(o); o.WriteBufferBytes = 1 })
	bg := context.Background()
	if err := e.RegisterTables(bg, 1); err != nil {
		t.Fatal(err)
	}
	store.AddRule(objstore.FaultRule{Ops: []objstore.Op{objstore.OpPut}, Latency: time.Hour})
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := e.IngestContext(ctx, 10, 1, []KV{{Key: k(1), Value: []byte("v")}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("ingest with a hanging spill: %v after %s; want the context's end, promptly", err, time.Since(start))
	}
	store.ClearRules()
	if err := e.Commit(bg, 10); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := e.Get(bg, 1, k(1), 10, ReadOptions{CommittedOnly: true}); err != nil || !ok || string(v) != "v" {
		t.Fatalf("after the cancelled spill: %q %v %v; want the row committed", v, ok, err)
	}
}

// reopenedWithOneSST commits row k(1) = "v" of table 1 at epoch 10 as an
// uploaded SST and reopens the engine over a fault store: its table cache
// is empty, so the next read opens the object.
func reopenedWithOneSST(t *testing.T) (*objstore.Fault, *Engine) {
	t.Helper()
	bg := context.Background()
	store, meta := objstore.NewFault(objstore.NewMem(), 1), openMeta(t)
	e := openEngine(t, store, meta, uploadOnly)
	if err := e.RegisterTables(bg, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.Ingest(10, 1, []KV{{Key: k(1), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(bg, 10); err != nil {
		t.Fatal(err)
	}
	e.Close()
	return store, openEngine(t, store, meta, nil)
}

// I5, issue 13 item 8: a reader waiting for another reader to open the
// same SST (the first read of an object after a restart) waits only as
// long as its own context allows. The opener here is stuck in a GET that
// ignores cancellation; before, every later reader of the object waited
// with it (sync.Once), whatever its context.
func TestTableCacheWaitHonoursCancellation(t *testing.T) {
	bg := context.Background()
	store, e2 := reopenedWithOneSST(t) // an empty table cache
	entered, release := make(chan struct{}), make(chan struct{})
	first := true
	store.SetHook(func(op objstore.Op, key string) error {
		if op == objstore.OpGetRange && first {
			first = false
			close(entered)
			<-release // uninterruptible: the hook gets no context
		}
		return nil
	})
	opened := make(chan error, 1)
	go func() {
		_, _, err := e2.Get(bg, 1, k(1), 10, ReadOptions{})
		opened <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e2.Iter(ctx, 1, nil, nil, 10, ReadOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("iterator waiting on another reader's open: %v after %s; want its own context's end, promptly", err, time.Since(start))
	}
	close(release)
	if err := <-opened; err != nil {
		t.Fatalf("the first reader: %v", err)
	}
	it, err := e2.Iter(bg, 1, nil, nil, 10, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if !it.Next() || string(it.Value()) != "v" {
		t.Fatalf("after the open: %v; want the row", it.Err())
	}
}

// I5: an iterator's block reads run under its context: with GETs hanging,
// a cancelled scan ends promptly.
func TestIteratorHonoursCancellation(t *testing.T) {
	bg := context.Background()
	store, e2 := reopenedWithOneSST(t)
	store.AddRule(objstore.FaultRule{Ops: []objstore.Op{objstore.OpGetRange}, Latency: time.Hour})
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	it, err := e2.Iter(ctx, 1, nil, nil, 10, ReadOptions{})
	if err == nil {
		for it.Next() {
		}
		err = it.Err()
		it.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("scan with hanging reads: %v after %s; want the context's end, promptly", err, time.Since(start))
	}
}
