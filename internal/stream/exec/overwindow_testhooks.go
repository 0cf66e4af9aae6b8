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

// statefulInputHook is SetOverWindowInputHook's counterpart for HashAgg,
// HashJoin (the identity then ends with "side 0" or "side 1"), Distinct
// and TopN: a server test plays an inconsistent upstream (I6) through them.
var statefulInputHook atomic.Pointer[func(executor string, c *types.Chunk) *types.Chunk]

// SetStatefulInputHook installs fn, called by every HashAgg, HashJoin,
// Distinct and TopN executor with its identity and each input chunk before
// the chunk is applied; the chunk fn returns is used instead. It returns a
// function that removes fn.
func SetStatefulInputHook(fn func(executor string, c *types.Chunk) *types.Chunk) (remove func()) {
	statefulInputHook.Store(&fn)
	return func() { statefulInputHook.CompareAndSwap(&fn, nil) }
}

// stateInputHook calls the hook, if any, with e's identity and suffix;
// unset, it costs one atomic load per chunk.
func stateInputHook(e interface{ Identity() string }, suffix string, c *types.Chunk) *types.Chunk {
	if h := statefulInputHook.Load(); h != nil {
		return (*h)(e.Identity()+suffix, c)
	}
	return c
}
