package streamplan

import (
	"context"
	"slices"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/decorrelate"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Scalar subqueries in a view.
//
// A batch query evaluates a scalar subquery by running its plan
// (plan.Subquery with a SubqueryRunner). A view cannot re-run a query for
// every change, so an uncorrelated scalar subquery that returns at most one
// row is maintained as a join instead:
//
//	SELECT * FROM t WHERE v > (SELECT avg(v) FROM t)
//
//	  Filter v > $2            (the subquery reads column 2 of the joined row)
//	    Join LEFT ON true      (no row: the subquery is NULL)
//	      t                    columns 0, 1
//	      Agg avg(v)           column 2: the subquery's value
//
// When the subquery's value changes, the join retracts every outer row
// joined with the old value and emits it with the new one, so the filter
// above re-decides every row: the view stays equal to its query.
//
// The expressions keep their bound form; each Filter/Project expression
// that holds subqueries is wrapped in subqueryColumns, which evaluates it
// with a SubqueryRunner that reads each subquery's value from its column of
// the joined row instead of running the plan.
//
// Only subqueries that cannot return two rows are rewritten: a global
// aggregate (possibly under Project/Filter), a LIMIT 0 or 1, or a one-row
// VALUES. Another scalar subquery could fail at run time with 21000 in
// PostgreSQL; a view cannot fail later for data it accepted, so it is
// refused when created. Correlated aggregate subqueries become a grouped
// join (correlated.go); other correlated ones are refused.

// hoistScalarSubqueries rewrites a Filter or Project node whose
// expressions hold uncorrelated scalar subqueries as described above; it
// returns nil when there is nothing to rewrite. Only n itself is rewritten:
// build meets the nodes below (and the subqueries' plans, as join inputs)
// on its way down.
func hoistScalarSubqueries(n plan.Node) (plan.Node, error) {
	switch n := n.(type) {
	case *plan.Scan:
		// A WHERE pushed into the scan: split it off first.
		if n.Filter == nil || len(findSubqueries(n.Filter)) == 0 {
			return nil, nil
		}
		bare := *n
		bare.Filter, bare.KeyPrefix = nil, nil
		return hoistScalarSubqueries(&plan.Filter{Input: &bare, Cond: n.Filter})
	case *plan.Join:
		// An inner join's ON condition is a filter over the joined rows:
		// its conjuncts with subqueries move above the join.
		if n.Kind != plan.InnerJoin || n.Cond == nil || len(findSubqueries(n.Cond)) == 0 ||
			len(n.Out) != len(n.Left.Schema())+len(n.Right.Schema()) {
			return nil, nil
		}
		var keep, lift []expr.Expr
		for _, c := range expr.Conjuncts(n.Cond) {
			if len(findSubqueries(c)) > 0 {
				lift = append(lift, c)
			} else {
				keep = append(keep, c)
			}
		}
		bare := *n
		bare.Cond = nil
		var ok bool
		for _, c := range keep {
			if bare.Cond == nil {
				bare.Cond = c
			} else if bare.Cond, ok = and(bare.Cond, c); !ok {
				return nil, nil
			}
		}
		cond := lift[0]
		for _, c := range lift[1:] {
			if cond, ok = and(cond, c); !ok {
				return nil, nil
			}
		}
		return hoistScalarSubqueries(&plan.Filter{Input: &bare, Cond: cond})
	case *plan.Filter:
		joined, slots, err := joinSubqueries(n.Input, []expr.Expr{n.Cond})
		if err != nil || joined == nil {
			return nil, err
		}
		f := &plan.Filter{Input: joined, Cond: &subqueryColumns{inner: n.Cond, slots: slots}}
		// Drop the subqueries' columns again.
		var exprs []expr.Expr
		for i, c := range n.Input.Schema() {
			exprs = append(exprs, &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name})
		}
		return &plan.Project{Input: f, Exprs: exprs, Out: n.Input.Schema()}, nil
	case *plan.Project:
		joined, slots, err := joinSubqueries(n.Input, n.Exprs)
		if err != nil || joined == nil {
			return nil, err
		}
		exprs := make([]expr.Expr, len(n.Exprs))
		for i, e := range n.Exprs {
			if len(findSubqueries(e)) > 0 {
				e = &subqueryColumns{inner: e, slots: slots}
			}
			exprs[i] = e
		}
		return &plan.Project{Input: joined, Exprs: exprs, Out: n.Out}, nil
	}
	return nil, nil
}

