package stream

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Test seams of the actor runtime: failpoints that make actors fail, and a
// hook told when an actor goroutine starts and exits. Both are process-wide
// (tests of a whole server cannot reach its BarrierManager) and cost one
// atomic load per message when nothing is armed.

// Failpoint makes actors fail as if their executor had returned an error.
// Armed with ArmFailpoint; consulted by Actor.Run after every message its
// executor chain produces.
type Failpoint struct {
	// Job selects the actors by Actor.Job ("table t", "materialized view
	// v"); empty matches every actor.
	Job string
	// ChunksOnly fires only on data chunks; otherwise any message
	// (barriers included) fires it, so an idle actor fails too.
	ChunksOnly bool
	// Times is how many messages fail before the failpoint disarms itself;
	// a negative value never disarms (an actor that fails at every start).
	Times int
}

// ErrInjected is the error of an injected actor failure.
var ErrInjected = errors.New("injected actor failure (failpoint)")

type armedFailpoint struct {
	fp    Failpoint
	left  int
	fired int
}

var failpoints struct {
	armed atomic.Int32 // number of armed failpoints: the fast-path check
	mu    sync.Mutex
	list  []*armedFailpoint
}

// ArmFailpoint arms fp and returns a function that disarms it (idempotent)
// and reports how many messages it failed.
func ArmFailpoint(fp Failpoint) (disarm func() int) {
	a := &armedFailpoint{fp: fp, left: fp.Times}
	failpoints.mu.Lock()
	failpoints.list = append(failpoints.list, a)
	failpoints.armed.Store(int32(len(failpoints.list)))
	failpoints.mu.Unlock()
	return func() int {
		failpoints.mu.Lock()
		defer failpoints.mu.Unlock()
		removeFailpointLocked(a)
		return a.fired
	}
}

func removeFailpointLocked(a *armedFailpoint) {
	for i, x := range failpoints.list {
		if x == a {
			failpoints.list = append(failpoints.list[:i], failpoints.list[i+1:]...)
			break
		}
	}
	failpoints.armed.Store(int32(len(failpoints.list)))
}

// failpointsArmed is the fast path consulted by Actor.Run.
func failpointsArmed() bool { return failpoints.armed.Load() != 0 }

// injectedFailure returns the error of a failpoint matching actor a and
// message msg, or nil.
func injectedFailure(a *Actor, msg Message) error {
	failpoints.mu.Lock()
	defer failpoints.mu.Unlock()
	for _, f := range failpoints.list {
		if f.fp.Job != "" && f.fp.Job != a.Job {
			continue
		}
		if f.fp.ChunksOnly && msg.Chunk == nil {
			continue
		}
		f.fired++
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				removeFailpointLocked(f)
			}
		}
		return fmt.Errorf("%w (job %q, actor %d)", ErrInjected, a.Job, a.ID)
	}
	return nil
}

// ActorEvent is what an actor hook is told.
type ActorEvent string

const (
	// ActorStarted: the actor goroutine entered Run.
	ActorStarted ActorEvent = "start"
	// ActorExited: Run is returning; the actor runs no more executor code
	// (the goroutine only signals its join after this).
	ActorExited ActorEvent = "exit"
)

var actorHook atomic.Pointer[func(ev ActorEvent, id ActorID, job string)]

// SetActorHook installs fn, called on the actor goroutine when an actor
// starts and when it exits (after a panic too). It returns a function that
// removes it. Tests use it to assert the order of actor exits against state
// purges (I3).
func SetActorHook(fn func(ev ActorEvent, id ActorID, job string)) (remove func()) {
	actorHook.Store(&fn)
	return func() { actorHook.CompareAndSwap(&fn, nil) }
}

func callActorHook(ev ActorEvent, a *Actor) {
	if h := actorHook.Load(); h != nil {
		(*h)(ev, a.ID, a.Job)
	}
}
