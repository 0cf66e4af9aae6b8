package binder

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// aggCtx binds expressions above an Aggregate node.
type aggCtx struct {
	input  *scope // the Aggregate's input
	out    *scope // grouped plain columns, as seen by subqueries
	group  []expr.Expr
	keys   map[string]int // bound GROUP BY expression text -> index
	aggs   []*plan.AggCall
	aggIdx map[string]int
	// sets, with GROUPING SETS, ROLLUP or CUBE making more than one set,
	// lists each set's keys (indices in group); group then ends with the
	// set number, after the nKeys grouping expressions (grouping.go).
	sets  [][]int
	nKeys int
}

func (a *aggCtx) groupRef(i int) expr.Expr {
	g := a.group[i]
	return &expr.ColumnRef{Index: i, Typ: g.Type(), Name: g.String()}
}

// containsAggregate reports whether n has an aggregate call outside any
// subquery and outside window function OVER clauses' own calls.
func containsAggregate(n *pg.Node) bool {
	found := false
	walkAST(n, func(x *pg.Node) bool {
		if fc := x.GetFuncCall(); fc != nil {
			name := fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()
			if fc.Over == nil && (isAggregateName(name) || valueAggregate(fc) != nil) {
				found = true
				return false
			}
		}
		return !found
	})
	return found
}

// valueAggregate rewrites RisingWave's first_value and last_value
// aggregates (no OVER clause: first_value(x ORDER BY k), the x of the
// group's first row in that order) into the first element of an ordered
// array_agg: first_value(x ORDER BY k) is (array_agg(x ORDER BY k))[1] and
// last_value(x ORDER BY k) is the same over the reversed order, DISTINCT and
// FILTER kept. array_agg keeps NULL inputs, so a NULL first value is
// returned as NULL, and an empty group gives NULL, as RisingWave's do; its
// state retracts exactly, so the views stay right under deletes. It returns
// nil for any other call.
func valueAggregate(fc *pg.FuncCall) *pg.Node {
	if fc.Over != nil || len(fc.Funcname) != 1 || len(fc.Args) != 1 || fc.AggStar {
		return nil
	}
	name := strings.ToLower(fc.Funcname[0].GetString_().GetSval())
	if name != "first_value" && name != "last_value" {
		return nil
	}
	order := fc.AggOrder
	if name == "last_value" {
		order = make([]*pg.Node, len(fc.AggOrder))
		for i, o := range fc.AggOrder {
			sb := o.GetSortBy()
			if sb == nil {
				return nil
			}
			r := &pg.SortBy{Node: sb.Node, UseOp: sb.UseOp, Location: sb.Location}
			// Reversing ASC NULLS LAST (the default) gives DESC NULLS FIRST.
			desc := sb.SortbyDir == pg.SortByDir_SORTBY_DESC
			nullsFirst := sb.SortbyNulls == pg.SortByNulls_SORTBY_NULLS_FIRST ||
				(sb.SortbyNulls == pg.SortByNulls_SORTBY_NULLS_DEFAULT && desc)
			if len(sb.UseOp) > 0 {
				return nil
			}
			r.SortbyDir = pg.SortByDir_SORTBY_DESC
			if desc {
				r.SortbyDir = pg.SortByDir_SORTBY_ASC
			}
			r.SortbyNulls = pg.SortByNulls_SORTBY_NULLS_FIRST
			if nullsFirst {
				r.SortbyNulls = pg.SortByNulls_SORTBY_NULLS_LAST
			}
			order[i] = &pg.Node{Node: &pg.Node_SortBy{SortBy: r}}
		}
	}
	agg := &pg.FuncCall{
		Funcname:    []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: "array_agg"}}}},
		Args:        fc.Args,
		AggOrder:    order,
		AggFilter:   fc.AggFilter,
		AggDistinct: fc.AggDistinct,
		Funcformat:  fc.Funcformat,
		Location:    fc.Location,
	}
	one := &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Val: &pg.A_Const_Ival{Ival: &pg.Integer{Ival: 1}}, Location: fc.Location}}}
	return &pg.Node{Node: &pg.Node_AIndirection{AIndirection: &pg.A_Indirection{
		Arg:         &pg.Node{Node: &pg.Node_FuncCall{FuncCall: agg}},
		Indirection: []*pg.Node{{Node: &pg.Node_AIndices{AIndices: &pg.A_Indices{Uidx: one}}}},
	}}}
}

func containsWindow(n *pg.Node) bool {
	found := false
	walkAST(n, func(x *pg.Node) bool {
		if fc := x.GetFuncCall(); fc != nil && fc.Over != nil {
			found = true
		}
		return !found
	})
	return found
}

// aggHook binds n above the Aggregate when n is an aggregate call or
// matches a GROUP BY expression; handled is false to let the caller bind
// n structurally (its children come back here).
func (b *Binder) aggHook(n *pg.Node, ec *exprCtx) (expr.Expr, bool, error) {
	a := ec.agg
	if gf := n.GetGroupingFunc(); gf != nil {
		e, err := b.bindGrouping(gf, a, ec.clause) // see grouping.go
		return e, true, err
	}
	if fc := n.GetFuncCall(); fc != nil && fc.Over == nil {
		if rw := valueAggregate(fc); rw != nil {
			e, err := b.bindExpr(rw, ec)
			return e, true, err
		}
		name := fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()
		if isAggregateName(name) {
			call, err := b.bindAggCall(fc, name, ec)
			if err != nil {
				return nil, true, err
			}
			key := call.String()
			if len(call.OrderBy) > 0 {
				for _, k := range call.OrderBy {
					key += " " + k.String()
				}
			}
			i, ok := a.aggIdx[key]
			if !ok {
				i = len(a.aggs)
				a.aggs = append(a.aggs, call)
				a.aggIdx[key] = i
			}
			return &expr.ColumnRef{Index: len(a.group) + i, Typ: call.Type, Name: call.String()}, true, nil
		}
	}
	if n.GetSubLink() != nil || containsAggregate(n) || containsWindow(n) {
		return nil, false, nil
	}
	if n.GetAConst() != nil || n.GetParamRef() != nil {
		return nil, false, nil
	}
	e, err := b.bindExpr(n, &exprCtx{sc: a.input, clause: ec.clause})
	if err != nil {
		if n.GetColumnRef() != nil {
			return nil, true, err
		}
		return nil, false, nil
	}
	if i, ok := a.keys[e.String()]; ok {
		return a.groupRef(i), true, nil
	}
	if cr := n.GetColumnRef(); cr != nil {
		if _, outer := e.(*plan.OuterRef); outer {
			return e, true, nil
		}
		return nil, true, b.errorf(cr.Location, sqlerr.GroupingError,
			"column \"%s\" must appear in the GROUP BY clause or be used in an aggregate function", e.String())
	}
	return nil, false, nil
}
