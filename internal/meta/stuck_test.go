package meta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// fencingStore is a fakeStore that records FenceWritesBelow and the
// order of fence and discard.
type fencingStore struct {
	fakeStore
	mu     sync.Mutex
	fence  uint64
	events []string
}

func (f *fencingStore) FenceWritesBelow(e uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fence = max(f.fence, e)
	f.events = append(f.events, "fence")
}

func (f *fencingStore) DiscardUncommitted() {
	f.mu.Lock()
	f.events = append(f.events, "discard")
	f.mu.Unlock()
	f.fakeStore.DiscardUncommitted()
}

// stuckIO is the state a stuckExec reports before it blocks.
var stuckIO = "test: reading from a device that ignores cancellation"

// stuckExec blocks in its first Next until released, ignoring its
// context: an actor stuck in I/O that cannot be interrupted.
type stuckExec struct {
	entered chan struct{}
	release chan struct{}
}

func (s *stuckExec) Schema() []types.Type { return nil }
func (s *stuckExec) Identity() string     { return "StuckExec" }
func (s *stuckExec) Next(ctx context.Context) (stream.Message, error) {
	stream.ReportState(ctx, &stuckIO)
	close(s.entered)
	<-s.release // deliberately not ctx.Done()
	return stream.Message{}, ctx.Err()
}

