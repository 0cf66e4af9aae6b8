package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// bindRegCast binds a cast of a string to an object-identifier type
// ('t'::regclass, 'int4'::regtype, 'public'::regnamespace,
// 'root'::regrole): the name is looked up by the catalog's function
// "<type>in" (regclassin, ...), as PostgreSQL's input functions do. ok is
// false when the cast is not one of these or the catalog does not provide
// the lookup; the cast then converts as to an integer.
func (b *Binder) bindRegCast(tn *pg.TypeName, arg expr.Expr) (expr.Expr, bool, error) {
	fc, isFC := b.cat.(FunctionCatalog)
	if !isFC || tn == nil || len(tn.Names) == 0 {
		return nil, false, nil
	}
	if k := arg.Type().Kind; k != types.KindVarchar && k != types.KindUnknown {
		return nil, false, nil
	}
	name := tn.Names[len(tn.Names)-1].GetString_().GetSval()
	switch name {
	case "regclass", "regtype", "regnamespace", "regrole", "regproc":
	default:
		return nil, false, nil
	}
	return fc.ResolveFunction(name+"in", []expr.Expr{arg})
}