// joinSubqueries LEFT-joins in with every distinct subquery found in es:
// uncorrelated scalar ones (one column each after in's columns),
// correlated ones that decorrelate (correlated.go: their keys, value and
// match marker), and EXISTS / IN / NOT IN ones as the counts of
// membership.go. It returns a nil plan when es holds none (or only ones
// the planner refuses later: other correlated ones).
func joinSubqueries(in plan.Node, es []expr.Expr) (plan.Node, map[*plan.Subquery]subquerySlot, error) {
	var subs []*plan.Subquery
	for _, e := range es {
		for _, s := range findSubqueries(e) {
			if !slices.Contains(subs, s) {
				subs = append(subs, s)
			}
		}
	}
	if len(subs) == 0 {
		return nil, nil, nil
	}
	slots := map[*plan.Subquery]subquerySlot{}
	cur := in
	for _, s := range subs {
		if s.Kind != plan.ScalarSubquery {
			m := newMembership(s)
			if m == nil {
				return nil, nil, nil // checkStreamable refuses it
			}
			slot := subquerySlot{member: m}
			for _, p := range m.parts {
				var ps subquerySlot
				cur, ps = p.attach(cur)
				slot.parts = append(slot.parts, ps)
			}
			slots[s] = slot
			continue
		}
		sub := s.Plan
		visible := 0
		for _, c := range sub.Schema() {
			if !c.Hidden {
				visible++
			}
		}
		if visible != 1 {
			return nil, nil, sqlerr.Errorf(sqlerr.SyntaxError, "subquery must return only one column")
		}
		// Keep only the value column, so the join's right side is one
		// column wide whatever the subquery carries hidden.
		col := 0
		for i, c := range sub.Schema() {
			if !c.Hidden {
				col = i
				break
			}
		}
		c := sub.Schema()[col]
		if s.Correlated {
			d := decorrelateScalar(s, col)
			if d == nil {
				return nil, nil, nil // checkStreamable refuses it
			}
			cur, slots[s] = part{d: d}.attach(cur)
			continue
		}
		if !atMostOneRow(s.Plan) {
			return nil, nil, unsupported("a scalar subquery in a materialized view must return at most one row by its form (an aggregate without GROUP BY, or LIMIT 1): %s", s.Label)
		}
		one := &plan.Project{Input: sub, Exprs: []expr.Expr{&expr.ColumnRef{Index: col, Typ: c.Type, Name: c.Name}},
			Out: plan.Schema{{Name: c.Name, Type: c.Type}}}
		cur, slots[s] = part{one: one}.attach(cur)
	}
	return cur, slots, nil
}

// attach LEFT-joins p to cur: a one-row part ON true, a decorrelated one
// on its correlation keys. It returns the joined plan and where p's value
// is in its rows.
func (p part) attach(cur plan.Node) (plan.Node, subquerySlot) {
	if p.d == nil {
		c := p.one.Schema()[0]
		slot := subquerySlot{col: len(cur.Schema()), marker: -1}
		out := append(slices.Clone(cur.Schema()), plan.Column{Name: "scalar_subquery", Type: c.Type, Hidden: true})
		return &plan.Join{Kind: plan.LeftJoin, Left: cur, Right: p.one, Out: out}, slot
	}
	d := p.d
	right := d.Plan.Schema()
	nk := len(d.OuterKeys)
	rightKeys := make([]expr.Expr, nk)
	for i := range rightKeys {
		rightKeys[i] = &expr.ColumnRef{Index: i, Typ: right[i].Type, Name: right[i].Name}
	}
	w := len(cur.Schema())
	slot := subquerySlot{col: w + nk, marker: w + nk + 1, empty: d.Empty}
	out := slices.Clone(cur.Schema())
	for _, rc := range right {
		out = append(out, plan.Column{Name: rc.Name, Type: rc.Type, Hidden: true})
	}
	return &plan.Join{Kind: plan.LeftJoin, Left: cur, Right: d.Plan, LeftKeys: d.OuterKeys, RightKeys: rightKeys, Out: out}, slot
}

