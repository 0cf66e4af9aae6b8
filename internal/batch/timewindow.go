package batch

import (
	"context"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// hopWindowExec runs plan.HopWindow: each input row becomes one row per
// window containing its time (none when the time is NULL).
type hopWindowExec struct {
	in      executor
	node    *plan.HopWindow
	pending []types.Row
	starts  []int64
}

func (h *hopWindowExec) Next(ctx context.Context) (types.Row, error) {
	for len(h.pending) == 0 {
		row, err := h.in.Next(ctx)
		if err != nil || row == nil {
			return nil, err
		}
		if h.pending, err = hopRows(h.pending[:0], &h.starts, row, h.node); err != nil {
			return nil, err
		}
	}
	out := h.pending[0]
	h.pending = h.pending[1:]
	return out, nil
}

func (h *hopWindowExec) Close() { h.in.Close() }

// hopRows appends row's expansions to dst; starts is scratch space.
func hopRows(dst []types.Row, starts *[]int64, row types.Row, n *plan.HopWindow) ([]types.Row, error) {
	t := row[n.TimeCol]
	if t.IsNull() {
		return dst, nil
	}
	var ok bool
	*starts, ok = expr.WindowStarts((*starts)[:0], t.Int(), n.Slide, n.Offset, n.Windows())
	if !ok {
		return dst, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range")
	}
	tz := t.Kind() == types.KindTimestamptz
	for _, s := range *starts {
		out := make(types.Row, len(row)+2)
		copy(out, row)
		if tz {
			out[len(row)], out[len(row)+1] = types.DTimestamptz(s), types.DTimestamptz(s+n.Size)
		} else {
			out[len(row)], out[len(row)+1] = types.DTimestamp(s), types.DTimestamp(s+n.Size)
		}
		dst = append(dst, out)
	}
	return dst, nil
}