// Issue 13 item 8: recovery's wait for aborted actors is bounded. An actor
// stuck in non-cancellable I/O is reported (actor, job, state, stack), the
// recovery abandons it and builds a fresh generation, and the epochs the
// old generation could write are fenced before its uncommitted writes are
// discarded (I3, I7). Without the bound RECOVER hangs until the actor is
// released.
func TestRecoveryAbandonsStuckActor(t *testing.T) {
	store := &fencingStore{}
	actors := stream.NewBarrierManager(nil)
	actors.StopTimeout = 100 * time.Millisecond
	loop := NewBarrierLoop(nil, time.Hour, actors, store)
	stuck := &stuckExec{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(stuck.release)
	id := actors.NewActorID()
	actors.Spawn(&stream.Actor{ID: id, Job: "mv_stuck", Fragment: 1, Root: stuck, Dispatch: nopDispatch{}}, nil)
	var rebuilt int
	loop.SetRebuilder(rebuildFunc(func(ctx context.Context, curr uint64) error {
		rebuilt++
		spawnSource(actors)
		return nil
	}))
	loop.Start()
	defer loop.Stop()
	<-stuck.entered
	before := loop.CurrentEpoch()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := loop.Recover(ctx, "test"); err != nil {
		t.Fatalf("RECOVER with a stuck actor: %v; want it to abandon the actor and finish", err)
	}
	if rebuilt != 1 {
		t.Fatalf("rebuilt %d times; want 1 fresh generation", rebuilt)
	}
	ab := actors.Abandoned()
	if len(ab) != 1 || ab[0].ID != id || ab[0].Job != "mv_stuck" || ab[0].State != stuckIO || !strings.Contains(ab[0].Stack, "stuckExec") {
		t.Fatalf("abandoned %+v; want actor %d of mv_stuck in state %q with its stack", ab, id, stuckIO)
	}
	recs := loop.Recoveries()
	if last := recs[len(recs)-1]; !strings.Contains(last.Abandoned, "of mv_stuck (fragment 1, StuckExec) "+stuckIO) || last.Err != "" {
		t.Fatalf("recovery record %+v; want the abandoned actor named with what it was doing", last)
	}
	store.mu.Lock()
	fence, events := store.fence, strings.Join(store.events, ",")
	store.mu.Unlock()
	if after := loop.CurrentEpoch(); fence <= before || fence != after {
		t.Fatalf("fence %d; want above the old generation's epoch %d and equal to the new one's first epoch %d", fence, before, after)
	}
	if !strings.HasPrefix(events, "fence,discard") {
		t.Fatalf("events %s; want the fence before the discard", events)
	}
	if err := loop.Flush(ctx); err != nil {
		t.Fatalf("FLUSH after the recovery: %v", err)
	}
}

// divergedStore fails every commit as the storage engine does once the
// metastore's version head is not the one it committed last.
type divergedStore struct{ fakeStore }

func (d *divergedStore) Commit(context.Context, uint64) error {
	return fmt.Errorf("storage: commit-delta: %w: the metastore's version head is 29 but this server committed version 34", storage.ErrMetastoreDiverged)
}

// The chaos campaign's open defect: with the metastore behind Runnel's
// version, every commit fails the same way and recovery looped forever
// (every 10 s). Now the loop stops at the first such commit: FLUSH and
// later requests fail at once with the error naming both versions, and
// no recovery runs. Without the check the FLUSH below waits until its
// deadline while recoveries pile up.
func TestDivergedMetastoreStopsTheLoop(t *testing.T) {
	store := &divergedStore{}
	actors := stream.NewBarrierManager(nil)
	loop := NewBarrierLoop(nil, time.Hour, actors, store)
	spawnSource(actors)
	loop.SetRebuilder(rebuildFunc(func(ctx context.Context, curr uint64) error { spawnSource(actors); return nil }))
	loop.Start()
	defer loop.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := loop.Flush(ctx)
	if !errors.Is(err, storage.ErrMetastoreDiverged) || !strings.Contains(err.Error(), "head is 29") {
		t.Fatalf("FLUSH: %v; want the divergence, naming the versions", err)
	}
	if err := loop.InjectMutation(ctx, &stream.Mutation{}, nil); !errors.Is(err, storage.ErrMetastoreDiverged) {
		t.Fatalf("a DDL barrier after the loop stopped: %v; want the divergence", err)
	}
	if err := loop.Recover(ctx, "test"); !errors.Is(err, storage.ErrMetastoreDiverged) {
		t.Fatalf("RECOVER after the loop stopped: %v; want the divergence", err)
	}
	if n := len(loop.Recoveries()); n != 0 {
		t.Fatalf("%d recoveries ran; want none (recovering cannot mend a diverged metastore)", n)
	}
	if a := actors.Actors(); len(a) != 0 {
		t.Fatalf("%d actors still running; want them stopped", len(a))
	}
}

// groupFencingStore is a fencingStore that can discard one group's
// uncommitted writes (GroupCommitter), so the loop recovers groups alone.
type groupFencingStore struct {
	fencingStore
	tableDiscards atomic.Int32
}

func (g *groupFencingStore) DiscardUncommittedTables([]storage.TableID) error {
	g.tableDiscards.Add(1)
	return nil
}

// groupRebuilder rebuilds group 1 through rebuildGroup and everything
// through rebuild.
type groupRebuilder struct {
	rebuild      func(curr uint64) error
	rebuildGroup func(g, curr uint64) error
}

func (r *groupRebuilder) Rebuild(_ context.Context, curr uint64) error { return r.rebuild(curr) }
func (r *groupRebuilder) RebuildGroup(_ context.Context, g, curr uint64) error {
	return r.rebuildGroup(g, curr)
}
func (r *groupRebuilder) GroupTables(uint64) []storage.TableID { return nil }
func (r *groupRebuilder) TearDownGroup(uint64)                 {}

func spawnGroupSource(m *stream.BarrierManager, group uint64) *sourceExec {
	src := &sourceExec{barriers: make(chan *stream.Barrier, 16), panicAt: make(chan struct{}), id: m.NewActorID()}
	m.Spawn(&stream.Actor{ID: src.id, Job: fmt.Sprintf("source of group %d", group), Group: group, Root: src, Dispatch: nopDispatch{}}, src.barriers)
	return src
}

// Issue 13 item 8, the group path: one database's job fails, and the
// rebuild of that database alone fails half-way with an actor that does
// not stop when the half-built group is torn down (stuck in I/O that
// ignores cancellation). Tearing the group down cannot fence that actor's
// epochs, so the loop escalates to a full recovery: the stuck actor is
// abandoned and reported, every epoch the old generation could write is
// fenced before the discard, a fresh generation of every database is
// built, and epochs commit again. Without the escalation the stuck actor
// stays unfenced (a late write could reach state the next rebuild builds
// on) and the group retries on its backoff forever.
func TestGroupRebuildEscalatesOnStuckActor(t *testing.T) {
	store := &groupFencingStore{}
	actors := stream.NewBarrierManager(nil)
	actors.StopTimeout = 100 * time.Millisecond
	loop := NewBarrierLoop(nil, 20*time.Millisecond, actors, store)
	spawnGroupSource(actors, 2) // another database, which keeps committing
	failing := spawnGroupSource(actors, 1)
	stuck := &stuckExec{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(stuck.release)
	var groupRebuilds, fullRebuilds atomic.Int32
	loop.SetRebuilder(&groupRebuilder{
		rebuild: func(curr uint64) error {
			fullRebuilds.Add(1)
			spawnGroupSource(actors, 1)
			spawnGroupSource(actors, 2)
			return nil
		},
		rebuildGroup: func(g, curr uint64) error {
			if groupRebuilds.Add(1) > 1 {
				spawnGroupSource(actors, g)
				return nil
			}
			// The first rebuild starts an actor that gets stuck, then
			// fails before the group is complete.
			actors.Spawn(&stream.Actor{ID: actors.NewActorID(), Job: "mv_stuck", Group: g, Fragment: 3, Root: stuck, Dispatch: nopDispatch{}}, nil)
			<-stuck.entered
			return errors.New("test: the rebuild failed half-way")
		},
	})
	loop.Start()
	defer loop.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := loop.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := loop.CurrentEpoch()
	close(failing.panicAt)

	// Wait for the escalated full recovery (Database 0) to be recorded.
	var recs []RecoveryRecord
	for full := false; !full; {
		if ctx.Err() != nil {
			t.Fatalf("no full recovery after the group's rebuild left a stuck actor; recoveries: %+v", recs)
		}
		recs = loop.Recoveries()
		for _, r := range recs {
			full = full || r.Database == 0
		}
		if !full {
			if err := loop.Flush(ctx); err != nil && ctx.Err() != nil {
				t.Fatalf("no full recovery after the group's rebuild left a stuck actor (%v); recoveries: %+v", err, recs)
			}
		}
	}
	if len(recs) != 2 || recs[0].Database != 1 || !strings.Contains(recs[0].Err, "half-way") || !strings.Contains(recs[0].Err, "did not exit") {
		t.Fatalf("recoveries %+v; want first the failed rebuild of database 1 naming the stuck actor", recs)
	}
	full := recs[1]
	if !strings.Contains(full.Reason, "a database's rebuild left actors that did not stop") || !strings.Contains(full.Reason, "mv_stuck (fragment 3, StuckExec) "+stuckIO) || full.Err != "" {
		t.Fatalf("full recovery %+v; want one escalated from the group's rebuild, naming the stuck actor and what it was doing", full)
	}
	if ab := actors.Abandoned(); len(ab) != 1 || ab[0].Job != "mv_stuck" || ab[0].State != stuckIO {
		t.Fatalf("abandoned %+v; want the stuck actor of the half-built group", ab)
	}
	if n := fullRebuilds.Load(); n != 1 {
		t.Fatalf("%d full rebuilds; want 1", n)
	}
	store.mu.Lock()
	fence, events := store.fence, strings.Join(store.events, ",")
	store.mu.Unlock()
	if fence <= before || !strings.HasPrefix(events, "fence,discard") {
		t.Fatalf("fence %d (epoch before the failure %d), events %s; want the full recovery to fence above the old generation's epochs before it discards", fence, before, events)
	}
	// Both databases commit again.
	for i := 0; i < 3; i++ {
		if err := loop.Flush(ctx); err != nil {
			t.Fatalf("FLUSH %d after the escalation: %v", i, err)
		}
	}
	if a := actors.Actors(); len(a) != 2 {
		t.Fatalf("%d actors running; want the fresh generation's 2", len(a))
	}
}
