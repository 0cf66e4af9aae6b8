package exec

import (
	"context"
	"sync/atomic"
)

// backfillHook is called by every Backfill after it emits a batch of
// snapshot rows; tests use it to hold a backfill part-way (SHOW JOBS
// progress, actor states) without sleeping.
var backfillHook atomic.Pointer[func(ctx context.Context, executor string, rows int64)]

// SetBackfillHook installs fn, called with the actor's context, the
// backfill's identity and the snapshot rows emitted so far after each
// batch. A hook that blocks must give up when ctx ends (I5). It returns a
// function that removes it. Unset, it costs one atomic load per batch.
func SetBackfillHook(fn func(ctx context.Context, executor string, rows int64)) (remove func()) {
	backfillHook.Store(&fn)
	return func() { backfillHook.CompareAndSwap(&fn, nil) }
}

func (b *Backfill) batchHook(ctx context.Context) {
	if h := backfillHook.Load(); h != nil {
		(*h)(ctx, b.Identity(), b.Rows.Load())
	}
}
