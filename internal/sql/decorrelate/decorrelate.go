// Package decorrelate rewrites a correlated scalar subquery of an
// aggregate (TPC-H's Q2, Q17, Q20 shape)
//
//	SELECT k FROM t1 WHERE v > (SELECT 0.2 * avg(w) FROM t2 WHERE t2.g = t1.g)
//
// into a plan that computes the subquery once per value of the correlation
// key, grouped, to be joined back to the outer rows:
//
//	Join LEFT ON t1.g = sub.g
//	  t1
//	  Project [g, 0.2 * avg, true]          (the value and a match marker)
//	    Agg avg(w) GROUP BY t2.g
//	      t2
//
// An outer row with no group (no inner row matches, or its key is NULL)
// gets the subquery's value over an empty input, computed once when the
// plan is rewritten: count is 0, the other aggregates NULL, and the
// subquery's expression over them (so `(SELECT count(*) ...)` is 0, not
// NULL). The marker tells that case from a group whose value is NULL.
//
// Handled: a subquery that is an aggregate without GROUP BY or HAVING
// (under projections), whose WHERE holds the correlation as conjuncts
// `inner expression = outer expression`, the outer side reading only the
// enclosing row — also over inner joins, where the binder pushes each
// conjunct down to its table (TPC-H Q2). Any other reference to the
// enclosing row (in a non-equality, an aggregate argument, an outer join's
// condition) is refused (nil), and the caller keeps evaluating the
// subquery per row.
//
// The streaming planner (internal/streamplan: materialized views) and
// batch execution (internal/batch) both use it.
package decorrelate

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// Scalar is a correlated scalar subquery rewritten for a join.
type Scalar struct {
	// Plan outputs the inner keys, then the subquery's value, then a
	// non-NULL marker.
	Plan plan.Node
	// OuterKeys are the outer sides of the correlation, evaluated over
	// the enclosing row; the inner keys are Plan's first columns.
	OuterKeys []expr.Expr
	// Empty is the subquery's value over no rows.
	Empty types.Datum
}

// ScalarSubquery rewrites s, whose value is its plan's column col, or
// returns nil when its form is not handled.
func ScalarSubquery(s *plan.Subquery, col int) *Scalar {
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
	input, corrs, ok := PullCorrelation(agg.Input)
	if !ok || len(corrs) == 0 {
		return nil
	}
	return GroupByCorrelation(projects, agg, input, corrs, col)
}

// GroupByCorrelation plans agg (an aggregate without GROUP BY, under
// projects, outermost first) over input grouped by the inner sides of
// corrs, as the package describes; streamplan's membership.go uses it for
// EXISTS and IN. It returns nil when something other than corrs reads the
// enclosing row.
func GroupByCorrelation(projects []*plan.Project, agg *plan.Aggregate, input plan.Node, corrs []Correlation, col int) *Scalar {
	var innerKeys, outerKeys []expr.Expr
	for _, c := range corrs {
		innerKeys = append(innerKeys, c.Inner)
		if c.Direct {
			outerKeys = append(outerKeys, c.Outer)
		} else {
			outerKeys = append(outerKeys, &outerRow{inner: c.Outer})
		}
	}
	// Nothing else may read the enclosing row: the grouped plan runs once
	// per key, not per outer row.
	if ReadsOuter(&plan.Subquery{Plan: &plan.Aggregate{Input: input, Aggs: agg.Aggs}}) {
		return nil
	}
	for _, p := range projects {
		if slices.ContainsFunc(p.Exprs, ReadsOuter) {
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
	return &Scalar{Plan: top, OuterKeys: outerKeys, Empty: empty[col]}
}

// Correlation is one conjunct Inner = Outer of a subquery's WHERE.
type Correlation struct {
	Inner expr.Expr // over the row of the node it was pulled up to
	Outer expr.Expr // over the enclosing row (OuterRefs of depth 1)
	// Direct: Outer reads the enclosing row as its own row (ColumnRefs),
	// as the test operand of IN does (streamplan's membership.go).
	Direct bool
}

// PullCorrelation removes the correlation conjuncts from the filters of
// n — its own, and those of the scans and filters below it through inner
// joins, where the binder pushes WHERE conjuncts — and returns them bound
// over n's output row. ok is false when a conjunct reads the enclosing row
// in another way (the caller also refuses any reference left in the plan).
func PullCorrelation(n plan.Node) (out plan.Node, corrs []Correlation, ok bool) {
	split := func(cond expr.Expr) (rest expr.Expr, corrs []Correlation, ok bool) {
		if cond == nil {
			return nil, nil, true
		}
		for _, c := range expr.Conjuncts(cond) {
			if !ReadsOuter(c) {
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
			if ReadsOuter(l) {
				l, r = r, l
			}
			if ReadsOuter(l) || !outerOnly(r) {
				return nil, nil, false
			}
			corrs = append(corrs, Correlation{Inner: l, Outer: r})
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
		if l := bare.Index; l != nil && slices.ContainsFunc(append(slices.Clone(l.Eq), l.Lo, l.Hi), ReadsOuter) {
			bare.Index = nil // a batch scan's index range on the outer value (views read no index)
		}
		return &bare, corrs, true
	case *plan.Filter:
		in, below, ok := PullCorrelation(n.Input)
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
		l, lc, ok := PullCorrelation(n.Left)
		if !ok {
			return nil, nil, false
		}
		r, rc, ok := PullCorrelation(n.Right)
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
			lc = append(lc, Correlation{Inner: Remap(c.Inner, shift), Outer: c.Outer})
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

// ReadsOuter reports whether x (an expression, or a plan wrapped in a
// Subquery) reads an enclosing query's row.
func ReadsOuter(x expr.Expr) bool {
	found := false
	complete := plan.WalkBound(x, func(v any) bool {
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
	complete := plan.WalkBound(e, func(v any) bool {
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
	return o.inner.Eval(Derive(ctx, func(c context.Context) context.Context { return plan.WithOuterRow(c, row) }), nil)
}

// Derive copies ctx (nil: an empty one) with its Go context wrapped by
// wrap: how a rewritten expression hands its inner one a subquery runner
// or an enclosing row.
func Derive(ctx *expr.EvalContext, wrap func(context.Context) context.Context) *expr.EvalContext {
	c := expr.EvalContext{}
	if ctx != nil {
		c = *ctx
	}
	base := c.Ctx
	if base == nil {
		base = context.Background()
	}
	c.Ctx = wrap(base)
	return &c
}
