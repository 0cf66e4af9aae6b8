package streamplan

import (
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// intersectExcept plans INTERSECT and EXCEPT (without ALL) as an
// aggregation over the tagged union of both sides:
//
//	Project c1..cw
//	  Filter l > 0 AND r > 0            (EXCEPT: l > 0 AND r = 0)
//	    Agg GROUP BY c1..cw: l = count(*) FILTER (WHERE branch = 0),
//	                         r = count(*) FILTER (WHERE branch = 1)
//	      UNION ALL (left, 0 AS branch) (right, 1 AS branch)
//
// Grouping treats NULLs as equal, as set operations do. A row of either
// side changes only its group's counts, so the filter above decides that
// group again and nothing else; the aggregation's state is one row per
// distinct value. The ALL variants would need each group expanded to
// min(l, r) or l - r copies, which the stream plan cannot express yet.
func (b *builder) intersectExcept(n *plan.SetOp) (*Node, error) {
	kind := strings.ToUpper(n.Kind.String())
	if n.All {
		return nil, unsupported("%s ALL in a materialized view is not supported yet (%s without ALL is)", kind, kind)
	}
	w := len(n.Out)
	tagged := slices.Clone(n.Out)
	tagged = append(tagged, plan.Column{Name: "branch", Type: types.Int32, Hidden: true})
	tag := func(side plan.Node, branch int32) plan.Node {
		exprs := make([]expr.Expr, 0, w+1)
		for i, c := range side.Schema()[:w] {
			exprs = append(exprs, &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name})
		}
		exprs = append(exprs, &expr.Const{Value: types.DInt32(branch), Typ: types.Int32})
		return &plan.Project{Input: side, Exprs: exprs, Out: tagged}
	}
	union := &plan.SetOp{Kind: plan.Union, All: true, Left: tag(n.Left, 0), Right: tag(n.Right, 1), Out: tagged}
	countStar, err := expr.LookupAggregate("count", nil, false)
	if err != nil {
		return nil, err
	}
	branch := &expr.ColumnRef{Index: w, Typ: types.Int32, Name: "branch"}
	agg := &plan.Aggregate{Input: union, Out: slices.Clone(n.Out)}
	for i, c := range n.Out {
		agg.GroupBy = append(agg.GroupBy, &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name})
	}
	for i, name := range []string{"left_count", "right_count"} {
		f, err := expr.NewBinaryOp("=", branch, &expr.Const{Value: types.DInt32(int32(i)), Typ: types.Int32})
		if err != nil {
			return nil, err
		}
		agg.Aggs = append(agg.Aggs, &plan.AggCall{Name: "count", Filter: f, Type: types.Int64, Func: countStar})
		agg.Out = append(agg.Out, plan.Column{Name: name, Type: types.Int64, Hidden: true})
	}
	cmp := func(col int, op string) (expr.Expr, error) {
		return expr.NewBinaryOp(op, &expr.ColumnRef{Index: col, Typ: types.Int64, Name: agg.Out[col].Name},
			&expr.Const{Value: types.DInt64(0), Typ: types.Int64})
	}
	inLeft, err := cmp(w, ">")
	if err != nil {
		return nil, err
	}
	op := ">" // INTERSECT: on both sides
	if n.Kind != plan.Intersect {
		op = "=" // EXCEPT: on the left only
	}
	right, err := cmp(w+1, op)
	if err != nil {
		return nil, err
	}
	var top plan.Node = &plan.Filter{Input: &plan.Filter{Input: agg, Cond: inLeft}, Cond: right}
	exprs := make([]expr.Expr, w)
	for i, c := range n.Out {
		exprs[i] = &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name}
	}
	return b.build(&plan.Project{Input: top, Exprs: exprs, Out: n.Out})
}
