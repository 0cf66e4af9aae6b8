package batch

import (
	"context"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// aggAcc accumulates one aggregate call for one group.
type aggAcc struct {
	state expr.AggState
	// seen holds the argument keys already added (DISTINCT).
	seen map[string]struct{}
	// sorted buffers the arguments of an aggregate with ORDER BY until the
	// group is complete.
	sorted []keyedRow
}

type aggGroup struct {
	key  types.Row
	accs []aggAcc
}

type hashAggExec struct {
	r      *runner
	in     executor
	node   *plan.Aggregate
	out    []types.Row
	i      int
	done   bool
	groups map[string]*aggGroup
	order  []*aggGroup
	mem    memHold
}

func (h *hashAggExec) newGroup(key types.Row) *aggGroup {
	g := &aggGroup{key: key, accs: make([]aggAcc, len(h.node.Aggs))}
	for i, a := range h.node.Aggs {
		g.accs[i].state = a.Func.NewState()
		if a.Distinct {
			g.accs[i].seen = map[string]struct{}{}
		}
	}
	return g
}

func (h *hashAggExec) Next(ctx context.Context) (types.Row, error) {
	if !h.done {
		h.done = true
		if err := h.consume(ctx); err != nil {
			return nil, err
		}
	}
	if h.i >= len(h.out) {
		return nil, nil
	}
	h.i++
	return h.out[h.i-1], nil
}

func (h *hashAggExec) consume(ctx context.Context) error {
	ec := h.r.evalCtx(ctx)
	h.groups = map[string]*aggGroup{}
	h.mem.a = h.r.mem
	holds := make([]bool, len(h.node.Aggs))
	for i, a := range h.node.Aggs {
		holds[i] = aggHoldsInputs(a.Func.Name)
	}
	var c canceler
	var buf, abuf []byte
	var key []types.Datum
	for {
		if err := c.check(ctx); err != nil {
			return err
		}
		row, err := h.in.Next(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			break
		}
		if key, err = evalAll(ec, h.node.GroupBy, row, key); err != nil {
			return err
		}
		buf = rowKey(buf, key)
		g := h.groups[string(buf)]
		if g == nil {
			if err := h.mem.grow("hash aggregate", mapEntrySize+int64(len(buf))+rowBytes(key)+int64(len(h.node.Aggs))*aggStateSize); err != nil {
				return err
			}
			g = h.newGroup(append(types.Row(nil), key...))
			h.groups[string(buf)] = g
			h.order = append(h.order, g)
		}
		for i, a := range h.node.Aggs {
			if a.Filter != nil {
				ok, err := evalBool(ec, a.Filter, row)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			args, err := evalAll(ec, a.Args, row, nil)
			if err != nil {
				return err
			}
			acc := &g.accs[i]
			if a.Distinct {
				abuf = rowKey(abuf, args)
				if _, dup := acc.seen[string(abuf)]; dup {
					continue
				}
				if err := h.mem.grow(a.Func.Name+"(DISTINCT)", mapEntrySize+int64(len(abuf))); err != nil {
					return err
				}
				acc.seen[string(abuf)] = struct{}{}
			}
			if len(a.OrderBy) > 0 {
				sk, err := evalAll(ec, sortExprs(a.OrderBy), row, nil)
				if err != nil {
					return err
				}
				if err := h.mem.grow(a.Func.Name+"(ORDER BY)", keyedRowSize+rowBytes(sk)+rowBytes(args)); err != nil {
					return err
				}
				acc.sorted = append(acc.sorted, keyedRow{key: sk, row: args, seq: len(acc.sorted)})
				continue
			}
			if holds[i] {
				if err := h.mem.grow(a.Func.Name, rowBytes(args)); err != nil {
					return err
				}
			}
			if err := acc.state.Add(args); err != nil {
				return err
			}
		}
	}
	if len(h.node.GroupBy) == 0 && len(h.order) == 0 {
		// A global aggregate returns one row even for empty input.
		h.order = append(h.order, h.newGroup(nil))
	}
	for _, key := range h.node.Always {
		// So does each empty grouping set (GROUP BY ROLLUP(a)'s total).
		if buf = rowKey(buf, key); h.groups[string(buf)] == nil {
			g := h.newGroup(key)
			h.groups[string(buf)] = g
			h.order = append(h.order, g)
		}
	}
	for _, g := range h.order {
		out := make(types.Row, 0, len(g.key)+len(g.accs))
		out = append(out, g.key...)
		for i := range g.accs {
			acc := &g.accs[i]
			if acc.sorted != nil {
				keys := h.node.Aggs[i].OrderBy
				sortKeyed(keys, acc.sorted)
				for _, it := range acc.sorted {
					if err := acc.state.Add(it.row); err != nil {
						return err
					}
				}
				acc.sorted = nil
			}
			d, err := acc.state.Result()
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		h.out = append(h.out, out)
	}
	h.groups, h.order = nil, nil
	return nil
}

func (h *hashAggExec) Close() {
	h.in.Close()
	h.mem.release()
}

// aggStateSize is roughly what one aggregate's state takes in a group.
const aggStateSize = 96

// aggHoldsInputs reports whether the aggregate keeps every input until
// its result (its state grows with the group; memory.go charges it).
func aggHoldsInputs(name string) bool {
	switch name {
	case "array_agg", "string_agg", "jsonb_agg", "jsonb_object_agg", "percentile_cont", "percentile_disc", "mode":
		return true
	}
	return false
}

func sortExprs(keys []plan.SortKey) []exprT {
	out := make([]exprT, len(keys))
	for i, k := range keys {
		out[i] = k.Expr
	}
	return out
}

type exprT = expr.Expr
