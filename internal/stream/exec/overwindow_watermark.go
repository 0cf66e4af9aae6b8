package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/types"
)

// An OverWindow's watermark state (wm, a keyWatermarks over its PARTITION
// BY columns): a watermark on a partition column closes every partition
// below it, whose rows then never change again. At the next barrier,
// after the buffered changes have been flushed (their outputs emitted),
// the closed partitions' rows are deleted from the state table and the
// partitions leave the cache; the watermark is then forwarded on the
// partition column of the output (the output row starts with the input
// row). A watermark on an ORDER BY or argument column cleans nothing and
// is not forwarded: a later row of the same partition can still change
// the outputs of rows below it.

// SetVnodeOwner restricts watermark cleanup to the partitions of the
// vnodes owns reports (the actor's share of the state table).
func (w *OverWindow) SetVnodeOwner(owns func(v uint16) bool) { w.wm.owns = owns }

// CleanedPartitions reports how many partitions watermark cleanup has
// deleted.
func (w *OverWindow) CleanedPartitions() int64 { return w.wm.cleaned }

// partitionCol maps a position of the PARTITION BY columns to its column
// in the input, the stored row and the output alike.
func (w *OverWindow) partitionCol(p int) int { return w.partition[p] }

// cleanup deletes the partitions closed by the pending watermarks.
func (w *OverWindow) cleanup(ctx context.Context) error {
	var runs keyRuns
	err := w.wm.cleanup(ctx, w.table, w.partitionCol, func(row types.Row) (bool, error) {
		// A partition's rows come together (the table is keyed by
		// partition first): count and uncache it at its first.
		w.buf = appendKeyCols(w.buf[:0], row, w.partition, w.inTypes)
		if !runs.isNew(w.buf) {
			return false, nil
		}
		w.cacheDrop(string(w.buf))
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: watermark cleanup: %w", w.Identity(), err)
	}
	return nil
}
