package binder

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// GROUP BY with GROUPING SETS, ROLLUP and CUBE (plan.Expand describes the
// plan). Binding follows PostgreSQL's parse analysis: each GROUP BY item
// stands for a list of sets (a plain expression for the one set holding
// it), the query's sets are the cross product of its items' lists, every
// set is made duplicate-free but duplicate sets are kept (GROUP BY
// DISTINCT drops them), and the distinct expressions of all sets become
// the Aggregate's keys, matched against the select list as for a plain
// GROUP BY. Above the Aggregate a key reads NULL in the rows of a set that
// does not group by it, in any expression (the Aggregate's output column
// is the Expand's NULLed copy).

// PostgreSQL's limits on the number of sets (parse_agg.c, parse_clause.c):
// 4096 sets in all, CUBE of at most 12 elements (4096 sets), and GROUPING
// of at most 31 arguments (its result is an int4 bitmask).
const (
	maxGroupingSets = 4096
	maxCubeElements = 12
	maxGroupingArgs = 31
)

// bindGroupBy binds GROUP BY items: ordinals and output-column aliases
// (when no input column has that name) refer to the select list. With
// more than one grouping set it fills ac.sets.
func (b *Binder) bindGroupBy(sel *pg.SelectStmt, targets []selItem, ac *aggCtx) error {
	in := &exprCtx{sc: ac.input, clause: "GROUP BY"}
	key := func(g *pg.Node) (int, error) { return b.bindGroupKey(g, targets, ac, in) }
	product := [][]int{{}}
	hasSets := false
	for _, g := range sel.GroupClause {
		var sets [][]int
		var err error
		if gs := g.GetGroupingSet(); gs != nil {
			hasSets = true
			sets, err = b.groupingSetSets(gs, key)
		} else {
			var ks []int
			ks, err = b.groupKeyList(g, key)
			sets = [][]int{ks}
		}
		if err != nil {
			return err
		}
		if len(product)*len(sets) > maxGroupingSets {
			return tooManyGroupingSets()
		}
		next := make([][]int, 0, len(product)*len(sets))
		for _, p := range product {
			for _, s := range sets {
				next = append(next, unionKeys(p, s))
			}
		}
		product = next
	}
	if sel.GroupDistinct {
		// GROUP BY DISTINCT drops duplicate sets (sets are sorted, so
		// equal sets compare equal).
		var kept [][]int
		for _, s := range product {
			if !slices.ContainsFunc(kept, func(k []int) bool { return slices.Equal(k, s) }) {
				kept = append(kept, s)
			}
		}
		product = kept
	}
	if hasSets && len(product) > 1 {
		ac.sets = product
	}
	// With one set (GROUP BY GROUPING SETS ((a, b)), GROUP BY ()) the set
	// holds every key: a plain GROUP BY, whose GROUPING() is 0.
	return nil
}

func tooManyGroupingSets() error {
	return sqlerr.Errorf(sqlerr.StatementTooComplex, "too many grouping sets present (maximum %d)", maxGroupingSets)
}

