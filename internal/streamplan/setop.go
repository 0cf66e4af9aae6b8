package streamplan

import (
	"slices"

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
// distinct value.
//
// The ALL variants expand each group to its number of copies instead of
// filtering: least(l, r) for INTERSECT ALL, greatest(l - r, 0) for EXCEPT
// ALL, by generate_series(1, copies) over the aggregation (a ProjectSet,
// projectset.go), so a row keeps its value and its copy number as key.
func (b *builder) intersectExcept(n *plan.SetOp) (*Node, error) {
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
	if n.All {
		top, err := copiesOf(agg, w, n.Kind == plan.Intersect)
		if err != nil {
			return nil, err
		}
		return b.build(&plan.Project{Input: top, Exprs: colRefsOf(n.Out), Out: n.Out})
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
	top := &plan.Filter{Input: &plan.Filter{Input: agg, Cond: inLeft}, Cond: right}
	return b.build(&plan.Project{Input: top, Exprs: colRefsOf(n.Out), Out: n.Out})
}

// copiesOf expands each group of agg (w value columns, then the left and
// right counts) to its number of copies under INTERSECT ALL (least of the
// counts) or EXCEPT ALL (left minus right, at least 0).
func copiesOf(agg *plan.Aggregate, w int, intersect bool) (plan.Node, error) {
	l := &expr.ColumnRef{Index: w, Typ: types.Int64, Name: agg.Out[w].Name}
	r := &expr.ColumnRef{Index: w + 1, Typ: types.Int64, Name: agg.Out[w+1].Name}
	var copies expr.Expr
	var err error
	if intersect {
		copies, err = expr.NewLeast([]expr.Expr{l, r})
	} else {
		var diff expr.Expr
		if diff, err = expr.NewBinaryOp("-", l, r); err == nil {
			copies, err = expr.NewGreatest([]expr.Expr{diff, &expr.Const{Value: types.DInt64(0), Typ: types.Int64}})
		}
	}
	if err != nil {
		return nil, err
	}
	one := &expr.Const{Value: types.DInt64(1), Typ: types.Int64}
	out := append(slices.Clone(agg.Out), plan.Column{Name: "copy", Type: types.Int64, Hidden: true})
	return &plan.ProjectSet{Input: agg, Calls: []*plan.SRFCall{{Name: "generate_series", Args: []expr.Expr{one, copies}, Type: types.Int64}}, Out: out}, nil
}

// colRefsOf returns references to the columns of s, in order.
func colRefsOf(s plan.Schema) []expr.Expr {
	out := make([]expr.Expr, len(s))
	for i, c := range s {
		out[i] = &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name}
	}
	return out
}
