package stream

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// BarrierManager runs the actors of one compute node: it spawns them,
// injects barriers into source actors, collects each barrier from every
// actor, and reports failures. It is the compute half of the barrier loop;
// meta drives it.
type BarrierManager struct {
	log *slog.Logger

	mu       sync.Mutex
	actors   map[ActorID]*actorEntry
	inflight map[uint64]*Collection // by barrier Curr
	failures chan *ActorFailure
	nextID   ActorID
}

type actorEntry struct {
	actor *Actor
	// barriers feeds injected barriers to a source actor; nil for actors
	// that receive barriers from upstream channels.
	barriers chan *Barrier
	cancel   context.CancelFunc
	done     chan struct{}
}

type Collection struct {
	barrier   *Barrier
	remaining map[ActorID]bool
	done      chan struct{}
	err       error
}

// NewBarrierManager returns an empty manager.
func NewBarrierManager(log *slog.Logger) *BarrierManager {
	if log == nil {
		log = slog.Default()
	}
	return &BarrierManager{
		log:      log,
		actors:   map[ActorID]*actorEntry{},
		inflight: map[uint64]*Collection{},
		failures: make(chan *ActorFailure, 64),
	}
}

// NewActorID returns a fresh actor id.
func (m *BarrierManager) NewActorID() ActorID {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	return m.nextID
}

// Failures delivers actor failures. Meta reads it and starts recovery.
func (m *BarrierManager) Failures() <-chan *ActorFailure { return m.failures }

// Spawn starts an actor. barriers is non-nil for source actors, which get
// barriers by injection. The actor takes part in every barrier injected
// after Spawn returns; a non-source actor must be connected (via an
// AddOutputs mutation on the next barrier) so that it receives that
// barrier from upstream.
func (m *BarrierManager) Spawn(a *Actor, barriers chan *Barrier) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &actorEntry{actor: a, barriers: barriers, cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.actors[a.ID] = e
	m.mu.Unlock()
	go func() {
		defer close(e.done)
		a.Run(ctx, m)
	}()
}

// Inject sends barrier b to every source actor and registers its
// collection: it completes when every actor alive now has passed b.
func (m *BarrierManager) Inject(b *Barrier) (*Collection, error) {
	m.mu.Lock()
	c := &Collection{barrier: b, remaining: map[ActorID]bool{}, done: make(chan struct{})}
	var sources []chan *Barrier
	for id, e := range m.actors {
		select {
		case <-e.done:
			continue
		default:
		}
		c.remaining[id] = true
		if e.barriers != nil {
			sources = append(sources, e.barriers)
		}
	}
	if len(c.remaining) == 0 {
		close(c.done)
	} else {
		m.inflight[b.Curr] = c
	}
	m.mu.Unlock()
	for _, ch := range sources {
		// Source barrier channels are buffered for the maximum number of
		// in-flight barriers, so this never blocks on a live actor.
		select {
		case ch <- b:
		default:
			return c, fmt.Errorf("inject %s: source barrier channel full", b)
		}
	}
	return c, nil
}

// Wait blocks until the barrier is collected by every actor, the barrier
// is aborted, or ctx ends.
func (c *Collection) Wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed when the barrier is collected or aborted (then Err is set).
func (c *Collection) Done() <-chan struct{} { return c.done }

// Err is why the barrier was aborted, after Done.
func (c *Collection) Err() error { return c.err }

// Collected implements Collector.
func (m *BarrierManager) Collected(actor ActorID, b *Barrier) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.inflight[b.Curr]
	if c == nil {
		return
	}
	delete(c.remaining, actor)
	if len(c.remaining) == 0 {
		delete(m.inflight, b.Curr)
		close(c.done)
	}
}

// Failed implements Collector: the failure is reported to meta, which
// resets the failed actor's group (ResetGroup) or everything (Reset). The
// in-flight barriers keep waiting for the other actors. A failure of an
// actor that was already reset is stale and dropped.
func (m *BarrierManager) Failed(f *ActorFailure) {
	m.mu.Lock()
	e, ok := m.actors[f.Actor]
	if ok {
		f.Group = e.actor.Group
	}
	m.mu.Unlock()
	if !ok {
		m.log.Debug("failure of an actor that was already reset", "actor", f.Actor, "job", f.Job, "err", f.Err)
		return
	}
	m.log.Error("actor failed", "actor", f.Actor, "job", f.Job, "group", f.Group, "err", f.Err, "stack", f.Stack)
	select {
	case m.failures <- f:
	default:
		// Too many failures queued for meta to handle one by one: abort
		// every in-flight barrier, which makes meta recover everything.
		m.mu.Lock()
		for curr, c := range m.inflight {
			c.err = f
			close(c.done)
			delete(m.inflight, curr)
		}
		m.mu.Unlock()
	}
}

