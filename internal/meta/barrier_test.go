package meta

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// fakeStore records commits and discards.
type fakeStore struct {
	mu        sync.Mutex
	committed uint64
	commits   []uint64
	discards  int
}

func (f *fakeStore) Commit(_ context.Context, e uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed = e
	f.commits = append(f.commits, e)
	return nil
}
func (f *fakeStore) CommittedEpoch() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.committed }
func (f *fakeStore) DiscardUncommitted()    { f.mu.Lock(); f.discards++; f.mu.Unlock() }

// sourceExec forwards injected barriers; it panics when told to.
type sourceExec struct {
	barriers chan *stream.Barrier
	panicAt  chan struct{}
	id       stream.ActorID
}

func (s *sourceExec) Schema() []types.Type { return nil }
func (s *sourceExec) Identity() string     { return "TestSource" }
func (s *sourceExec) Next(ctx context.Context) (stream.Message, error) {
	select {
	case b := <-s.barriers:
		return stream.Message{Barrier: b}, nil
	case <-s.panicAt:
		panic("injected executor bug")
	case <-ctx.Done():
		return stream.Message{}, ctx.Err()
	}
}

type nopDispatch struct{}

func (nopDispatch) Dispatch(context.Context, stream.Message) error { return nil }

type rebuildFunc func(ctx context.Context, curr uint64) error

func (f rebuildFunc) Rebuild(ctx context.Context, curr uint64) error { return f(ctx, curr) }

func spawnSource(m *stream.BarrierManager) *sourceExec {
	src := &sourceExec{barriers: make(chan *stream.Barrier, 16), panicAt: make(chan struct{}), id: m.NewActorID()}
	m.Spawn(&stream.Actor{ID: src.id, Job: "test", Root: src, Dispatch: nopDispatch{}}, src.barriers)
	return src
}

// FLUSH returns only after the epoch that was current at the call is
// committed (I7), and epochs commit in increasing order.
func TestFlushWaitsForCommit(t *testing.T) {
	store := &fakeStore{}
	actors := stream.NewBarrierManager(nil)
	loop := NewBarrierLoop(nil, time.Hour, actors, store)
	spawnSource(actors)
	loop.Start()
	defer loop.Stop()

	before := loop.CurrentEpoch()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := loop.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := store.CommittedEpoch(); got < before {
		t.Fatalf("committed epoch %d after FLUSH; want >= %d", got, before)
	}
	if err := loop.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for i := 1; i < len(store.commits); i++ {
		if store.commits[i] <= store.commits[i-1] {
			t.Fatalf("commits not increasing: %v", store.commits)
		}
	}
}

// A panicking actor becomes a failure that triggers recovery: the process
// survives, buffers are discarded before the rebuild, and the rebuilt
// graph commits again.
func TestActorPanicTriggersRecovery(t *testing.T) {
	store := &fakeStore{}
	actors := stream.NewBarrierManager(nil)
	loop := NewBarrierLoop(nil, time.Hour, actors, store)
	var (
		mu    sync.Mutex
		order []string
	)
	rebuilt := make(chan struct{}, 1)
	loop.SetRebuilder(rebuildFunc(func(ctx context.Context, curr uint64) error {
		mu.Lock()
		defer mu.Unlock()
		store.mu.Lock()
		if store.discards == 0 {
			order = append(order, "rebuild-before-discard")
		}
		store.mu.Unlock()
		if n := len(actors.Actors()); n != 0 {
			order = append(order, "actors-still-registered")
		}
		spawnSource(actors)
		select {
		case rebuilt <- struct{}{}:
		default:
		}
		return nil
	}))
	src := spawnSource(actors)
	loop.Start()
	defer loop.Stop()
	close(src.panicAt)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-rebuilt:
	case <-ctx.Done():
		t.Fatal("no recovery after an actor panic")
	}
	if err := loop.Flush(ctx); err != nil {
		t.Fatalf("flush after recovery: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) > 0 {
		t.Fatalf("recovery order violated (I3): %v", order)
	}
}

// RECOVER from a session runs on the loop and returns after the rebuild.
func TestRecoverStatement(t *testing.T) {
	store := &fakeStore{}
	actors := stream.NewBarrierManager(nil)
	loop := NewBarrierLoop(nil, time.Hour, actors, store)
	rebuilt := make(chan uint64, 1)
	loop.SetRebuilder(rebuildFunc(func(ctx context.Context, curr uint64) error {
		rebuilt <- curr
		return nil
	}))
	loop.Start()
	defer loop.Stop()
	before := loop.CurrentEpoch()
	if err := loop.Recover(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case curr := <-rebuilt:
		if curr <= before {
			t.Fatalf("rebuilt at epoch %d, not after %d", curr, before)
		}
	default:
		t.Fatal("Recover returned before the rebuild")
	}
	if recs := loop.Recoveries(); len(recs) != 1 || recs[0].Reason != "test" {
		t.Fatalf("recoveries = %+v", recs)
	}
}

// panickyStore is a fakeStore whose next Commit panics when armed.
type panickyStore struct {
	fakeStore
	panicNext atomic.Bool
}

func (p *panickyStore) Commit(ctx context.Context, e uint64) error {
	if p.panicNext.CompareAndSwap(true, false) {
		panic("injected committer bug")
	}
	return p.fakeStore.Commit(ctx, e)
}

// I6: a panic in the barrier loop's goroutine (here in the committer, then
// in a rebuild that RECOVER runs) does not end the process: the round
// fails, everything is recovered, the caller waiting on the loop gets an
// error, and epochs commit again.
func TestBarrierLoopSurvivesPanics(t *testing.T) {
	store := &panickyStore{}
	actors := stream.NewBarrierManager(nil)
	loop := NewBarrierLoop(nil, time.Hour, actors, store)
	var panicRebuild atomic.Bool
	loop.SetRebuilder(rebuildFunc(func(ctx context.Context, curr uint64) error {
		if panicRebuild.CompareAndSwap(true, false) {
			panic("injected rebuild bug")
		}
		return nil
	}))
	loop.Start()
	defer loop.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	store.panicNext.Store(true)
	// The round that panics recovers; this FLUSH may wait for a barrier
	// that nothing kicks again (the interval is an hour): bound it.
	fctx, fcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_ = loop.Flush(fctx)
	fcancel()
	if err := loop.Flush(ctx); err != nil {
		t.Fatalf("FLUSH after a committer panic: %v", err)
	}
	recs := loop.Recoveries()
	if len(recs) == 0 || !strings.Contains(recs[0].Reason, "panic in the barrier loop: injected committer bug") {
		t.Fatalf("recoveries after a committer panic: %+v", recs)
	}

	panicRebuild.Store(true)
	if err := loop.Recover(ctx, "test"); err == nil || !strings.Contains(err.Error(), "injected rebuild bug") {
		t.Fatalf("RECOVER whose rebuild panics: %v; want the panic as its error", err)
	}
	if err := loop.Flush(ctx); err != nil {
		t.Fatalf("FLUSH after a rebuild panic: %v", err)
	}
}
