package stream

import (
	"context"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/types"
)

// waitState waits until the actor reports want (the actor goroutine gets
// there on its own; the deadline only bounds a failing test).
func waitState(t *testing.T, a *Actor, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, since := a.State()
		if got == want {
			if since.IsZero() || since.After(time.Now()) {
				t.Fatalf("state %q since %v", got, since)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("actor state is %q; want %q", got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// The states an actor shows are the points where it actually waits: an
// empty input, an input that delivered a barrier while another has not,
// a full output channel; and processing otherwise.
func TestActorStatesFollowWhatItWaitsFor(t *testing.T) {
	m := NewBarrierManager(nil)
	t.Cleanup(func() { m.Reset(context.Background()) })
	in0, in1 := make(chan Message, 4), make(chan Message, 4)
	out := make(chan Message) // unbuffered and unread: the first send blocks
	merge := NewMerge(1, []types.Type{types.Int64}, []<-chan Message{in0, in1})
	d := &BroadcastDispatcher{Upstream: 1}
	d.AddOutput(Output{Actor: 2, Ch: out})
	a := &Actor{ID: 1, Job: "test", Root: merge, Dispatch: d}
	if s, since := a.State(); s != StateStarting || !since.IsZero() {
		t.Fatalf("before running: %q since %v", s, since)
	}
	m.Spawn(a, nil)

	waitState(t, a, StateWaitingInput)
	b := &Barrier{Prev: 1, Curr: 2}
	in0 <- Message{Barrier: b}
	waitState(t, a, StateAligning)
	in1 <- Message{Barrier: b}
	// The aligned barrier goes out and blocks on the unread output.
	waitState(t, a, StateBlockedOutput)
	if got := <-out; got.Barrier != b {
		t.Fatalf("output %+v; want the barrier", got)
	}
	waitState(t, a, StateWaitingInput)

	infos := m.Actors()
	if len(infos) != 1 || infos[0].State != StateWaitingInput || infos[0].Root != merge.Identity() {
		t.Fatalf("Actors() = %+v", infos)
	}
}

// ReportState outside an actor, or in a context marked by
// WithoutStateReports, changes nothing.
func TestReportStateOutsideActor(t *testing.T) {
	ReportState(context.Background(), &StateProcessing) // must not panic
	a := &Actor{ID: 1}
	ctx := withActor(context.Background(), a)
	ReportState(ctx, &StateBackfilling)
	if s, _ := a.State(); s != StateBackfilling {
		t.Fatalf("state %q", s)
	}
	ReportState(WithoutStateReports(ctx), &StateWaitingInput)
	if s, _ := a.State(); s != StateBackfilling {
		t.Fatalf("state after a report from a helper goroutine: %q", s)
	}
}
