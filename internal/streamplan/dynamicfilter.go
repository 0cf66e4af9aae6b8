package streamplan

import (
	"slices"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// Dynamic filters: a WHERE conjunct comparing an expression of the row
// with an uncorrelated scalar subquery that returns at most one row,
//
//	SELECT * FROM t WHERE v > (SELECT max(x) FROM u)
//
// becomes an OpDynamicFilter (exec.DynamicFilter, RisingWave's
// DynamicFilter) with t's rows on the left and the subquery's one value
// on the right. Its state keeps the left rows ordered by the compared
// expression, so a new bound emits only the rows between the old and the
// new one; subquery.go's LEFT JOIN ON true would retract and re-emit every
// row. Other subqueries in the WHERE stay there (the conjuncts below the
// filter are planned as before). The filter runs in one actor (both inputs
// exchanged to a single distribution): the bound is one value.

// DynamicSpec is an OpDynamicFilter's comparison.
type DynamicSpec struct {
	// Key is the row's side of the comparison, over the left input.
	Key expr.Expr
	// Cmp compares (key, bound), bound against the two-column row.
	Cmp expr.Expr
	// Less: the operator is < or <=, so the rows that pass are those with
	// the lowest keys; otherwise (> or >=) the highest.
	Less bool
}

// dynamicFilter plans n when it is a filter (a Filter, or a Scan with a
// pushed-down filter) with a dynamic-filter conjunct; ok is false when it
// has none.
func (b *builder) dynamicFilter(n plan.Node) (out *Node, ok bool, err error) {
	var cond expr.Expr
	var input plan.Node
	switch n := n.(type) {
	case *plan.Filter:
		cond, input = n.Cond, n.Input
	case *plan.Scan:
		if n.Filter == nil {
			return nil, false, nil
		}
		bare := *n
		bare.Filter, bare.KeyPrefix = nil, nil
		cond, input = n.Filter, &bare
	default:
		return nil, false, nil
	}
	conjuncts := expr.Conjuncts(cond)
	at, spec, sub, bound := -1, (*DynamicSpec)(nil), (*plan.Subquery)(nil), expr.Expr(nil)
	for i, c := range conjuncts {
		if spec, sub, bound = dynamicConjunct(c); spec != nil {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, false, nil
	}
	rest := slices.Delete(slices.Clone(conjuncts), at, at+1)
	if len(rest) > 0 {
		r := rest[0]
		for _, c := range rest[1:] {
			var ok bool
			if r, ok = and(r, c); !ok {
				return nil, false, nil
			}
		}
		input = &plan.Filter{Input: input, Cond: r}
	}
	left, err := b.build(input)
	if err != nil {
		return nil, true, err
	}
	// The right side: the subquery's value, then the comparison's side
	// over it (casts of the subquery), one column.
	col := 0
	for i, c := range sub.Plan.Schema() {
		if !c.Hidden {
			col = i
			break
		}
	}
	c := sub.Plan.Schema()[col]
	one := &plan.Project{Input: sub.Plan, Exprs: []expr.Expr{&expr.ColumnRef{Index: col, Typ: c.Type, Name: c.Name}},
		Out: plan.Schema{{Name: c.Name, Type: c.Type}}}
	boundExpr := &subqueryColumns{inner: bound, slots: map[*plan.Subquery]subquerySlot{sub: {col: 0, marker: -1}}}
	right, err := b.build(&plan.Project{Input: one, Exprs: []expr.Expr{boundExpr}, Out: plan.Schema{{Name: "bound", Type: bound.Type()}}})
	if err != nil {
		return nil, true, err
	}
	left = exchange(left, Dist{Kind: DistSingle})
	right = exchange(right, Dist{Kind: DistSingle})
	return &Node{Op: OpDynamicFilter, Inputs: []*Node{left, right}, Schema: left.Schema, Key: left.Key,
		Dist: Dist{Kind: DistSingle}, Cond: conjuncts[at], Dynamic: spec}, true, nil
}

// dynamicConjunct returns c as a dynamic filter: its spec, its subquery
// and the subquery's side of the comparison (bound over the outer row, but
// reading nothing of it but the subquery); nil when c is not one.
func dynamicConjunct(c expr.Expr) (*DynamicSpec, *plan.Subquery, expr.Expr) {
	op, l, r, ok := expr.Comparison(c)
	if !ok {
		return nil, nil, nil
	}
	flip := map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<="}
	if _, ordered := flip[op]; !ordered {
		return nil, nil, nil
	}
	if len(findSubqueries(l)) > 0 {
		l, r, op = r, l, flip[op]
	}
	subs := findSubqueries(r)
	if len(subs) != 1 || len(findSubqueries(l)) > 0 {
		return nil, nil, nil
	}
	s := subs[0]
	if s.Kind != plan.ScalarSubquery || s.Correlated || !atMostOneRow(s.Plan) || readsRowOutsideSubqueries(r) {
		return nil, nil, nil
	}
	if l.Type().Kind != r.Type().Kind {
		return nil, nil, nil // the state orders keys and bounds as one type
	}
	if name, tooDeep := volatileCall(l, r); name != "" || tooDeep || readsOuter(l) {
		return nil, nil, nil
	}
	cmp, err := expr.NewBinaryOp(op, &expr.ColumnRef{Index: 0, Typ: l.Type(), Name: l.String()},
		&expr.ColumnRef{Index: 1, Typ: r.Type(), Name: r.String()})
	if err != nil || cmp.Type().Kind != types.KindBool {
		return nil, nil, nil
	}
	return &DynamicSpec{Key: l, Cmp: cmp, Less: op == "<" || op == "<="}, s, r
}

// readsRowOutsideSubqueries reports whether e reads a column of its row
// other than through its subqueries.
func readsRowOutsideSubqueries(e expr.Expr) bool {
	found := false
	complete := walkBound(e, func(x any) bool {
		switch x.(type) {
		case *plan.Subquery:
			return false
		case *expr.ColumnRef, *plan.OuterRef:
			found = true
		}
		return !found
	})
	return found || !complete
}
