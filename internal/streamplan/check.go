package streamplan

import (
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
)

// volatileCall returns the name of a volatile function called anywhere in
// es (now(), random(), clock_timestamp(), ...), or "".
//
// A view row is computed when its inputs change and never again, so a
// volatile function would freeze whatever value it had at that moment:
// now() in a view would not be "now" a second later, and two rows
// computed in different epochs would disagree. PostgreSQL's plain view
// evaluates it at every read; no incremental result can match that.
func volatileCall(es ...expr.Expr) (name string, tooDeep bool) {
	for _, e := range es {
		tooDeep = !walkBound(e, func(x any) bool {
			if f, ok := x.(*expr.FuncExpr); ok && f.Volatile() {
				name = f.Name
			} else if f, ok := x.(expr.VolatileCall); ok {
				name = f.VolatileName()
			}
			return name == ""
		}) || tooDeep
		if name != "" {
			return name, false
		}
	}
	return "", tooDeep
}

// walkBound is plan.WalkBound: it calls visit on every pointer reachable
// from the bound expression e (see there).
func walkBound(e expr.Expr, visit func(x any) bool) bool { return plan.WalkBound(e, visit) }
