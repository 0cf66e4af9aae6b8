package batch

import (
	"context"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// expandExec repeats each input row once per grouping set (plan.Expand):
// the row, its grouping keys with those outside the set NULLed, and the
// set's number.
type expandExec struct {
	r    *runner
	in   executor
	node *plan.Expand
	cur  types.Row // the input row being expanded
	keys types.Row // its grouping keys
	set  int       // the next set to emit for cur
	c    canceler
}

func (e *expandExec) Next(ctx context.Context) (types.Row, error) {
	if e.cur == nil || e.set == len(e.node.Sets) {
		if err := e.c.check(ctx); err != nil {
			return nil, err
		}
		row, err := e.in.Next(ctx)
		if err != nil || row == nil {
			return nil, err
		}
		if e.keys, err = evalAll(e.r.evalCtx(ctx), e.node.Keys, row, e.keys); err != nil {
			return nil, err
		}
		e.cur, e.set = row, 0
	}
	s := e.set
	e.set++
	out := make(types.Row, 0, len(e.cur)+len(e.keys)+1)
	out = append(out, e.cur...)
	for range e.keys {
		out = append(out, types.NullDatum)
	}
	for _, k := range e.node.Sets[s] {
		out[len(e.cur)+k] = e.keys[k]
	}
	return append(out, types.DInt32(int32(s))), nil
}

func (e *expandExec) Close() { e.in.Close() }
