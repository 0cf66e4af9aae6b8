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
// enclosing row — also over inner joins, where the binder pushes each
// conjunct down to its table (TPC-H Q2). Any other reference to the
// enclosing row (in a non-equality, an aggregate argument, an outer join's
// condition) is refused as before.

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
	input, corrs, ok := pullCorrelation(agg.Input)
	if !ok || len(corrs) == 0 {
		return nil
	}
	return groupByCorrelation(projects, agg, input, corrs, col)
}

// groupByCorrelation plans agg (an aggregate without GROUP BY, under
// projects, outermost first) over input grouped by the inner sides of
// corrs, as decorrelateScalar describes; membership.go uses it for EXISTS
// and IN. It returns nil when something other than corrs reads the
// enclosing row.
func groupByCorrelation(projects []*plan.Project, agg *plan.Aggregate, input plan.Node, corrs []correlation, col int) *decorrelated {
	var innerKeys, outerKeys []expr.Expr
	for _, c := range corrs {
		innerKeys = append(innerKeys, c.inner)
		if c.direct {
			outerKeys = append(outerKeys, c.outer)
		} else {
			outerKeys = append(outerKeys, &outerRow{inner: c.outer})
		}
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

// correlation is one conjunct inner = outer of a subquery's WHERE.
type correlation struct {
	inner expr.Expr // over the row of the node it was pulled up to
	outer expr.Expr // over the enclosing row (OuterRefs of depth 1)
	// direct: outer reads the enclosing row as its own row (ColumnRefs),
	// as the test operand of IN does (membership.go).
	direct bool
}

// pullCorrelation removes the correlation conjuncts from the filters of
// n — its own, and those of the scans and filters below it through inner
// joins, where the binder pushes WHERE conjuncts — and returns them bound
// over n's output row. ok is false when a conjunct reads the enclosing row
// in another way (the caller also refuses any reference left in the plan).
func pullCorrelation(n plan.Node) (out plan.Node, corrs []correlation, ok bool) {
	split := func(cond expr.Expr) (rest expr.Expr, corrs []correlation, ok bool) {
		if cond == nil {
			return nil, nil, true
		}
		for _, c := range expr.Conjuncts(cond) {
			if !readsOuter(c) {
				if rest == nil {
					rest = c
				} else if rest, ok = and(rest, c); !ok {
					return nil, nil, false
				}
				continue
			}
			l, r, isEq := expr.EqualityOperands(c)
			if !isEq {
				return nil, nil, false
			}
			if readsOuter(l) {
				l, r = r, l
			}
			if readsOuter(l) || !outerOnly(r) {
				return nil, nil, false
			}
			corrs = append(corrs, correlation{inner: l, outer: r})
		}
		return rest, corrs, true
	}
	switch n := n.(type) {
	case *plan.Scan:
		rest, corrs, ok := split(n.Filter)
		if !ok || len(corrs) == 0 {
			return n, nil, ok
		}
		bare := *n
		bare.Filter, bare.KeyPrefix = rest, nil // the prefix may hold the outer value
		return &bare, corrs, true
	case *plan.Filter:
		in, below, ok := pullCorrelation(n.Input)
		if !ok {
			return nil, nil, false
		}
		rest, own, ok := split(n.Cond)
		if !ok {
			return nil, nil, false
		}
		corrs = append(below, own...)
		if rest == nil {
			return in, corrs, true
		}
		return &plan.Filter{Input: in, Cond: rest}, corrs, true
	case *plan.Join:
		lw, rw := len(n.Left.Schema()), len(n.Right.Schema())
		if n.Kind != plan.InnerJoin || n.NullAware || len(n.Out) != lw+rw {
			return n, nil, true
		}
		l, lc, ok := pullCorrelation(n.Left)
		if !ok {
			return nil, nil, false
		}
		r, rc, ok := pullCorrelation(n.Right)
		if !ok {
			return nil, nil, false
		}
		if len(lc)+len(rc) == 0 {
			return n, nil, true
		}
		// A right-side expression reads the join's row from lw on.
		shift := make([]int, rw)
		for i := range shift {
			shift[i] = lw + i
		}
		for _, c := range rc {
			lc = append(lc, correlation{inner: Remap(c.inner, shift), outer: c.outer})
		}
		j := *n
		j.Left, j.Right = l, r
		return &j, lc, true
	}
	return n, nil, true
}

func and(a, b expr.Expr) (expr.Expr, bool) {
	e, err := expr.NewBinaryOp("AND", a, b)
	return e, err == nil
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
		case expr.VolatileCall:
			ok = ok && v.VolatileName() == ""
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
	return o.inner.Eval(derive(ctx, func(c context.Context) context.Context { return plan.WithOuterRow(c, row) }), nil)
}
