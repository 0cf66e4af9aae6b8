package stream

import (
	"context"
	"time"

	"github.com/runneldb/runnel/internal/obs"
)

// What an actor is doing, for rw_catalog.rw_actors. Executors report the
// state at the points where it changes (ReportState); the actor itself
// reports processing each time it asks its chain for the next message, so
// an actor that never has to wait stays "processing" and one that waits
// shows since when. States are package variables so that reporting one
// stores a pointer and allocates nothing.
var (
	StateStarting = "starting"
	// StateProcessing: computing (a chunk, or a barrier's state writes
	// when StateBarrier was not reported).
	StateProcessing = "processing"
	// StateWaitingInput: blocked reading its inputs; nothing to do.
	StateWaitingInput = "waiting for input"
	// StateAligning: some inputs delivered a barrier, the others have not
	// yet; the aligned inputs are not read meanwhile.
	StateAligning = "waiting for barrier alignment"
	// StateBarrier: the barrier is aligned; the chain writes its state for
	// the epoch and forwards the barrier.
	StateBarrier = "writing state at barrier"
	// StateBlockedOutput: a downstream channel is full (back-pressure).
	StateBlockedOutput = "blocked on output"
	// StateApplyingDML: a table actor applies a statement's writes.
	StateApplyingDML = "applying DML"
	// StateBackfilling: reading the upstream's snapshot.
	StateBackfilling = "backfilling"
	// StateRecomputing: recomputing a partition (window functions).
	StateRecomputing = "recomputing"
	StateStopped     = "stopped"
	StateAborted     = "aborted"
	StateFailed      = "failed"
)

// actorKey keys the running actor in its context.
type actorKey struct{}

// withActor returns ctx carrying a, so that executors can report its state.
func withActor(ctx context.Context, a *Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// JobOf returns the streaming job and isolation group of the actor
// running ctx ("" outside an actor): executors use it to charge the
// errors they tolerate to the right view.
func JobOf(ctx context.Context) (job string, group uint64) {
	if a, _ := ctx.Value(actorKey{}).(*Actor); a != nil {
		return a.Job, a.Group
	}
	return "", 0
}

// WithoutStateReports returns ctx in which ReportState does nothing: for
// helper goroutines that read an actor's inputs ahead of it, whose waits
// are not the actor's.
func WithoutStateReports(ctx context.Context) context.Context {
	return context.WithValue(ctx, actorKey{}, (*Actor)(nil))
}

// ReportState records that the actor running ctx is now in state s (one
// of the State variables, by pointer). It costs a pointer comparison when
// the state does not change and does nothing outside an actor.
func ReportState(ctx context.Context, s *string) {
	if a, _ := ctx.Value(actorKey{}).(*Actor); a != nil {
		a.setState(s)
	}
}

func (a *Actor) setState(s *string) {
	old := a.state.Load()
	if old == s {
		return
	}
	now := time.Now().UnixNano()
	if obs.Enabled && old != nil {
		// The time spent in the state it leaves, for the per-fragment
		// metrics: one atomic add on a change of state, which already
		// reads the clock.
		a.stateNanos[classOf(old)].Add(now - a.stateFrom.Load())
	}
	a.stateFrom.Store(now)
	a.state.Store(s)
}

// StateClass groups actor states for metrics: where an actor's time goes.
type StateClass int

const (
	// ClassBusy: computing, writing state, applying DML, backfilling.
	ClassBusy StateClass = iota
	// ClassIdle: waiting for input.
	ClassIdle
	// ClassAligning: waiting for the other inputs' barrier.
	ClassAligning
	// ClassBlocked: a downstream channel is full (back-pressure).
	ClassBlocked
	numStateClasses
)

// StateClassNames name the classes, by StateClass, as metric labels.
var StateClassNames = [numStateClasses]string{"busy", "idle", "aligning", "blocked"}

func classOf(s *string) StateClass {
	switch s {
	case &StateWaitingInput:
		return ClassIdle
	case &StateAligning:
		return ClassAligning
	case &StateBlockedOutput:
		return ClassBlocked
	}
	return ClassBusy
}

// reportInput records that the actor running ctx received a chunk of n
// rows from an exchange and is processing it.
func reportInput(ctx context.Context, n int) {
	if a, _ := ctx.Value(actorKey{}).(*Actor); a != nil {
		if obs.Enabled {
			a.rowsIn.Add(int64(n))
		}
		a.setState(&StateProcessing)
	}
}

// Counters returns the rows the actor received from exchanges and emitted
// since it started, and the time it spent in each StateClass (including
// the current state so far).
func (a *Actor) Counters() (rowsIn, rowsOut int64, inState [numStateClasses]time.Duration) {
	for i := range inState {
		inState[i] = time.Duration(a.stateNanos[i].Load())
	}
	if s := a.state.Load(); s != nil {
		if d := time.Now().UnixNano() - a.stateFrom.Load(); d > 0 {
			inState[classOf(s)] += time.Duration(d)
		}
	}
	return a.rowsIn.Load(), a.rowsOut.Load(), inState
}

// State returns what the actor is doing and since when.
func (a *Actor) State() (string, time.Time) {
	s := a.state.Load()
	if s == nil {
		return StateStarting, time.Time{}
	}
	return *s, time.Unix(0, a.stateFrom.Load())
}

// send delivers msg to a downstream channel, blocking while it is full
// (back-pressure) but not past ctx; the actor shows as blocked on output
// only when it actually has to wait.
func send(ctx context.Context, ch chan Message, msg Message) error {
	select {
	case ch <- msg:
		return nil
	default:
	}
	ReportState(ctx, &StateBlockedOutput)
	select {
	case ch <- msg:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Receive reads one message from an upstream channel for the actor
// running ctx, showing it as waiting for input only when it actually has
// to wait. ok is false when the channel is closed.
func Receive(ctx context.Context, ch <-chan Message) (msg Message, ok bool, err error) {
	select {
	case msg, ok = <-ch:
		return msg, ok, nil
	default:
	}
	ReportState(ctx, &StateWaitingInput)
	select {
	case msg, ok = <-ch:
		ReportState(ctx, &StateProcessing)
		return msg, ok, nil
	case <-ctx.Done():
		return Message{}, false, ctx.Err()
	}
}
