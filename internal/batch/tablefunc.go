package batch

import (
	"context"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// tableFuncExec runs a set-returning function in FROM.
type tableFuncExec struct {
	r       *runner
	node    *plan.TableFunc
	started bool
	next    func() (types.Datum, bool, error)
	ord     int64
	c       canceler
}

func (t *tableFuncExec) Next(ctx context.Context) (types.Row, error) {
	if !t.started {
		t.started = true
		ec := t.r.evalCtx(ctx)
		args, err := evalAll(ec, t.node.Args, nil, nil)
		if err != nil {
			return nil, err
		}
		switch t.node.Name {
		case "generate_series":
			t.next, err = expr.GenerateSeries(args, t.node.Out[0].Type, ec.Location)
		case "unnest":
			t.next = expr.UnnestArray(args[0])
		default:
			err = sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s does not exist", t.node.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := t.c.check(ctx); err != nil {
		return nil, err
	}
	if t.next == nil {
		return nil, nil
	}
	d, ok, err := t.next()
	if err != nil || !ok {
		return nil, err
	}
	t.ord++
	if t.node.WithOrdinality {
		return types.Row{d, types.DInt64(t.ord)}, nil
	}
	return types.Row{d}, nil
}

func (t *tableFuncExec) Close() {}

// projectSetExec runs select-list set-returning functions in lockstep.
type projectSetExec struct {
	r    *runner
	in   executor
	node *plan.ProjectSet
	cur  types.Row
	gens []func() (types.Datum, bool, error)
	ord  int64 // rows of cur's expansion emitted
	c    canceler
}

func (p *projectSetExec) Next(ctx context.Context) (types.Row, error) {
	for {
		if err := p.c.check(ctx); err != nil {
			return nil, err
		}
		if p.cur != nil {
			out := make(types.Row, len(p.cur), len(p.cur)+len(p.gens))
			copy(out, p.cur)
			any := false
			for _, g := range p.gens {
				d := types.NullDatum
				if g != nil {
					v, ok, err := g()
					if err != nil {
						return nil, err
					}
					if ok {
						d, any = v, true
					}
				}
				out = append(out, d)
			}
			if any || p.node.Outer && p.ord == 0 {
				p.ord++
				if p.node.Ordinality {
					if any {
						out = append(out, types.DInt64(p.ord))
					} else {
						out = append(out, types.NullDatum)
					}
				}
				if any {
					return out, nil
				}
				// Outer: a row with an empty expansion is kept once,
				// padded with NULL.
				p.cur = nil
				return out, nil
			}
			p.cur = nil
		}
		row, err := p.in.Next(ctx)
		if err != nil || row == nil {
			return nil, err
		}
		ec := p.r.evalCtx(ctx)
		p.gens = make([]func() (types.Datum, bool, error), len(p.node.Calls))
		for i, c := range p.node.Calls {
			args, err := evalAll(ec, c.Args, row, nil)
			if err != nil {
				return nil, err
			}
			if p.gens[i], err = expr.SelectListSRF(c.Name, args, c.Args[0].Type(), c.Type, ec.Location); err != nil {
				return nil, err
			}
		}
		p.cur, p.ord = row, 0
	}
}

func (p *projectSetExec) Close() { p.in.Close() }
