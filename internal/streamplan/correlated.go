package streamplan

import (
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/decorrelate"
	"github.com/runneldb/runnel/internal/sql/plan"
)

// Correlated scalar subqueries in a view (TPC-H's Q2, Q17, Q20 shape):
//
//	SELECT k FROM t1 WHERE v > (SELECT 0.2 * avg(w) FROM t2 WHERE t2.g = t1.g)
//
// A view computes the subquery once per value of the correlation key,
// grouped, and joins it back (batch execution does the same, see
// internal/batch/decorrelate.go):
//
//	Filter v > $value
//	  Join LEFT ON t1.g = sub.g
//	    t1
//	    Project [g, 0.2 * avg, true]          (the value and a match marker)
//	      Agg avg(w) GROUP BY t2.g
//	        t2
//
// An outer row with no group (no inner row matches, or its key is NULL)
// gets the subquery's value over an empty input, computed once when the
// view is planned: count is 0, the other aggregates NULL, and the
// subquery's expression over them (so `(SELECT count(*) ...)` is 0, not
// NULL). The marker tells that case from a group whose value is NULL.
//
// Handled: a subquery that is an aggregate without GROUP BY or HAVING
// (under projections), whose WHERE holds the correlation as conjuncts
// `inner expression = outer expression`, the outer side reading only the
// enclosing row — also over inner joins, where the binder pushes each
// conjunct down to its table (TPC-H Q2). Any other reference to the
// enclosing row (in a non-equality, an aggregate argument, an outer join's
// condition) is refused as before.

type (
	decorrelated = decorrelate.Scalar
	correlation  = decorrelate.Correlation
)

func decorrelateScalar(s *plan.Subquery, col int) *decorrelated {
	return decorrelate.ScalarSubquery(s, col)
}

func groupByCorrelation(projects []*plan.Project, agg *plan.Aggregate, input plan.Node, corrs []correlation, col int) *decorrelated {
	return decorrelate.GroupByCorrelation(projects, agg, input, corrs, col)
}

func pullCorrelation(n plan.Node) (plan.Node, []correlation, bool) {
	return decorrelate.PullCorrelation(n)
}

func readsOuter(x expr.Expr) bool { return decorrelate.ReadsOuter(x) }

func and(a, b expr.Expr) (expr.Expr, bool) {
	e, err := expr.NewBinaryOp("AND", a, b)
	return e, err == nil
}
