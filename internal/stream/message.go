package stream

import (
	"fmt"

	"github.com/runneldb/runnel/internal/types"
)

// ActorID identifies an actor; unique within the process lifetime.
type ActorID uint32

// Message is what flows between executors: exactly one of Chunk,
// Barrier or Watermark is set.
type Message struct {
	Chunk   *types.Chunk
	Barrier *Barrier
	// Watermark promises that no later message of this stream carries a
	// row whose column Col is below Val (see watermark.go).
	Watermark *Watermark
}

// Barrier separates epochs. Writes before it belong to Prev; after it, to
// Curr.
type Barrier struct {
	Prev uint64
	Curr uint64
	// Mutation, when set, changes the graph at this barrier.
	Mutation *Mutation
}

func (b *Barrier) String() string {
	if b.Mutation != nil {
		return fmt.Sprintf("barrier(%d→%d, %s)", b.Prev, b.Curr, b.Mutation)
	}
	return fmt.Sprintf("barrier(%d→%d)", b.Prev, b.Curr)
}

// Mutation is a graph change carried by a barrier, applied by every actor
// it concerns when the barrier passes.
type Mutation struct {
	// Stop lists actors that exit after passing this barrier.
	Stop map[ActorID]bool
	// AddOutputs connects new downstream channels to upstream actors (by
	// upstream actor id), e.g. when a materialized view starts reading a
	// table.
	AddOutputs map[ActorID][]Output
}

func (m *Mutation) String() string {
	return fmt.Sprintf("mutation(stop %d actors, add outputs to %d)", len(m.Stop), len(m.AddOutputs))
}

// StopsActor reports whether the mutation stops actor id.
func (b *Barrier) StopsActor(id ActorID) bool {
	return b.Mutation != nil && b.Mutation.Stop[id]
}

// Output is a channel to a downstream actor.
type Output struct {
	Actor ActorID
	Ch    chan Message
}
