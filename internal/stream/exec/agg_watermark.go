package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// aggWatermarks is a HashAgg's watermark state. A watermark on an input
// column that is part of the group key closes every group whose key
// column is below it: no later row (insert or delete) can reach such a
// group. At the next barrier, after the dirty groups have been flushed
// (their changes emitted), the closed groups' rows are deleted from the
// result table and their kept inputs or distinct values from the call
// tables, and they leave the group cache. The view's rows are not
// touched: the aggregation emits nothing for a cleaned group, so its
// last output stays in the materialized view (RisingWave's default emit
// mode). The watermark is then forwarded on the output's group-key
// column, after the flushed chunks and before the barrier.
//
// Cleanup is by a scan of the result table's vnodes the actor owns, run
// only at barriers where a watermark advanced: the table
// holds the groups of open windows only, so the scan is bounded by the
// state the watermark keeps alive.
type aggWatermarks struct {
	// pending[p] is the latest watermark of group-key column p not yet
	// applied; applied[p] the last one cleaned up to.
	pending map[int]types.Datum
	applied map[int]types.Datum
	out     stream.WatermarkMonotone
	owns    func(v uint16) bool
	// Cleaned counts the groups deleted so far (tests).
	cleaned int64
}

// SetVnodeOwner restricts watermark cleanup to the groups of the vnodes
// owns reports (the actor's share of the result table). Without it every
// group of the table is the executor's (one actor, or tests).
func (h *HashAgg) SetVnodeOwner(owns func(v uint16) bool) { h.wm.owns = owns }

// CleanedGroups reports how many groups watermark cleanup has deleted.
func (h *HashAgg) CleanedGroups() int64 { return h.wm.cleaned }

// WatermarkGroupKeys returns the positions in groupKey of the columns in
// wmCols (input columns carrying watermarks): the group-key columns whose
// watermarks clean the aggregation's state.
func WatermarkGroupKeys(groupKey, wmCols []int) []int {
	var out []int
	for p, c := range groupKey {
		for _, w := range wmCols {
			if c == w {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func (w *aggWatermarks) observe(h *HashAgg, m *stream.Watermark) {
	if h.simple || m.Val.IsNull() {
		return
	}
	for p, c := range h.groupKey {
		if c != m.Col {
			continue
		}
		if w.pending == nil {
			w.pending = map[int]types.Datum{}
		}
		if old, ok := w.pending[p]; !ok || types.Compare(m.Val, old) > 0 {
			w.pending[p] = m.Val
		}
	}
}

// emit queues the output watermarks (on the group-key columns).
func (w *aggWatermarks) emit(q *queue) {
	for p, v := range w.pending {
		m := &stream.Watermark{Col: p, Val: v}
		if w.out.Advance(m) {
			q.push(stream.Message{Watermark: m})
		}
	}
}

// cleanup deletes the groups closed by the pending watermarks.
func (h *HashAgg) cleanup(ctx context.Context) error {
	w := &h.wm
	advanced := false
	for p, v := range w.pending {
		if old, ok := w.applied[p]; !ok || types.Compare(v, old) > 0 {
			advanced = true
		}
	}
	if !advanced {
		return nil
	}
	k := len(h.groupKey)
	var doomed []types.Row
	err := scanOwned(ctx, h.result, w.owns, func(row types.Row) {
		for p, v := range w.pending {
			if d := row[p]; !d.IsNull() && types.Compare(d, v) < 0 {
				doomed = append(doomed, row[:k:k])
				return
			}
		}
	})
	if err != nil {
		return fmt.Errorf("%s: watermark cleanup: %w", h.Identity(), err)
	}
	var tk ticker
	for _, key := range doomed {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		h.result.Delete(key)
		for _, c := range h.calls {
			if c.table == nil {
				continue
			}
			cit, err := c.table.Iter(ctx, key)
			if err != nil {
				return fmt.Errorf("%s: watermark cleanup: %w", h.Identity(), err)
			}
			var rows []types.Row
			for cit.Next() {
				rows = append(rows, cit.Row())
			}
			err = cit.Err()
			cit.Close()
			if err != nil {
				return fmt.Errorf("%s: watermark cleanup: %w", h.Identity(), err)
			}
			for _, r := range rows {
				c.table.Delete(r)
			}
		}
		h.keyBuf = h.keyBuf[:0]
		for i, d := range key {
			h.keyBuf = types.AppendKey(h.keyBuf, d, h.inTypes[h.groupKey[i]], false, false)
		}
		h.cache.remove(string(h.keyBuf))
	}
	w.cleaned += int64(len(doomed))
	if w.applied == nil {
		w.applied = map[int]types.Datum{}
	}
	for p, v := range w.pending {
		w.applied[p] = v
	}
	return nil
}