// subquerySlot is where a hoisted subquery's value is in the joined row.
type subquerySlot struct {
	col int
	// marker, when >= 0, is a column that is NULL when the outer row found
	// no group of a decorrelated subquery: the value is then empty.
	marker int
	empty  types.Datum
	// member, for EXISTS / IN / NOT IN, computes the value from the
	// values of its parts, at parts.
	member *membership
	parts  []subquerySlot
}

// atMostOneRow reports whether n returns at most one row by its form.
func atMostOneRow(n plan.Node) bool {
	switch n := n.(type) {
	case *plan.Aggregate:
		return len(n.GroupBy) == 0
	case *plan.Project:
		return atMostOneRow(n.Input)
	case *plan.Filter:
		return atMostOneRow(n.Input)
	case *plan.Sort:
		return atMostOneRow(n.Input)
	case *plan.Values:
		return len(n.Rows) <= 1
	case *plan.Limit:
		return constAtMostOne(n.Limit) || atMostOneRow(n.Input)
	case *plan.TopN:
		return !n.WithTies && constAtMostOne(n.Limit) || atMostOneRow(n.Input)
	}
	return false
}

func constAtMostOne(e expr.Expr) bool {
	if e == nil {
		return false
	}
	v, err := constInt(e, "LIMIT")
	return err == nil && v >= 0 && v <= 1
}

// subqueryColumns evaluates inner over a row that carries the value of
// each of its scalar subqueries at slots[subquery].
type subqueryColumns struct {
	inner expr.Expr
	slots map[*plan.Subquery]subquerySlot
}

func (s *subqueryColumns) Type() types.Type { return s.inner.Type() }
func (s *subqueryColumns) String() string   { return s.inner.String() }
func (s *subqueryColumns) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	return s.inner.Eval(derive(ctx, func(c context.Context) context.Context { return plan.WithSubqueryRunner(c, s) }), row)
}

// derive copies ctx with its Go context wrapped by wrap (decorrelate.Derive).
func derive(ctx *expr.EvalContext, wrap func(context.Context) context.Context) *expr.EvalContext {
	return decorrelate.Derive(ctx, wrap)
}

// EvalSubquery reads the subquery's value from its column.
func (s *subqueryColumns) EvalSubquery(ctx *expr.EvalContext, q *plan.Subquery, row types.Row) (types.Datum, error) {
	slot, ok := s.slots[q]
	if !ok {
		return types.NullDatum, sqlerr.Errorf(sqlerr.InternalError, "subquery %s has no column in the view's row", q.Label)
	}
	if slot.member == nil {
		return slot.read(q, row)
	}
	vals := make([]types.Datum, len(slot.parts))
	for i, p := range slot.parts {
		v, err := p.read(q, row)
		if err != nil {
			return types.NullDatum, err
		}
		vals[i] = v
	}
	return slot.member.value(ctx, row, vals)
}

func (slot subquerySlot) read(q *plan.Subquery, row types.Row) (types.Datum, error) {
	if slot.col >= len(row) || slot.marker >= len(row) {
		return types.NullDatum, sqlerr.Errorf(sqlerr.InternalError, "subquery %s has no column in the view's row", q.Label)
	}
	if slot.marker >= 0 && row[slot.marker].IsNull() {
		return slot.empty, nil
	}
	return row[slot.col], nil
}

// findSubqueries lists the subquery expressions inside e (not looking
// into their plans, nor into expressions already hoisted). A walk cut at
// its depth bound finds nothing more; checkStreamable then refuses e.
func findSubqueries(e expr.Expr) []*plan.Subquery {
	var out []*plan.Subquery
	walkBound(e, func(x any) bool {
		switch x := x.(type) {
		case *plan.Subquery:
			out = append(out, x)
			return false
		case *subqueryColumns:
			return false
		}
		return true
	})
	return out
}