// unionKeys returns the sorted union of two key sets.
func unionKeys(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// groupKeyList binds one element of a GROUP BY list or of a ROLLUP/CUBE:
// a parenthesized list (a, b) (an implicit row constructor, which
// PostgreSQL reads as the list) or one expression.
func (b *Binder) groupKeyList(n *pg.Node, key func(*pg.Node) (int, error)) ([]int, error) {
	items := []*pg.Node{n}
	if r := n.GetRowExpr(); r != nil && r.RowFormat == pg.CoercionForm_COERCE_IMPLICIT_CAST {
		items = r.Args
	}
	var out []int
	for _, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return unionKeys(nil, out), nil
}

// groupingSetSets expands ROLLUP, CUBE, GROUPING SETS and () into their
// sets of key indices, in PostgreSQL's order.
func (b *Binder) groupingSetSets(gs *pg.GroupingSet, key func(*pg.Node) (int, error)) ([][]int, error) {
	switch gs.Kind {
	case pg.GroupingSetKind_GROUPING_SET_EMPTY:
		return [][]int{{}}, nil
	case pg.GroupingSetKind_GROUPING_SET_ROLLUP, pg.GroupingSetKind_GROUPING_SET_CUBE:
		if gs.Kind == pg.GroupingSetKind_GROUPING_SET_CUBE && len(gs.Content) > maxCubeElements {
			return nil, b.errorf(gs.Location, sqlerr.TooManyColumns, "CUBE is limited to %d elements", maxCubeElements)
		}
		elems := make([][]int, len(gs.Content))
		for i, c := range gs.Content {
			ks, err := b.groupKeyList(c, key)
			if err != nil {
				return nil, err
			}
			elems[i] = ks
		}
		var sets [][]int
		if gs.Kind == pg.GroupingSetKind_GROUPING_SET_ROLLUP {
			// ROLLUP(e1, ..., en): (e1..en), (e1..en-1), ..., ().
			for n := len(elems); n >= 0; n-- {
				var s []int
				for _, e := range elems[:n] {
					s = unionKeys(s, e)
				}
				sets = append(sets, s)
			}
			return sets, nil
		}
		// CUBE(e1, ..., en): every subset, bit i of the mask taking ei.
		for mask := 0; mask < 1<<len(elems); mask++ {
			var s []int
			for i, e := range elems {
				if mask&(1<<i) != 0 {
					s = unionKeys(s, e)
				}
			}
			sets = append(sets, s)
		}
		return sets, nil
	case pg.GroupingSetKind_GROUPING_SET_SETS:
		var sets [][]int
		for _, c := range gs.Content {
			var more [][]int
			if inner := c.GetGroupingSet(); inner != nil {
				var err error
				if more, err = b.groupingSetSets(inner, key); err != nil {
					return nil, err
				}
			} else {
				ks, err := b.groupKeyList(c, key)
				if err != nil {
					return nil, err
				}
				more = [][]int{ks}
			}
			if len(sets)+len(more) > maxGroupingSets {
				return nil, tooManyGroupingSets()
			}
			sets = append(sets, more...)
		}
		return sets, nil
	}
	return nil, unsupported("grouping set kind %s is not supported", gs.Kind)
}

// bindGroupKey binds one grouping expression and returns its index among
// ac's keys, adding it when new.
func (b *Binder) bindGroupKey(g *pg.Node, targets []selItem, ac *aggCtx, in *exprCtx) (int, error) {
	ast := g
	if c := g.GetAConst(); c != nil && c.GetIval() != nil {
		i := int(c.GetIval().Ival)
		if i < 1 || i > len(targets) {
			return 0, b.errorf(c.Location, sqlerr.InvalidColumnReference, "GROUP BY position %d is not in select list", i)
		}
		ast = targets[i-1].ast
	} else if c := g.GetAConst(); c != nil {
		// PostgreSQL reads an integer constant as a position and refuses
		// every other constant.
		return 0, b.errorf(c.Location, sqlerr.SyntaxError, "non-integer constant in GROUP BY")
	} else if cr := g.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
		name := cr.Fields[0].GetString_().Sval
		if _, ok, _ := ac.input.lookup("", name); !ok {
			for _, t := range targets {
				if t.name == name && t.e == nil {
					ast = t.ast
					break
				}
			}
		}
	}
	if containsAggregate(ast) {
		return 0, b.errorf(aggregateLocation(ast), sqlerr.GroupingError, "aggregate functions are not allowed in GROUP BY")
	}
	if containsWindow(ast) {
		return 0, b.errorf(windowLocation(ast), sqlerr.WindowingError, "window functions are not allowed in GROUP BY")
	}
	e, err := b.bindExpr(ast, in)
	if err != nil {
		return 0, err
	}
	if e.Type().Kind == types.KindUnknown {
		if e, err = expr.ResolveUnknown(e); err != nil {
			return 0, err
		}
	}
	s := e.String()
	if i, dup := ac.keys[s]; dup {
		return i, nil
	}
	ac.keys[s] = len(ac.group)
	ac.group = append(ac.group, e)
	return len(ac.group) - 1, nil
}

