package batch

import (
	"context"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// subqueryResult caches the rows of an uncorrelated subquery for one
// execution; for ANY/ALL with "=" it also keeps a hash set.
type subqueryResult struct {
	rows []types.Row
}

// EvalSubquery implements plan.SubqueryRunner.
func (r *runner) EvalSubquery(ec *expr.EvalContext, s *plan.Subquery, row types.Row) (types.Datum, error) {
	ctx := ec.Ctx
	if err := ctxErr(ctx); err != nil {
		return types.NullDatum, err
	}
	// The test operand is evaluated against the current row before the
	// subquery runs (it may be needed for every subquery row).
	var test types.Datum
	if s.Kind == plan.AnySubquery || s.Kind == plan.AllSubquery {
		var err error
		if test, err = s.Test.Eval(ec, row); err != nil {
			return types.NullDatum, err
		}
	}
	var rows []types.Row
	if !s.Correlated {
		if c := r.cache[s]; c != nil {
			rows = c.rows
		} else {
			var err error
			if rows, _, err = r.runSub(ctx, s, nil); err != nil {
				return types.NullDatum, err
			}
			r.cache[s] = &subqueryResult{rows: rows}
		}
	} else {
		var err error
		var held int64
		if rows, held, err = r.runSub(plan.WithOuterRow(ctx, row), s, row); err != nil {
			return types.NullDatum, err
		}
		// A correlated subquery's rows live for this outer row only.
		defer r.mem.shrink(held)
	}
	switch s.Kind {
	case plan.ExistsSubquery:
		return types.DBool(len(rows) > 0), nil
	case plan.ScalarSubquery:
		switch len(rows) {
		case 0:
			return types.NullDatum, nil
		case 1:
			return rows[0][0], nil
		}
		return types.NullDatum, sqlerr.New(sqlerr.CardinalityViolation, "more than one row returned by a subquery used as an expression")
	}
	// ANY: true if some comparison is true; else NULL if some is NULL;
	// else false. ALL: false if some is false; else NULL if some is NULL;
	// else true.
	sawNull := false
	pair := make(types.Row, 2)
	pair[0] = test
	for i, sr := range rows {
		if i%cancelCheckRows == cancelCheckRows-1 {
			if err := ctxErr(ctx); err != nil {
				return types.NullDatum, err
			}
		}
		pair[1] = sr[0]
		d, err := s.Cmp.Eval(ec, pair)
		if err != nil {
			return types.NullDatum, err
		}
		switch {
		case d.IsNull():
			sawNull = true
		case d.Bool() && s.Kind == plan.AnySubquery:
			return types.DBool(true), nil
		case !d.Bool() && s.Kind == plan.AllSubquery:
			return types.DBool(false), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(s.Kind == plan.AllSubquery), nil
}

// runSub runs a subquery plan. EXISTS stops at the first row and a scalar
// subquery at the second.
func (r *runner) runSub(ctx context.Context, s *plan.Subquery, _ types.Row) (_ []types.Row, held int64, _ error) {
	ex, err := r.build(s.Plan)
	if err != nil {
		return nil, 0, err
	}
	defer ex.Close()
	limit := -1
	switch s.Kind {
	case plan.ExistsSubquery:
		limit = 1
	case plan.ScalarSubquery:
		limit = 2
	}
	// The rows are kept while the statement runs (an uncorrelated
	// subquery's are cached) or until the outer row is done: charged to
	// the statement, given back when it ends.
	var out []types.Row
	for limit < 0 || len(out) < limit {
		row, err := ex.Next(ctx)
		if err != nil {
			r.mem.shrink(held)
			return nil, 0, err
		}
		if row == nil {
			break
		}
		n := rowBytes(row) + sliceSize
		if err := r.mem.grow("subquery", n); err != nil {
			r.mem.shrink(held)
			return nil, 0, err
		}
		held += n
		out = append(out, row)
	}
	return out, held, nil
}
