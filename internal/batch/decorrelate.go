package batch

import (
	"context"
	"slices"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/decorrelate"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Correlated scalar subqueries (TPC-H's Q2, Q17, Q20 shape) are not run
// once per outer row when internal/sql/decorrelate can rewrite them (an
// aggregate without GROUP BY correlated by equalities): a Filter
//
//	Filter v > (SELECT 0.2 * avg(w) FROM t2 WHERE t2.g = t1.g)
//	  t1
//
// becomes
//
//	Project t1's columns
//	  Filter v > $value          ($value: the empty value when the marker is NULL)
//	    Join LEFT ON t1.g = sub.g
//	      t1
//	      Project [g, 0.2 * avg, true]
//	        Agg avg(w) GROUP BY t2.g
//	          t2
//
// and a Project likewise (without the projection back). An outer row
// without a group (no inner row, or a NULL key) reads the subquery's value
// over no rows (count 0, other aggregates NULL). Subqueries of any other
// form keep their per-row evaluation (subquery.go). The rewrite applies
// wherever a plan is built, so a subquery's own plan (the IN subquery of
// TPC-H Q20) benefits too.

// decorrelated returns n rewritten as above, or nil when n holds no
// correlated subquery that decorrelates; the answer is kept for the
// execution (a correlated subquery's plan is built once per outer row).
func (r *runner) decorrelated(n plan.Node) plan.Node {
	if r.plain[n] {
		return nil
	}
	if d, ok := r.rewrites[n]; ok {
		return d
	}
	d := decorrelateNode(n)
	r.rewrites[n] = d
	return d
}

// buildDecorrelated builds d, the decorrelated plan of n, to fall back to
// n as written when d fails before its first row. The grouped subquery
// computes every group, also those no outer row asks for (PostgreSQL runs
// the subquery only for the outer rows): an error there (division by
// zero, overflow, memory) is not the query's. The grouped side is read
// in full when the join is first asked for a row, so nothing has been
// returned yet; an error of the outer side recurs as written.
func (r *runner) buildDecorrelated(n, d plan.Node) (executor, error) {
	ex, err := r.build(d)
	if err != nil {
		r.plain[n] = true
		return r.build(n)
	}
	return &fallbackExec{r: r, cur: ex, orig: n}, nil
}

type fallbackExec struct {
	r       *runner
	cur     executor
	orig    plan.Node
	started bool
}

func (f *fallbackExec) Next(ctx context.Context) (types.Row, error) {
	row, err := f.cur.Next(ctx)
	if f.started || err == nil || sqlerr.Code(err) == sqlerr.QueryCanceled {
		f.started = true
		return row, err
	}
	f.started = true
	f.cur.Close()
	f.r.plain[f.orig] = true
	ex, berr := f.r.build(f.orig)
	if berr != nil {
		f.cur = &errExec{err: berr}
		return nil, berr
	}
	f.cur = ex
	return ex.Next(ctx)
}

func (f *fallbackExec) Close() { f.cur.Close() }

type errExec struct{ err error }

func (e *errExec) Next(context.Context) (types.Row, error) { return nil, e.err }
func (e *errExec) Close()                                  {}

// decorrelateNode rewrites a Filter or Project, or the WHERE conjuncts
// the binder pushed into a Scan or an inner Join's condition (nil: nothing
// to rewrite).
func decorrelateNode(n plan.Node) plan.Node {
	switch n := n.(type) {
	case *plan.Scan:
		keep, lift := splitCorrelated(n.Filter)
		if lift == nil {
			return nil
		}
		// The key range and index stay: the rows they leave out fail a
		// conjunct still applied, here or above.
		bare := *n
		bare.Filter = keep
		return decorrelateNode(&plan.Filter{Input: &bare, Cond: lift})
	case *plan.Join:
		if n.Kind != plan.InnerJoin || n.NullAware || len(n.Out) != len(n.Left.Schema())+len(n.Right.Schema()) {
			return nil
		}
		keep, lift := splitCorrelated(n.Cond)
		if lift == nil {
			return nil
		}
		bare := *n
		bare.Cond = keep
		return decorrelateNode(&plan.Filter{Input: &bare, Cond: lift})
	case *plan.Filter:
		joined, slots := joinCorrelated(n.Input, []expr.Expr{n.Cond})
		if joined == nil {
			return nil
		}
		f := &plan.Filter{Input: joined, Cond: &hoisted{inner: n.Cond, slots: slots}}
		in := n.Input.Schema()
		exprs := make([]expr.Expr, len(in))
		for i, c := range in {
			exprs[i] = &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name}
		}
		return &plan.Project{Input: f, Exprs: exprs, Out: in}
	case *plan.Project:
		joined, slots := joinCorrelated(n.Input, n.Exprs)
		if joined == nil {
			return nil
		}
		exprs := make([]expr.Expr, len(n.Exprs))
		for i, e := range n.Exprs {
			if len(correlatedScalars(e)) > 0 {
				e = &hoisted{inner: e, slots: slots}
			}
			exprs[i] = e
		}
		return &plan.Project{Input: joined, Exprs: exprs, Out: n.Out}
	}
	return nil
}

