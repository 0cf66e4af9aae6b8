package binder

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// bindCallArgs binds a function call's arguments. Named arguments
// (make_interval(days => 2), PostgreSQL's NamedArgExpr) are placed at
// their parameter's position (expr.FuncParams); parameters left out take
// their defaults, and a left-out parameter without one makes the call
// 42883, as PostgreSQL finds no function to match.
func (b *Binder) bindCallArgs(name string, args []*pg.Node, ec *exprCtx) ([]expr.Expr, error) {
	named := false
	for _, a := range args {
		if a.GetNamedArgExpr() != nil {
			named = true
		}
	}
	if !named {
		return b.bindList(args, ec)
	}
	params := expr.FuncParams(name)
	out := make([]expr.Expr, len(params))
	var shown []string
	for i, a := range args {
		if na := a.GetNamedArgExpr(); na != nil {
			shown = append(shown, na.Name+" => ?")
			continue
		}
		shown = append(shown, "?")
		if i >= len(params) {
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s(%s) does not exist", name, strings.Join(shown, ", "))
		}
		e, err := b.bindExpr(a, ec)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	for _, a := range args {
		na := a.GetNamedArgExpr()
		if na == nil {
			continue
		}
		idx := -1
		for j, p := range params {
			if p.Name == na.Name {
				idx = j
			}
		}
		if idx < 0 {
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s(%s) does not exist", name, strings.Join(shown, ", ")).
				WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
		}
		if out[idx] != nil {
			return nil, sqlerr.Errorf(sqlerr.SyntaxError, "argument name \"%s\" used more than once", na.Name)
		}
		e, err := b.bindExpr(na.Arg, ec)
		if err != nil {
			return nil, err
		}
		out[idx] = e
	}
	for j, e := range out {
		if e != nil {
			continue
		}
		if params[j].Default == nil {
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s(%s) does not exist", name, strings.Join(shown, ", ")).
				WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
		}
		out[j] = params[j].Default
	}
	return out, nil
}
