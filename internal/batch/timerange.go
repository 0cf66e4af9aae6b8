package batch

import (
	"context"
	"math"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/tsdb"
	"github.com/runneldb/runnel/internal/types"
)

// TimeScanner reads a time-series table's rows skipping the stored files
// that hold no row with a time in [lo, hi] (Unix µs, inclusive). Every row
// of the files it reads is returned: the scan's filter still decides each
// row. ok is false when it cannot for this relation.
type TimeScanner interface {
	ScanTime(ctx context.Context, rel *catalog.Relation, lo, hi int64) (it RowIterator, ok bool, err error)
}

// timeBounds derives, from a scan filter over a time-series table, the
// range its time index must lie in: the conjuncts comparing the time
// index column with a constant (a literal, a parameter, a cast of one, or
// now() ± constants: ts >= now() - interval '1 hour').
// ok is false when the filter bounds nothing. A bound is only ever looser
// than the filter, never tighter: a conjunct it cannot read is ignored.
func timeBounds(rel *catalog.Relation, filter expr.Expr, ec *expr.EvalContext) (lo, hi int64, ok bool) {
	sp, isTS := tsdb.SpecOf(rel)
	if !isTS || filter == nil {
		return 0, 0, false
	}
	lo, hi = math.MinInt64, math.MaxInt64
	for _, c := range expr.Conjuncts(filter) {
		op, l, r, isCmp := expr.Comparison(c)
		if !isCmp {
			if l, r, isCmp = expr.EqualityOperands(c); !isCmp {
				continue
			}
			op = "="
		}
		if col, isCol := r.(*expr.ColumnRef); isCol && col.Index == sp.TimeIndex {
			l, r = r, l
			op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op]
		}
		col, isCol := l.(*expr.ColumnRef)
		if !isCol || col.Index != sp.TimeIndex || !statementConstant(r, ec) {
			continue
		}
		d, err := r.Eval(ec, nil)
		if err != nil || d.IsNull() || (d.Kind() != types.KindTimestamp && d.Kind() != types.KindTimestamptz) || d.Kind() != rel.Columns[sp.TimeIndex].Type.Kind {
			continue
		}
		v := d.Int()
		switch op {
		case ">", ">=":
			lo = max(lo, v)
		case "<", "<=":
			hi = min(hi, v)
		case "=":
			lo, hi = max(lo, v), min(hi, v)
		}
	}
	return lo, hi, lo != math.MinInt64 || hi != math.MaxInt64
}

// statementConstant reports whether e has one value for the whole
// statement: a literal or parameter, or a function of now() and constants
// when the statement's time is fixed in ec (the filter then evaluates
// now() to the same instant, so the bound is exactly the filter's).
func statementConstant(e expr.Expr, ec *expr.EvalContext) bool {
	if plan.StatementConstant(e) {
		return true
	}
	return ec != nil && !ec.StatementTime.IsZero() && expr.MonotoneInNow(e)
}
