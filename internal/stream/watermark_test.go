package stream

import (
	"context"
	"testing"

	"github.com/runneldb/runnel/internal/types"
)

func wmMsg(col int, v int64) Message {
	return Message{Watermark: &Watermark{Col: col, Val: types.DInt64(v)}}
}

// A merge forwards, per column, the minimum of its inputs' watermarks,
// once every input sent one, and never a value at or below the last.
func TestMergeForwardsMinimumWatermark(t *testing.T) {
	ctx := context.Background()
	a, b := make(chan Message, 16), make(chan Message, 16)
	m := NewMerge(1, []types.Type{types.Int64, types.Int64}, []<-chan Message{a, b})
	steps := []struct {
		in   chan Message
		msg  Message
		want string // forwarded watermark, "" for none
	}{
		{a, wmMsg(0, 10), ""},     // b has none yet
		{a, wmMsg(1, 7), ""},      // another column: tracked apart
		{b, wmMsg(0, 5), "0:5"},   // min(10, 5)
		{b, wmMsg(0, 20), "0:10"}, // min(10, 20)
		{b, wmMsg(0, 15), ""},     // b's went backwards: ignored
		{a, wmMsg(0, 12), "0:12"}, // min(12, 20)
		{b, wmMsg(1, 3), "1:3"},   // column 1 complete
		{a, wmMsg(0, 12), ""},     // no advance
		{a, wmMsg(0, 30), "0:20"}, // min(30, 20)
	}
	marker := &types.Chunk{}
	marker.Append(types.OpInsert, irow(0, 0))
	for i, s := range steps {
		s.in <- s.msg
		// A chunk after each step shows whether a watermark came first.
		s.in <- Message{Chunk: marker}
		got := ""
		for {
			msg, err := m.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Chunk != nil {
				break
			}
			if msg.Watermark == nil || got != "" {
				t.Fatalf("step %d: unexpected %+v", i, msg)
			}
			got = types.DInt64(int64(msg.Watermark.Col)).String() + ":" + msg.Watermark.Val.String()
		}
		if got != s.want {
			t.Fatalf("step %d: forwarded %q, want %q", i, got, s.want)
		}
	}
}

// A hash dispatcher broadcasts watermarks to every output.
func TestHashDispatcherBroadcastsWatermarks(t *testing.T) {
	ctx := context.Background()
	a, b := make(chan Message, 4), make(chan Message, 4)
	d, err := NewHashDispatcher(1, []int{0}, VnodeOwners([]ActorID{10, 11}), []Output{{Actor: 10, Ch: a}, {Actor: 11, Ch: b}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Dispatch(ctx, wmMsg(0, 42)); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan Message{a, b} {
		if m := <-ch; m.Watermark == nil || m.Watermark.Val.Int() != 42 {
			t.Fatalf("got %+v", m)
		}
	}
}