// Has reports whether actor id is registered (not reset or forgotten).
func (m *BarrierManager) Has(id ActorID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.actors[id]
	return ok
}

// ResetGroup aborts the actors of one isolation group and returns only
// after each of their goroutines has exited (I3). The in-flight barriers
// stop waiting for them and complete with the other groups' actors.
func (m *BarrierManager) ResetGroup(ctx context.Context, group uint64) error {
	entries := m.detach(func(a *Actor) bool { return a.Group == group })
	start := time.Now()
	if err := join(ctx, entries); err != nil {
		return fmt.Errorf("reset of group %d: %w", group, err)
	}
	m.log.Info("actors of one group reset", "group", group, "actors", len(entries), "took", time.Since(start))
	return nil
}

// detach cancels the selected actors and forgets them: in-flight barriers
// stop waiting for them (and complete if they were the last).
func (m *BarrierManager) detach(sel func(*Actor) bool) []*actorEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	var entries []*actorEntry
	for id, e := range m.actors {
		if !sel(e.actor) {
			continue
		}
		e.cancel()
		entries = append(entries, e)
		delete(m.actors, id)
		for _, c := range m.inflight {
			delete(c.remaining, id)
		}
	}
	for curr, c := range m.inflight {
		if len(c.remaining) == 0 {
			close(c.done)
			delete(m.inflight, curr)
		}
	}
	return entries
}

// join waits until every actor's goroutine has exited.
func join(ctx context.Context, entries []*actorEntry) error {
	for _, e := range entries {
		select {
		case <-e.done:
		case <-ctx.Done():
			return fmt.Errorf("actor %d of %s did not exit: %w", e.actor.ID, e.actor.Job, ctx.Err())
		}
	}
	return nil
}

// Reset aborts every actor and returns only after every actor goroutine has
// exited (I3: nothing may touch state that recovery is about to purge).
// In-flight barriers fail.
func (m *BarrierManager) Reset(ctx context.Context) error {
	m.mu.Lock()
	entries := make([]*actorEntry, 0, len(m.actors))
	for _, e := range m.actors {
		e.cancel()
		entries = append(entries, e)
	}
	for curr, c := range m.inflight {
		c.err = fmt.Errorf("barrier %d aborted by recovery", curr)
		close(c.done)
		delete(m.inflight, curr)
	}
	m.actors = map[ActorID]*actorEntry{}
	m.mu.Unlock()
	start := time.Now()
	if err := join(ctx, entries); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	// Drain stale failures of the actors just joined.
	for {
		select {
		case <-m.failures:
			continue
		default:
		}
		break
	}
	m.log.Info("actors reset", "actors", len(entries), "took", time.Since(start))
	return nil
}

// StopActors cancels and joins the given actors (used when a job is
// dropped outside the barrier path).
func (m *BarrierManager) StopActors(ctx context.Context, ids []ActorID) error {
	want := map[ActorID]bool{}
	for _, id := range ids {
		want[id] = true
	}
	return join(ctx, m.detach(func(a *Actor) bool { return want[a.ID] }))
}

// ActorInfo describes a running actor for system tables.
type ActorInfo struct {
	ID       ActorID
	Job      string
	Fragment int
	Root     string
	State    string
	Since    time.Time
	// RowsIn and RowsOut count the rows the actor received from
	// exchanges and emitted; InState is its time per StateClass.
	RowsIn, RowsOut int64
	InState         [numStateClasses]time.Duration
	Group           uint64
}

// Actors lists the actors and what each is doing.
func (m *BarrierManager) Actors() []ActorInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ActorInfo, 0, len(m.actors))
	for _, e := range m.actors {
		s, since := e.actor.State()
		in, outRows, inState := e.actor.Counters()
		out = append(out, ActorInfo{ID: e.actor.ID, Job: e.actor.Job, Fragment: e.actor.Fragment, Root: e.actor.Root.Identity(), State: s, Since: since,
			RowsIn: in, RowsOut: outRows, InState: inState, Group: e.actor.Group})
	}
	return out
}

// Forget removes exited actors (stopped by a barrier) from the registry.
func (m *BarrierManager) Forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, e := range m.actors {
		select {
		case <-e.done:
			delete(m.actors, id)
		default:
		}
	}
}
