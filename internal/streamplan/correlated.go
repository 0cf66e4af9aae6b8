package streamplan

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// Correlated scalar subqueries in a view (TPC-H's Q2, Q17, Q20 shape):
//
//	SELECT k FROM t1 WHERE v > (SELECT 0.2 * avg(w) FROM t2 WHERE t2.g = t1.g)
//
// A batch query re-runs the subquery for every outer row; a view computes
// the subquery once per value of the correlation key instead, grouped, and
// joins it back:
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
// enclosing row. Any other reference to the enclosing row (in a
// non-equality, an aggregate argument, a join inside the subquery) is
// refused as before.

// decorrelated is a correlated scalar subquery rewritten for a join.
type decorrelated struct {
	// plan outputs the inner keys, then the subquery's value, then a
	// non-NULL marker.
	plan plan.Node
	// outerKeys are the outer sides of the correlation, evaluated over
	// the enclosing row; innerKeys are plan's first columns.
	outerKeys []expr.Expr
	// empty is the subquery's value over no rows.
	empty types.Datum
}

// decorrelateScalar rewrites s, or returns nil when its form is not
// handled.
func decorrelateScalar(s *plan.Subquery, col int) *decorrelated {
	var projects []*plan.Project // outermost first
	n := s.Plan
	for {
		p, ok := n.(*plan.Project)
		if !ok {
			break
		}
		projects = append(projects, p)
		n = p.Input
	}
	agg, ok := n.(*plan.Aggregate)
	if !ok || len(agg.GroupBy) > 0 {
		return nil
	}
	var base plan.Node
	var conds []expr.Expr
	switch in := agg.Input.(type) {
	case *plan.Filter:
		base, conds = in.Input, expr.Conjuncts(in.Cond)
	case *plan.Scan:
		if in.Filter == nil {
			return nil
		}
		bare := *in
		bare.Filter, bare.KeyPrefix = nil, nil
		base, conds = &bare, expr.Conjuncts(in.Filter)
	default:
		return nil
	}
	var rest, innerKeys, outerKeys []expr.Expr
	for _, c := range conds {
		if !readsOuter(c) {
			rest = append(rest, c)
			continue
		}
		l, r, ok := expr.EqualityOperands(c)
		if !ok {
			return nil
		}
		if readsOuter(l) {
			l, r = r, l
		}
		if readsOuter(l) || !outerOnly(r) {
			return nil
		}
		innerKeys = append(innerKeys, l)
		outerKeys = append(outerKeys, &outerRow{inner: r})
	}
	if len(innerKeys) == 0 {
		return nil
	}
	input := base
	if len(rest) > 0 {
		cond := rest[0]
		for _, c := range rest[1:] {
			var err error
			if cond, err = expr.NewBinaryOp("AND", cond, c); err != nil {
				return nil
			}
		}
		input = &plan.Filter{Input: base, Cond: cond}
	}
	// Nothing else may read the enclosing row: the grouped plan runs once
	// per key, not per outer row.
	if readsOuter(&plan.Subquery{Plan: &plan.Aggregate{Input: input, Aggs: agg.Aggs}}) {
		return nil
	}
	for _, p := range projects {
		if slices.ContainsFunc(p.Exprs, readsOuter) {
			return nil
		}
	}

	// The value over no rows: every aggregate's empty result through the
	// projections.
	empty := make(types.Row, len(agg.Aggs))
	for i, a := range agg.Aggs {
		if a.Func == nil {
			return nil
		}
		v, err := a.Func.NewState().Result()
		if err != nil {
			return nil
		}
		empty[i] = v
	}
	ec := &expr.EvalContext{Ctx: context.Background(), Location: time.UTC}
	for i := len(projects) - 1; i >= 0; i-- {
		next := make(types.Row, len(projects[i].Exprs))
		for j, e := range projects[i].Exprs {
			v, err := e.Eval(ec, empty)
			if err != nil {
				return nil
			}
			next[j] = v
		}
		empty = next
	}

	nk := len(innerKeys)
	keyCols := func(schema plan.Schema) ([]expr.Expr, plan.Schema) {
		var es []expr.Expr
		var out plan.Schema
		for i := 0; i < nk; i++ {
			c := schema[i]
			es = append(es, &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name})
			out = append(out, c)
		}
		return es, out
	}
	var top plan.Node
	out := plan.Schema{}
	for i, k := range innerKeys {
		out = append(out, plan.Column{Name: "correlation_" + strconv.Itoa(i), Type: k.Type()})
	}
	top = &plan.Aggregate{Input: input, GroupBy: innerKeys, Aggs: agg.Aggs, Out: append(out, agg.Out...)}
	shift := func(width int) []int {
		m := make([]int, width)
		for i := range m {
			m[i] = nk + i
		}
		return m
	}
	width := len(agg.Out)
	for i := len(projects) - 1; i >= 0; i-- {
		p := projects[i]
		es, schema := keyCols(top.Schema())
		for _, e := range p.Exprs {
			es = append(es, Remap(e, shift(width)))
		}
		top = &plan.Project{Input: top, Exprs: es, Out: append(schema, p.Out...)}
		width = len(p.Exprs)
	}
	es, schema := keyCols(top.Schema())
	v := top.Schema()[nk+col]
	es = append(es, &expr.ColumnRef{Index: nk + col, Typ: v.Type, Name: v.Name}, &expr.Const{Value: types.DBool(true), Typ: types.Bool})
	schema = append(schema, plan.Column{Name: v.Name, Type: v.Type}, plan.Column{Name: "matched", Type: types.Bool})
	top = &plan.Project{Input: top, Exprs: es, Out: schema}
	return &decorrelated{plan: top, outerKeys: outerKeys, empty: empty[col]}
}

// readsOuter reports whether x (an expression, or a plan wrapped in a
// Subquery) reads an enclosing query's row.
func readsOuter(x expr.Expr) bool {
	found := false
	complete := walkBound(x, func(v any) bool {
		if _, ok := v.(*plan.OuterRef); ok {
			found = true
		}
		return !found
	})
	return found || !complete
}

// outerOnly reports whether e reads the immediately enclosing row and no
// column of its own, no subquery and nothing volatile.
func outerOnly(e expr.Expr) bool {
	ok := true
	complete := walkBound(e, func(v any) bool {
		switch v := v.(type) {
		case *plan.OuterRef:
			ok = ok && v.Depth == 1
		case *expr.ColumnRef, *plan.Subquery:
			ok = false
		case *expr.FuncExpr:
			ok = ok && !v.Volatile()
		}
		return ok
	})
	return ok && complete
}

// outerRow evaluates an expression bound against the enclosing query (its
// OuterRefs of depth 1) over a row of that query: the left row of the
// join that replaces the subquery.
type outerRow struct{ inner expr.Expr }

func (o *outerRow) Type() types.Type { return o.inner.Type() }
func (o *outerRow) String() string   { return o.inner.String() }
func (o *outerRow) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	c := expr.EvalContext{}
	if ctx != nil {
		c = *ctx
	}
	base := c.Ctx
	if base == nil {
		base = context.Background()
	}
	c.Ctx = plan.WithOuterRow(base, row)
	return o.inner.Eval(&c, nil)
}
