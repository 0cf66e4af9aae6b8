package streamplan

import (
	"slices"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// EXISTS, IN and NOT IN subqueries anywhere in a view's expressions (the
// select list, HAVING, under OR, an inner join's ON), beyond the WHERE
// conjuncts the binder turns into semi and anti joins.
//
// Each becomes counts that are maintained like the scalar aggregate
// subqueries of subquery.go and correlated.go, and joined to the outer
// rows:
//
//	EXISTS (SELECT ... WHERE u.k = t.k)
//	  n   = count(*) GROUP BY u.k            joined on t.k = u.k
//	  value: n > 0
//
//	x IN (SELECT y FROM u WHERE u.k = t.k)    (x = ANY; NOT IN is <> ALL)
//	  hit   = count(*) GROUP BY u.k, y       joined on t.k = u.k AND x = y
//	  shape = (count(*), count(y)) GROUP BY u.k   joined on t.k = u.k
//	  value: true if hit > 0; else false if the subquery is empty;
//	         else NULL if x is NULL or some y is NULL; else false
//
// which is PostgreSQL's three-valued result: a NULL among the subquery's
// values makes a non-matching x unknown (so NOT IN is not true), and an
// empty subquery makes IN false and NOT IN true even for a NULL x. An
// uncorrelated subquery has no correlation keys: hit is grouped by y
// alone and shape is one row joined ON true, which re-decides every outer
// row when it changes (its value only takes three values: empty, no
// NULLs, some NULL).
//
// Handled: the correlation forms correlated.go handles (equalities between
// an inner and an outer expression, as WHERE conjuncts). Other forms are
// refused as before.

// memberKind is what a membership subquery tests.
type memberKind uint8

const (
	memberExists memberKind = iota
	memberIn                // x = ANY (subquery)
	memberNotIn             // x <> ALL (subquery)
)

// membership is an EXISTS / IN / NOT IN subquery rewritten as parts
// joined to the outer rows: its count (EXISTS) or its hit and shape (IN).
type membership struct {
	kind  memberKind
	test  expr.Expr // IN's left operand, over the outer row
	parts []part
}

// part is one relation joined to the outer rows for a subquery: either
// one column of at most one row (one, joined ON true), or grouped by the
// correlation (d, joined on its keys).
type part struct {
	one plan.Node
	d   *decorrelated
}

// shape values of an IN subquery's rows.
const (
	shapeEmpty   = 0
	shapeNoNull  = 1
	shapeHasNull = 2
)

// newMembership rewrites s, or returns nil when its form is not handled.
func newMembership(s *plan.Subquery) *membership {
	countStar, err := expr.LookupAggregate("count", nil, false)
	if err != nil {
		return nil
	}
	countCall := &plan.AggCall{Name: "count", Type: types.Int64, Func: countStar}
	count := func(in plan.Node, calls ...*plan.AggCall) *plan.Aggregate {
		a := &plan.Aggregate{Input: in, Aggs: calls}
		for _, c := range calls {
			a.Out = append(a.Out, plan.Column{Name: c.Name, Type: c.Type})
		}
		return a
	}
	// The subquery's core below its projections, and its correlation.
	var projects []*plan.Project // outermost first
	core := s.Plan
	var corrs []correlation
	if s.Correlated {
		for {
			p, ok := core.(*plan.Project)
			if !ok {
				break
			}
			projects = append(projects, p)
			core = p.Input
		}
		var ok bool
		if core, corrs, ok = pullCorrelation(core); !ok || len(corrs) == 0 {
			return nil
		}
	}
	if s.Kind == plan.ExistsSubquery {
		// The projections do not matter to whether there is a row.
		agg := count(core, countCall)
		if !s.Correlated {
			return &membership{kind: memberExists, parts: []part{{one: agg}}}
		}
		d := groupByCorrelation(nil, agg, core, corrs, 0)
		if d == nil {
			return nil
		}
		return &membership{kind: memberExists, parts: []part{{d: d}}}
	}

	m := &membership{test: s.Test}
	op, _ := expr.InfixOperator(s.Cmp)
	switch {
	case s.Kind == plan.AnySubquery && op == "=":
		m.kind = memberIn
	case s.Kind == plan.AllSubquery && op == "<>":
		m.kind = memberNotIn
	default:
		return nil
	}
	for _, p := range projects {
		if slices.ContainsFunc(p.Exprs, readsOuter) {
			return nil
		}
	}
	col := -1
	for i, c := range s.Plan.Schema() {
		if !c.Hidden {
			col = i
			break
		}
	}
	if col < 0 || readsOuter(s.Test) {
		return nil
	}
	// The subquery's value over a row of core.
	var value expr.Expr = &expr.ColumnRef{Index: col, Typ: s.Plan.Schema()[col].Type, Name: s.Plan.Schema()[col].Name}
	if len(projects) > 0 {
		value = newThroughProjects(projects, col)
	}
	// x = y with the casts the comparison needs, as a key pair.
	eq, err := expr.NewBinaryOp("=", &expr.ColumnRef{Index: 0, Typ: s.Test.Type(), Name: "test"},
		&expr.ColumnRef{Index: 1, Typ: value.Type(), Name: "subquery"})
	if err != nil {
		return nil
	}
	l, r, ok := expr.EqualityOperands(eq)
	if !ok {
		return nil
	}
	hitCorrs := append(slices.Clone(corrs), correlation{
		Inner:  &pairOf{second: value, e: r},
		Outer:  &pairOf{first: s.Test, e: l},
		Direct: true,
	})
	hit := groupByCorrelation(nil, count(core, countCall), core, hitCorrs, 0)
	if hit == nil {
		return nil
	}
	countValue, err := expr.LookupAggregate("count", []types.Type{value.Type()}, false)
	if err != nil {
		return nil
	}
	counts := count(core, countCall, &plan.AggCall{Name: "count", Args: []expr.Expr{value}, Type: types.Int64, Func: countValue})
	shape := &plan.Project{Input: counts, Exprs: []expr.Expr{&nullShape{}}, Out: plan.Schema{{Name: "shape", Type: types.Int64}}}
	m.parts = []part{{d: hit}}
	if !s.Correlated {
		m.parts = append(m.parts, part{one: shape})
	} else {
		d := groupByCorrelation([]*plan.Project{shape}, counts, core, corrs, 0)
		if d == nil {
			return nil
		}
		m.parts = append(m.parts, part{d: d})
	}
	return m
}

// value computes the subquery's value from its parts' values and the
// outer row.
func (m *membership) value(ctx *expr.EvalContext, row types.Row, parts []types.Datum) (types.Datum, error) {
	hit := !parts[0].IsNull() && parts[0].Int() > 0
	if m.kind == memberExists {
		return types.DBool(hit), nil
	}
	var in types.Datum
	switch {
	case hit:
		in = types.DBool(true)
	case parts[1].IsNull() || parts[1].Int() == shapeEmpty:
		in = types.DBool(false)
	case parts[1].Int() == shapeHasNull:
		in = types.NullDatum
	default:
		x, err := m.test.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		if x.IsNull() {
			in = types.NullDatum
		} else {
			in = types.DBool(false)
		}
	}
	if m.kind == memberNotIn && !in.IsNull() {
		in = types.DBool(!in.Bool())
	}
	return in, nil
}

// nullShape computes an IN subquery's shape (shapeEmpty, shapeNoNull,
// shapeHasNull) from the row (count(*), count(value)).
type nullShape struct{}

func (*nullShape) Type() types.Type { return types.Int64 }
func (*nullShape) String() string   { return "in_shape(count(*), count(value))" }
func (*nullShape) Eval(_ *expr.EvalContext, row types.Row) (types.Datum, error) {
	total, values := row[0].Int(), row[1].Int()
	switch {
	case total == 0:
		return types.DInt64(shapeEmpty), nil
	case values < total:
		return types.DInt64(shapeHasNull), nil
	}
	return types.DInt64(shapeNoNull), nil
}

// pairOf evaluates e, bound against the two-column row (IN's test value,
// the subquery's value) as plan.Subquery.Cmp is, with the column given by
// first or second computed over the row at hand and the other NULL.
type pairOf struct {
	first, second expr.Expr
	e             expr.Expr
}

func (p *pairOf) Type() types.Type { return p.e.Type() }
func (p *pairOf) String() string {
	if p.first != nil {
		return p.first.String()
	}
	return p.second.String()
}
func (p *pairOf) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	pair := types.Row{types.NullDatum, types.NullDatum}
	for i, x := range []expr.Expr{p.first, p.second} {
		if x == nil {
			continue
		}
		v, err := x.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		pair[i] = v
	}
	return p.e.Eval(ctx, pair)
}