// addGroupingSetColumn makes the grouping-set number the Aggregate's last
// group key, after the grouping expressions; width is the width of the
// Aggregate's input (the Expand puts the set number after the input and
// the NULLed keys).
func (ac *aggCtx) addGroupingSetColumn(width int) {
	ac.nKeys = len(ac.group)
	ac.group = append(ac.group, &expr.ColumnRef{Index: width + ac.nKeys, Typ: plan.GroupingSetType, Name: "grouping_set"})
}

// groupingAggregate builds Expand and the Aggregate above it for a query
// with grouping sets.
func (ac *aggCtx) groupingAggregate(input plan.Node) *plan.Aggregate {
	width := len(input.Schema())
	keys := ac.group[:ac.nKeys]
	ex := &plan.Expand{Input: input, Keys: keys, Sets: ac.sets, Out: slices.Clone(input.Schema())}
	agg := &plan.Aggregate{Input: ex, Aggs: ac.aggs}
	for i, k := range keys {
		ex.Out = append(ex.Out, plan.Column{Name: k.String(), Type: k.Type()})
		agg.GroupBy = append(agg.GroupBy, &expr.ColumnRef{Index: width + i, Typ: k.Type(), Name: k.String()})
	}
	ex.Out = append(ex.Out, plan.Column{Name: "grouping_set", Type: plan.GroupingSetType})
	agg.GroupBy = append(agg.GroupBy, ac.group[ac.nKeys])
	for s, set := range ac.sets {
		if len(set) == 0 {
			row := make(types.Row, ac.nKeys, ac.nKeys+1)
			for i := range row {
				row[i] = types.NullDatum
			}
			agg.Always = append(agg.Always, append(row, types.DInt32(int32(s))))
		}
	}
	return agg
}

// bindGrouping binds GROUPING(args) above the Aggregate: each argument
// must be one of the grouping expressions.
func (b *Binder) bindGrouping(gf *pg.GroupingFunc, a *aggCtx, clause string) (expr.Expr, error) {
	if len(gf.Args) > maxGroupingArgs {
		return nil, b.errorf(gf.Location, sqlerr.TooManyArguments, "GROUPING must have fewer than %d arguments", maxGroupingArgs+1)
	}
	in := &exprCtx{sc: a.input, clause: clause}
	idx := make([]int, len(gf.Args))
	names := make([]string, len(gf.Args))
	for i, arg := range gf.Args {
		e, err := b.bindExpr(arg, in)
		if err != nil {
			return nil, err
		}
		if _, outer := e.(*plan.OuterRef); outer {
			// PostgreSQL evaluates it at the enclosing query's level, whose
			// grouping-set number a subquery does not see here.
			return nil, b.errAt(unsupported("GROUPING() of an enclosing query's grouping expressions in a subquery is not supported"), location(arg))
		}
		k, ok := a.keys[e.String()]
		if !ok {
			return nil, b.errorf(location(arg), sqlerr.GroupingError, "arguments to GROUPING must be grouping expressions of the associated query level")
		}
		idx[i], names[i] = k, e.String()
	}
	if a.sets == nil {
		// One grouping set: every argument is grouped in every row.
		return &expr.Const{Value: types.DInt32(0), Typ: types.Int32}, nil
	}
	g := &plan.GroupingFunc{Args: names, SetID: a.groupRef(a.nKeys), Values: make([]int32, len(a.sets))}
	for s, set := range a.sets {
		var mask int32
		for _, k := range idx {
			mask <<= 1
			if !slices.Contains(set, k) {
				mask |= 1
			}
		}
		g.Values[s] = mask
	}
	return g, nil
}

// containsGrouping reports whether n has a GROUPING() call outside any
// subquery: like an aggregate, it makes the query an aggregating one.
func containsGrouping(n *pg.Node) bool {
	found := false
	walkAST(n, func(x *pg.Node) bool {
		if x.GetGroupingFunc() != nil {
			found = true
		}
		return !found
	})
	return found
}
