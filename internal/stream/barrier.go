package stream

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// BarrierManager runs the actors of one compute node: it spawns them,
// injects barriers into source actors, collects each barrier from every
// actor, and reports failures. It is the compute half of the barrier loop;
// meta drives it.
type BarrierManager struct {
	log *slog.Logger

	// StopTimeout bounds how long Reset, ResetGroup and StopActors wait
	// for aborted actors to exit (DefaultStopTimeout when 0). Set before
	// use.
	StopTimeout time.Duration

	mu       sync.Mutex
	actors   map[ActorID]*actorEntry
	inflight map[uint64]*Collection // by barrier Curr
	failures chan *ActorFailure
	nextID   ActorID
	// abandoned lists the actors that did not exit within StopTimeout of
	// being aborted (newest last, at most maxAbandoned).
	abandoned []StuckActor
}

// DefaultStopTimeout bounds the wait for aborted actors. Aborting is
// prompt (I5: executors check their context every few hundred rows, so
// actors exit in milliseconds); an actor still running after this long is
// stuck in something that ignores cancellation (a read that cannot be
// interrupted, a cgo call, a bug), and waiting longer would hang recovery
// with it.
const DefaultStopTimeout = 10 * time.Second

// maxAbandoned bounds the abandoned-actor list kept for reports.
const maxAbandoned = 64

// StuckActor describes an aborted actor that did not exit in time: which
// actor of which job, and what it was doing (its state, since when, and
// its goroutines' stacks).
type StuckActor struct {
	ActorInfo
	Stack string
}

func (s StuckActor) String() string {
	return fmt.Sprintf("actor %d of %s (fragment %d, %s) %s for %s", s.ID, s.Job, s.Fragment, s.Root, s.State,
		time.Since(s.Since).Round(time.Millisecond))
}

// StuckActorsError is returned by Reset, ResetGroup and StopActors when
// aborted actors did not exit within StopTimeout. Those actors are
// abandoned: the manager no longer knows them (their barriers and failures
// are ignored), and the caller must fence what they could still write
// before it reuses their state (I3, I7; meta fences their epochs).
type StuckActorsError struct {
	Actors []StuckActor
	Waited time.Duration
}