// throughProjects evaluates column col of a chain of projections (their
// expressions, outermost first) over a row of the innermost one's input.
// It keeps the expressions only, not the Project nodes: their inputs still
// hold the correlation that was pulled out, which readsOuter must not see.
type throughProjects struct {
	exprs [][]expr.Expr
	col   int
}

func newThroughProjects(projects []*plan.Project, col int) *throughProjects {
	t := &throughProjects{col: col}
	for _, p := range projects {
		t.exprs = append(t.exprs, p.Exprs)
	}
	return t
}

func (t *throughProjects) Type() types.Type { return t.exprs[0][t.col].Type() }
func (t *throughProjects) String() string   { return t.exprs[0][t.col].String() }
func (t *throughProjects) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	for i := len(t.exprs) - 1; i > 0; i-- {
		next := make(types.Row, len(t.exprs[i]))
		for j, e := range t.exprs[i] {
			v, err := e.Eval(ctx, row)
			if err != nil {
				return types.NullDatum, err
			}
			next[j] = v
		}
		row = next
	}
	return t.exprs[0][t.col].Eval(ctx, row)
}

// notInFilter turns the binder's null-aware anti join (WHERE x NOT IN
// (uncorrelated subquery)) back into a filter by its NOT IN subquery,
// which the counts above maintain: the anti join's NULL semantics need the
// whole right side, which a streaming join does not look at.
func notInFilter(j *plan.Join) (plan.Node, error) {
	if len(j.LeftKeys) != 1 || j.Cond != nil {
		return nil, unsupported("NOT IN (subquery) of this form in a materialized view is not supported (use NOT EXISTS)")
	}
	test, value := j.LeftKeys[0], j.RightKeys[0]
	cmp, err := expr.NewBinaryOp("<>", &expr.ColumnRef{Index: 0, Typ: test.Type(), Name: "test"},
		&expr.ColumnRef{Index: 1, Typ: value.Type(), Name: "subquery"})
	if err != nil {
		return nil, err
	}
	sub := &plan.Subquery{
		Kind: plan.AllSubquery, Test: test, Cmp: cmp, Typ: types.Bool,
		Plan:  &plan.Project{Input: j.Right, Exprs: []expr.Expr{value}, Out: plan.Schema{{Name: "subquery", Type: value.Type()}}},
		Label: test.String() + " NOT IN (subquery)",
	}
	return &plan.Filter{Input: j.Left, Cond: sub}, nil
}
