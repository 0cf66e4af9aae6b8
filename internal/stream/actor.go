package stream

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/panics"
)

// Actor runs a chain of executors in one goroutine and sends its output to
// a dispatcher.
type Actor struct {
	ID  ActorID
	Job string // the streaming job (table or view) the actor belongs to
	// Group is the isolation group (the database) of the job: a failure
	// resets and rebuilds only the actors of its group.
	Group    uint64
	Root     Executor
	Dispatch Dispatcher
	// Fragment numbers the actor's fragment within its job as EXPLAIN
	// CREATE MATERIALIZED VIEW does (0 writes the view); 0 for tables.
	Fragment int

	state     atomic.Pointer[string] // what the actor is doing now (see actorstate.go)
	stateFrom atomic.Int64           // unix nanos when state was entered

	// Metrics (actorstate.go): rows received from exchanges and emitted,
	// and nanoseconds spent per StateClass. Written by the actor's
	// goroutine only; read at scrape time.
	rowsIn, rowsOut atomic.Int64
	stateNanos      [numStateClasses]atomic.Int64
}

// ActorFailure is an actor's error, with context for logs and recovery.
type ActorFailure struct {
	Actor ActorID
	Job   string
	Group uint64 // the actor's isolation group (set by the barrier manager)
	Err   error
	Stack string // set when the failure was a panic
}

func (f *ActorFailure) Error() string {
	return fmt.Sprintf("actor %d of %s failed: %v", f.Actor, f.Job, f.Err)
}

func (f *ActorFailure) Unwrap() error { return f.Err }

// Collector receives an actor's progress: each barrier it has passed, and
// its failure.
type Collector interface {
	Collected(actor ActorID, b *Barrier)
	Failed(f *ActorFailure)
}

// Run drives the actor until it is stopped by a barrier, its context is
// cancelled, or it fails. A panic anywhere in the chain is caught here and
// becomes an actor failure (I6): one bad job never takes the process down.
func (a *Actor) Run(ctx context.Context, c Collector) {
	callActorHook(ActorStarted, a)
	defer callActorHook(ActorExited, a) // test seam (failpoint.go); runs last
	defer func() {
		if r := recover(); r != nil {
			a.setState(&StateFailed)
			c.Failed(&ActorFailure{Actor: a.ID, Job: a.Job, Err: fmt.Errorf("panic: %v", r), Stack: string(debug.Stack())})
		}
	}()
	ctx = withActor(ctx, a)
	for {
		a.setState(&StateProcessing)
		msg, err := a.Root.Next(ctx)
		if err == nil && failpointsArmed() {
			err = injectedFailure(a, msg) // test seam (failpoint.go)
		}
		if err != nil {
			if errors.Is(err, ErrStopped) {
				a.setState(&StateStopped)
				return
			}
			if ctx.Err() != nil {
				// Aborted by recovery or shutdown: not a failure of the job.
				a.setState(&StateAborted)
				return
			}
			a.setState(&StateFailed)
			f := &ActorFailure{Actor: a.ID, Job: a.Job, Err: err}
			if pe := (*panics.Error)(nil); errors.As(err, &pe) {
				f.Stack = string(pe.Stack) // a panic on a goroutine of the actor's (I6)
			}
			c.Failed(f)
			return
		}
		if obs.Enabled && msg.Chunk != nil {
			a.rowsOut.Add(int64(msg.Chunk.Len()))
		}
		if err := a.Dispatch.Dispatch(ctx, msg); err != nil {
			if ctx.Err() != nil {
				a.setState(&StateAborted)
				return
			}
			a.setState(&StateFailed)
			c.Failed(&ActorFailure{Actor: a.ID, Job: a.Job, Err: err})
			return
		}
		if b := msg.Barrier; b != nil {
			c.Collected(a.ID, b)
			if b.StopsActor(a.ID) {
				a.setState(&StateStopped)
				return
			}
		}
	}
}

// Dispatcher sends an actor's output downstream.
type Dispatcher interface {
	Dispatch(ctx context.Context, msg Message) error
}

// BroadcastDispatcher sends every message to every output. Outputs can be
// added by a barrier mutation (AddOutputs) addressed to Upstream.
type BroadcastDispatcher struct {
	Upstream ActorID
	mu       sync.Mutex
	outputs  []Output
}

// Dispatch sends msg to each output, blocking on full channels
// (backpressure) but not past ctx.
func (d *BroadcastDispatcher) Dispatch(ctx context.Context, msg Message) error {
	mut := (*Mutation)(nil)
	if msg.Barrier != nil {
		mut = msg.Barrier.Mutation
	}
	d.mu.Lock()
	if mut != nil {
		// A new downstream receives this barrier: it starts at its Curr epoch.
		d.outputs = append(d.outputs, mut.AddOutputs[d.Upstream]...)
	}
	outs := append([]Output(nil), d.outputs...)
	d.mu.Unlock()
	for _, o := range outs {
		if err := send(ctx, o.Ch, msg); err != nil {
			return err
		}
	}
	if mut != nil && len(mut.Stop) > 0 {
		// A stopped downstream saw this barrier and reads no more.
		d.mu.Lock()
		kept := d.outputs[:0]
		for _, o := range d.outputs {
			if !mut.Stop[o.Actor] {
				kept = append(kept, o)
			}
		}
		d.outputs = kept
		d.mu.Unlock()
	}
	return nil
}

// AddOutput connects a downstream channel directly. It is for rebuilding
// the graph during recovery, when no barrier is in flight; a running graph
// adds outputs with an AddOutputs mutation.
func (d *BroadcastDispatcher) AddOutput(o Output) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.outputs = append(d.outputs, o)
}

// RemoveOutput drops the output to actor id (used when a downstream job is
// dropped outside a barrier, during recovery).
func (d *BroadcastDispatcher) RemoveOutput(id ActorID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.outputs[:0]
	for _, o := range d.outputs {
		if o.Actor != id {
			kept = append(kept, o)
		}
	}
	d.outputs = kept
}
