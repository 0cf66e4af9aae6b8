package batch

import (
	"container/heap"
	"context"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// topNExec is ORDER BY ... LIMIT n [OFFSET m]: it keeps only the best n+m
// rows in a bounded heap (O(rows · log(n+m)) time, O(n+m) memory), then
// sorts them. Ties keep input order, as the full sort does. WITH TIES keeps
// every row (any number may tie with the last one) and cuts after the
// last row equal to the limit-th.
type topNExec struct {
	r             *runner
	in            executor
	keys          []plan.SortKey
	limit, offset expr.Expr
	withTies      bool
	out           []types.Row
	i             int
	done          bool
	mem           memHold
}

// worstFirst is a max-heap on (key, seq): the root is the row to drop
// first.
type worstFirst struct {
	keys  []plan.SortKey
	items []keyedRow
}

func (h *worstFirst) Len() int { return len(h.items) }
func (h *worstFirst) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if c := compareKeys(h.keys, a.key, b.key); c != 0 {
		return c > 0
	}
	return a.seq > b.seq
}
func (h *worstFirst) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *worstFirst) Push(x any)    { h.items = append(h.items, x.(keyedRow)) }
func (h *worstFirst) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func (t *topNExec) Next(ctx context.Context) (types.Row, error) {
	if !t.done {
		t.done = true
		if err := t.consume(ctx); err != nil {
			return nil, err
		}
	}
	if t.i >= len(t.out) {
		return nil, nil
	}
	t.i++
	return t.out[t.i-1], nil
}

func (t *topNExec) consume(ctx context.Context) error {
	ec := t.r.evalCtx(ctx)
	limit, off := int64(-1), int64(0)
	if t.limit != nil {
		n, null, err := evalCount(ec, t.limit, "LIMIT")
		if err != nil {
			return err
		}
		if !null {
			limit = n
		} else if t.withTies {
			return sqlerr.New("2201W", "row count cannot be null in FETCH FIRST ... WITH TIES clause")
		}
	}
	if t.offset != nil {
		n, _, err := evalCount(ec, t.offset, "OFFSET")
		if err != nil {
			return err
		}
		off = n
	}
	if limit == 0 {
		return nil
	}
	bound := int64(-1)
	if limit > 0 && !t.withTies {
		// With ties every row is kept: any number may tie with the last.
		bound = limit + off
	}
	h := &worstFirst{keys: t.keys}
	t.mem.a = t.r.mem
	var c canceler
	seq := 0
	for {
		if err := c.check(ctx); err != nil {
			return err
		}
		row, err := t.in.Next(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			break
		}
		key, err := evalAll(ec, sortExprs(t.keys), row, nil)
		if err != nil {
			return err
		}
		it := keyedRow{key: key, row: row, seq: seq}
		seq++
		if bound < 0 || int64(h.Len()) < bound {
			if err := t.mem.grow("ORDER BY ... LIMIT", keyedRowSize+rowBytes(row)+rowBytes(key)); err != nil {
				return err
			}
			heap.Push(h, it)
			continue
		}
		// Replace the worst kept row if this one sorts before it.
		if c := compareKeys(t.keys, key, h.items[0].key); c < 0 {
			h.items[0] = it
			heap.Fix(h, 0)
		}
	}
	items := h.items
	sortKeyed(t.keys, items)
	if off >= int64(len(items)) {
		return nil
	}
	items = items[off:]
	if limit >= 0 && int64(len(items)) > limit {
		end := limit
		for t.withTies && end < int64(len(items)) && compareKeys(t.keys, items[end].key, items[limit-1].key) == 0 {
			end++
		}
		items = items[:end]
	}
	t.out = make([]types.Row, len(items))
	for i, it := range items {
		t.out[i] = it.row
	}
	return nil
}

func (t *topNExec) Close() {
	t.in.Close()
	t.mem.release()
}
