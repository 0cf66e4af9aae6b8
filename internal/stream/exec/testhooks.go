package exec

import (
	"context"
	"sync/atomic"
)

// overWindowHook is the process-wide counterpart of
// OverWindowOptions.TestHook, for tests that run a whole server and cannot
// reach the options of the executors it builds. Unlike TestHook it gets
// the actor's context, so a hook that pauses the executor can (and must)
// give up when the actor is aborted (I5).
var overWindowHook atomic.Pointer[func(ctx context.Context, point, executor string, rows int)]

// SetOverWindowHook installs fn, called by every OverWindow executor at
// the points of OverWindowOptions.TestHook ("compute" before each kernel
// call with the rows of the slice, "commit" before the state table is
// committed at a barrier), with the actor's context and the executor's
// identity. It returns a function that removes it. Unset, it costs one
// atomic load per call site.
func SetOverWindowHook(fn func(ctx context.Context, point, executor string, rows int)) (remove func()) {
	overWindowHook.Store(&fn)
	return func() { overWindowHook.CompareAndSwap(&fn, nil) }
}

func (w *OverWindow) processHook(ctx context.Context, point string, rows int) {
	if h := overWindowHook.Load(); h != nil {
		(*h)(ctx, point, w.Identity(), rows)
	}
}
