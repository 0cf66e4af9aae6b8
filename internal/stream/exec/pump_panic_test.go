package exec

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/panics"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

type failures struct{ ch chan *stream.ActorFailure }

func (f failures) Collected(stream.ActorID, *stream.Barrier) {}
func (f failures) Failed(x *stream.ActorFailure)             { f.ch <- x }

type discard struct{}

func (discard) Dispatch(context.Context, stream.Message) error { return nil }

// I6, I9: an input executor of a multi-input executor runs on a pump
// goroutine, outside the actor's recover: a panic there must become the
// actor's failure (naming the executor and input, with the stack), not
// end the process. Without the recover in pump.run this test binary dies.
func TestPumpPanicFailsTheActor(t *testing.T) {
	defer panics.Arm(pumpSite, 1)()
	a, b := newSource("a", types.Int64), newSource("b", types.Int64)
	u, err := NewUnionAll(1, []stream.Executor{a, b}, false)
	if err != nil {
		t.Fatal(err)
	}
	got := failures{ch: make(chan *stream.ActorFailure, 1)}
	actor := &stream.Actor{ID: 1, Job: "mv_union", Root: u, Dispatch: discard{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go actor.Run(ctx, got)
	select {
	case f := <-got.ch:
		var pe *panics.Error
		if !errors.As(f, &pe) || !strings.Contains(f.Error(), "UnionAll(2 inputs) input ") || !strings.Contains(f.Error(), "mv_union") {
			t.Fatalf("failure %v; want the injected panic naming the job and the executor's input", f)
		}
		if !strings.Contains(f.Stack, "pump") {
			t.Fatalf("failure stack %q; want the pump's stack", f.Stack)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the actor did not fail after its pump panicked")
	}
}
