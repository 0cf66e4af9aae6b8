package stream

import (
	"context"
	"errors"

	"github.com/runneldb/runnel/internal/types"
)

// ErrStopped is returned by Next after the executor passed a barrier that
// stops its actor.
var ErrStopped = errors.New("executor stopped")

// Executor is one operator in an actor's chain. Executors are pull-based:
// Next returns the next message, pulling from the executor's input(s).
// An executor is used by one goroutine only.
type Executor interface {
	// Next returns the next chunk or barrier. After forwarding a barrier
	// that stops its actor, an executor returns ErrStopped.
	Next(ctx context.Context) (Message, error)
	// Schema is the type of every output row.
	Schema() []types.Type
	// Identity names the executor for logs, errors and EXPLAIN
	// ("Materialize(table 12)").
	Identity() string
}
