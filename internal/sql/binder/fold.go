package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// foldConstant evaluates e at bind time when its syntax n makes the value
// independent of rows, parameters, the session and the clock: literals
// combined by operators, boolean logic, NULL tests and casts to
// numeric/boolean types. Folding anything that reads the session (time
// zone, now()) would freeze it into a prepared statement, so those are
// left alone. A failing evaluation is left to execution (where PostgreSQL
// reports it too).
func foldConstant(n *pg.Node, e expr.Expr) expr.Expr {
	if _, isConst := e.(*expr.Const); isConst || !foldableType(e.Type()) || !foldableAST(n) {
		return e
	}
	d, err := e.Eval(&expr.EvalContext{}, nil)
	if err != nil {
		return e
	}
	return &expr.Const{Value: d, Typ: e.Type()}
}

func foldableType(t types.Type) bool {
	switch t.Kind {
	case types.KindBool, types.KindInt16, types.KindInt32, types.KindInt64,
		types.KindFloat32, types.KindFloat64, types.KindNumeric:
		return true
	}
	return false
}

func foldableAST(n *pg.Node) bool {
	ok := true
	walkAST(n, func(x *pg.Node) bool {
		switch {
		case x.GetAConst() != nil:
			if x.GetAConst().GetSval() != nil {
				ok = false // a string literal's meaning may depend on the session
			}
		case x.GetAExpr() != nil:
			switch x.GetAExpr().Kind {
			case pg.A_Expr_Kind_AEXPR_OP, pg.A_Expr_Kind_AEXPR_DISTINCT, pg.A_Expr_Kind_AEXPR_NOT_DISTINCT,
				pg.A_Expr_Kind_AEXPR_NULLIF, pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
			default:
				ok = false
			}
		case x.GetBoolExpr() != nil, x.GetNullTest() != nil, x.GetBooleanTest() != nil:
		case x.GetTypeCast() != nil:
			t, err := ResolveTypeName(x.GetTypeCast().TypeName)
			if err != nil || !foldableType(t) {
				ok = false
			}
		case x.GetList() != nil:
		default:
			ok = false
		}
		return ok
	})
	return ok
}
