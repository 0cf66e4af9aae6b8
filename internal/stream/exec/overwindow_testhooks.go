package exec

import (
	"sync/atomic"

	"github.com/runneldb/runnel/internal/types"
)

// overWindowInputHook lets a test of a whole server rewrite the chunks an
// OverWindow executor receives, to play an upstream that contradicts the
// executor's state (I6: a delete of a row the partition does not hold, an
// insert of a key it holds) through the real actor, recovery and logging
// path. Unset, it costs one atomic load per chunk.
var overWindowInputHook atomic.Pointer[func(executor string, c *types.Chunk) *types.Chunk]

// SetOverWindowInputHook installs fn, called by every OverWindow executor
// with its identity and each input chunk before the chunk is buffered;
// the chunk fn returns is used instead (fn may return c itself). It
// returns a function that removes fn.
func SetOverWindowInputHook(fn func(executor string, c *types.Chunk) *types.Chunk) (remove func()) {
	overWindowInputHook.Store(&fn)
	return func() { overWindowInputHook.CompareAndSwap(&fn, nil) }
}

func (w *OverWindow) inputHook(c *types.Chunk) *types.Chunk {
	if h := overWindowInputHook.Load(); h != nil {
		return (*h)(w.Identity(), c)
	}
	return c
}
