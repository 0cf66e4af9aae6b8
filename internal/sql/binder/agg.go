package binder

import (
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
			if fc.Over == nil && isAggregateName(name) {
				found = true
				return false
			}
		}
		return !found
	})
	return found
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
	if fc := n.GetFuncCall(); fc != nil && fc.Over == nil {
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