// decorrelateTree applies decorrelateNode throughout a plan (not into
// subqueries' plans): what EXPLAIN shows.
func decorrelateTree(n plan.Node) plan.Node {
	if d := decorrelateNode(n); d != nil {
		n = d
	}
	switch n := n.(type) {
	case *plan.Filter:
		c := *n
		c.Input = decorrelateTree(n.Input)
		return &c
	case *plan.Project:
		c := *n
		c.Input = decorrelateTree(n.Input)
		return &c
	case *plan.Aggregate:
		c := *n
		c.Input = decorrelateTree(n.Input)
		return &c
	case *plan.Join:
		c := *n
		c.Left, c.Right = decorrelateTree(n.Left), decorrelateTree(n.Right)
		return &c
	case *plan.Sort:
		c := *n
		c.Input = decorrelateTree(n.Input)
		return &c
	case *plan.TopN:
		c := *n
		c.Input = decorrelateTree(n.Input)
		return &c
	case *plan.Limit:
		c := *n
		c.Input = decorrelateTree(n.Input)
		return &c
	case *plan.Distinct:
		c := *n
		c.Input = decorrelateTree(n.Input)
		return &c
	case *plan.SetOp:
		c := *n
		c.Left, c.Right = decorrelateTree(n.Left), decorrelateTree(n.Right)
		return &c
	case *plan.Window:
		c := *n
		c.Input = decorrelateTree(n.Input)
		return &c
	}
	return n
}

// splitCorrelated splits cond's conjuncts into those without and those
// with a correlated scalar subquery (each nil when there are none; lift
// also nil when they cannot be rejoined).
func splitCorrelated(cond expr.Expr) (keep, lift expr.Expr) {
	if cond == nil {
		return nil, nil
	}
	ok := true
	and := func(a, b expr.Expr) expr.Expr {
		if a == nil {
			return b
		}
		e, err := expr.NewBinaryOp("AND", a, b)
		ok = ok && err == nil
		return e
	}
	for _, c := range expr.Conjuncts(cond) {
		if len(correlatedScalars(c)) > 0 {
			lift = and(lift, c)
		} else {
			keep = and(keep, c)
		}
	}
	if !ok {
		return cond, nil
	}
	return keep, lift
}

// correlatedScalars lists the correlated scalar subqueries in e (not
// looking into subqueries, nor into expressions already rewritten).
func correlatedScalars(e expr.Expr) []*plan.Subquery {
	var out []*plan.Subquery
	plan.WalkBound(e, func(x any) bool {
		switch x := x.(type) {
		case *plan.Subquery:
			if x.Kind == plan.ScalarSubquery && x.Correlated && !slices.Contains(out, x) {
				out = append(out, x)
			}
			return false
		case *hoisted:
			return false
		}
		return true
	})
	return out
}

// joinCorrelated LEFT-joins in with the grouped plan of every correlated
// scalar subquery in es that decorrelates. It returns a nil plan when none
// does.
func joinCorrelated(in plan.Node, es []expr.Expr) (plan.Node, map[*plan.Subquery]slot) {
	var subs []*plan.Subquery
	for _, e := range es {
		for _, s := range correlatedScalars(e) {
			if !slices.Contains(subs, s) {
				subs = append(subs, s)
			}
		}
	}
	slots := map[*plan.Subquery]slot{}
	cur := in
	for _, s := range subs {
		col, visible := 0, 0
		for i, c := range s.Plan.Schema() {
			if !c.Hidden {
				if visible == 0 {
					col = i
				}
				visible++
			}
		}
		if visible != 1 {
			continue // the per-row evaluation reports it
		}
		d := decorrelate.ScalarSubquery(s, col)
		if d == nil {
			continue
		}
		right := d.Plan.Schema()
		nk := len(d.OuterKeys)
		rightKeys := make([]expr.Expr, nk)
		for i := range rightKeys {
			rightKeys[i] = &expr.ColumnRef{Index: i, Typ: right[i].Type, Name: right[i].Name}
		}
		w := len(cur.Schema())
		out := slices.Clone(cur.Schema())
		for _, rc := range right {
			out = append(out, plan.Column{Name: rc.Name, Type: rc.Type, Hidden: true})
		}
		slots[s] = slot{col: w + nk, marker: w + nk + 1, empty: d.Empty}
		cur = &plan.Join{Kind: plan.LeftJoin, Left: cur, Right: d.Plan, LeftKeys: d.OuterKeys, RightKeys: rightKeys, Out: out}
	}
	if len(slots) == 0 {
		return nil, nil
	}
	return cur, slots
}

// slot is where a decorrelated subquery's value is in the joined row.
type slot struct {
	col    int
	marker int // NULL when the outer row found no group: the value is empty
	empty  types.Datum
}

// hoisted evaluates inner over a joined row, reading the subqueries of
// slots from their columns; other subqueries go to the runner it found.
type hoisted struct {
	inner expr.Expr
	slots map[*plan.Subquery]slot
}

func (h *hoisted) Type() types.Type { return h.inner.Type() }
func (h *hoisted) String() string   { return h.inner.String() }
func (h *hoisted) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	var base context.Context
	if ctx != nil {
		base = ctx.Ctx
	}
	r := &hoistedRunner{h: h, prev: plan.SubqueryRunnerFrom(base)}
	return h.inner.Eval(decorrelate.Derive(ctx, func(c context.Context) context.Context { return plan.WithSubqueryRunner(c, r) }), row)
}

type hoistedRunner struct {
	h    *hoisted
	prev plan.SubqueryRunner
}

func (r *hoistedRunner) EvalSubquery(ctx *expr.EvalContext, q *plan.Subquery, row types.Row) (types.Datum, error) {
	s, ok := r.h.slots[q]
	if !ok {
		if r.prev == nil {
			return types.NullDatum, sqlerr.New(sqlerr.InternalError, "subquery evaluated without a runner")
		}
		return r.prev.EvalSubquery(decorrelate.Derive(ctx, func(c context.Context) context.Context { return plan.WithSubqueryRunner(c, r.prev) }), q, row)
	}
	if s.col >= len(row) || s.marker >= len(row) {
		return types.NullDatum, sqlerr.Errorf(sqlerr.InternalError, "subquery %s has no column in the row", q.Label)
	}
	if row[s.marker].IsNull() {
		return s.empty, nil
	}
	return row[s.col], nil
}
