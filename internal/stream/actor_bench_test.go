package stream

import (
	"context"
	"testing"

	"github.com/runneldb/runnel/internal/types"
)

type benchCollector struct{ done chan struct{} }

func (c *benchCollector) Collected(ActorID, *Barrier) {}
func (c *benchCollector) Failed(*ActorFailure)        { close(c.done) }

// BenchmarkActorSmallChunks measures an actor's per-message cost: a Merge
// of one input feeding the actor's loop, dispatched to one output, with
// 8-row chunks and a barrier every 64 chunks — the path the metrics
// counters sit on (rows in at the Merge, rows out and the state time in
// the actor). docs/benchmarks.md, "metrics overhead".
func BenchmarkActorSmallChunks(b *testing.B) {
	in := make(chan Message, 256)
	out := make(chan Message, 256)
	a := &Actor{ID: 1, Job: "bench", Root: NewMerge(1, []types.Type{types.Int64}, []<-chan Message{in}),
		Dispatch: &BroadcastDispatcher{Upstream: 1, outputs: []Output{{Actor: 2, Ch: out}}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &benchCollector{done: make(chan struct{})}
	go a.Run(ctx, c)
	chunk := &types.Chunk{}
	for i := 0; i < 8; i++ {
		chunk.Append(types.OpInsert, types.Row{types.DInt64(int64(i))})
	}
	go func() {
		for range out {
		}
	}()
	b.ResetTimer()
	epoch := uint64(1)
	for i := 0; i < b.N; i++ {
		if i%64 == 63 {
			in <- Message{Barrier: &Barrier{Prev: epoch, Curr: epoch + 1}}
			epoch++
			continue
		}
		in <- Message{Chunk: chunk}
	}
	b.StopTimer()
}
