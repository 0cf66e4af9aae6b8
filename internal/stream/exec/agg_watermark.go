package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// A HashAgg's watermark state (wm, a keyWatermarks over the group key):
// a watermark on a group-key column closes every group below it. At the
// next barrier, after the dirty groups have been flushed (their changes
// emitted), the closed groups' rows are deleted from the result table and
// their kept inputs or distinct values from the call tables, and they
// leave the group cache; the watermark is then forwarded on the output's
// group-key column.

// SetVnodeOwner restricts watermark cleanup to the groups of the vnodes
// owns reports (the actor's share of the result table). Without it every
// group of the table is the executor's (one actor, or tests).
func (h *HashAgg) SetVnodeOwner(owns func(v uint16) bool) { h.wm.owns = owns }

// CleanedGroups reports how many groups watermark cleanup has deleted.
func (h *HashAgg) CleanedGroups() int64 { return h.wm.cleaned }

func (h *HashAgg) observeWatermark(m *stream.Watermark) {
	if !h.simple {
		h.wm.observe(h.groupKey, m)
	}
}

// cleanup deletes the groups closed by the pending watermarks.
func (h *HashAgg) cleanup(ctx context.Context) error {
	k := len(h.groupKey)
	err := h.wm.cleanup(ctx, h.result, identityCol, func(row types.Row) (bool, error) {
		key := row[:k:k]
		for _, c := range h.calls {
			if c.table == nil {
				continue
			}
			cit, err := c.table.Iter(ctx, key)
			if err != nil {
				return false, err
			}
			var rows []types.Row
			for cit.Next() {
				rows = append(rows, cit.Row())
			}
			err = cit.Err()
			cit.Close()
			if err != nil {
				return false, err
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
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: watermark cleanup: %w", h.Identity(), err)
	}
	return nil
}