func (e *StuckActorsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d actor(s) did not exit within %s of being aborted: ", len(e.Actors), e.Waited)
	for i, a := range e.Actors {
		if i > 0 {
			b.WriteString("; ")
		}
		if i == 4 {
			fmt.Fprintf(&b, "and %d more", len(e.Actors)-i)
			break
		}
		b.WriteString(a.String())
	}
	return b.String()
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
		// The label lets a report of a stuck actor find its goroutines'
		// stacks (and its pumps', which inherit it).
		pprof.Do(ctx, pprof.Labels(actorLabel, formatActorID(a.ID)), func(ctx context.Context) {
			a.Run(ctx, m)
		})
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
// after each of their goroutines has exited (I3), or with a
// *StuckActorsError once StopTimeout has passed. The in-flight barriers
// stop waiting for them and complete with the other groups' actors.
func (m *BarrierManager) ResetGroup(ctx context.Context, group uint64) error {
	entries := m.detach(func(a *Actor) bool { return a.Group == group })
	start := time.Now()
	if err := m.join(ctx, entries); err != nil {
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

// join waits until every actor's goroutine has exited, ctx ends, or
// StopTimeout passes; then the actors still running are reported (logged
// with their state and stacks, kept in Abandoned) and returned as a
// *StuckActorsError. They have been detached already: nothing waits for
// them any more.
func (m *BarrierManager) join(ctx context.Context, entries []*actorEntry) error {
	wait := m.StopTimeout
	if wait <= 0 {
		wait = DefaultStopTimeout
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for i, e := range entries {
		select {
		case <-e.done:
		case <-ctx.Done():
			return fmt.Errorf("actor %d of %s did not exit: %w", e.actor.ID, e.actor.Job, ctx.Err())
		case <-timer.C:
			return m.abandon(entries[i:], wait)
		}
	}
	return nil
}

// abandon reports the entries that have not exited yet.
func (m *BarrierManager) abandon(entries []*actorEntry, waited time.Duration) error {
	stuck := &StuckActorsError{Waited: waited}
	ids := map[string]bool{}
	for _, e := range entries {
		select {
		case <-e.done:
			continue
		default:
		}
		stuck.Actors = append(stuck.Actors, StuckActor{ActorInfo: e.actor.info()})
		ids[formatActorID(e.actor.ID)] = true
	}
	if len(stuck.Actors) == 0 {
		return nil // they exited just now
	}
	stacks := labelledStacks(ids)
	for i := range stuck.Actors {
		a := &stuck.Actors[i]
		a.Stack = stacks[formatActorID(a.ID)]
		m.log.Error("actor did not exit after being aborted; abandoning it", "actor", a.ID, "job", a.Job,
			"fragment", a.Fragment, "executor", a.Root, "state", a.State, "since", a.Since, "stack", a.Stack)
	}
	m.mu.Lock()
	m.abandoned = append(m.abandoned, stuck.Actors...)
	if n := len(m.abandoned); n > maxAbandoned {
		m.abandoned = append([]StuckActor(nil), m.abandoned[n-maxAbandoned:]...)
	}
	m.mu.Unlock()
	return stuck
}

// Abandoned lists the actors abandoned because they did not exit in time.
func (m *BarrierManager) Abandoned() []StuckActor {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]StuckActor(nil), m.abandoned...)
}

// actorLabel is the pprof goroutine label carrying an actor's id.
const actorLabel = "runnel_actor"

// labelledStacks returns, per actor id in ids, the stacks of the
// goroutines labelled with it (records of the goroutine profile at debug
// level 1, see actorGoroutines), at most 8 KiB per actor.
func labelledStacks(ids map[string]bool) map[string]string {
	out := map[string]string{}
	for id, recs := range actorGoroutines() {
		if !ids[id] {
			continue
		}
		for _, rec := range recs {
			const maxStack = 8 << 10
			if len(out[id])+len(rec) <= maxStack {
				out[id] += rec + "\n"
			}
		}
	}
	return out
}

// Reset aborts every actor and returns only after every actor goroutine has
// exited (I3: nothing may touch state that recovery is about to purge), or
// with a *StuckActorsError once StopTimeout has passed: the actors that
// ignore their cancellation are abandoned, and the caller fences their
// writes instead (meta: storage refuses their epochs). In-flight barriers
// fail.
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
	if err := m.join(ctx, entries); err != nil {
		m.drainFailures()
		return fmt.Errorf("reset: %w", err)
	}
	m.drainFailures()
	m.log.Info("actors reset", "actors", len(entries), "took", time.Since(start))
	return nil
}

// drainFailures drops queued failures of actors that were reset.
func (m *BarrierManager) drainFailures() {
	for {
		select {
		case <-m.failures:
			continue
		default:
		}
		break
	}
}

// StopActors cancels and joins the given actors (used when a job is
// dropped outside the barrier path).
func (m *BarrierManager) StopActors(ctx context.Context, ids []ActorID) error {
	want := map[ActorID]bool{}
	for _, id := range ids {
		want[id] = true
	}
	return m.join(ctx, m.detach(func(a *Actor) bool { return want[a.ID] }))
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
	// WaitingOn is the actor's await tree (AwaitTree), filled by
	// ActorsWithAwaitTrees only.
	WaitingOn AwaitTree
}

// info describes the actor and what it is doing now.
func (a *Actor) info() ActorInfo {
	s, since := a.State()
	in, out, inState := a.Counters()
	return ActorInfo{ID: a.ID, Job: a.Job, Fragment: a.Fragment, Root: a.Root.Identity(), State: s, Since: since,
		RowsIn: in, RowsOut: out, InState: inState, Group: a.Group}
}

// Actors lists the actors and what each is doing.
func (m *BarrierManager) Actors() []ActorInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ActorInfo, 0, len(m.actors))
	for _, e := range m.actors {
		out = append(out, e.actor.info())
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
