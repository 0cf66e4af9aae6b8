package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// WITH RECURSIVE r AS (base UNION [ALL] recursive): base is bound first
// and gives r its columns; the recursive term is bound with r standing for
// a WorkTable (the rows of the previous step), and its columns must have
// base's types. The result is a plan.RecursiveUnion, run by the batch
// engine only (the stream planner refuses it over a relation).

// selfReferences counts the references to the WITH query name in n (FROM
// items naming it without a schema).
func selfReferences(n *pg.Node, name string) int {
	refs := 0
	walkNodes(n.ProtoReflect(), func(x *pg.Node) *pg.Node { // see udf.go
		if rv := x.GetRangeVar(); rv != nil && rv.Schemaname == "" && rv.Relname == name {
			refs++
		}
		return nil
	})
	return refs
}

func (b *Binder) bindRecursiveCTE(cte *pg.CommonTableExpr, q *pg.SelectStmt, frame map[string]*cteDef, outer *scope) (plan.Node, error) {
	name := cte.Ctename
	if q.Op != pg.SetOperation_SETOP_UNION || q.Larg == nil || q.Rarg == nil {
		return nil, b.errorf(cte.Location, "42P19", "recursive query \"%s\" does not have the form non-recursive-term UNION [ALL] recursive-term", name)
	}
	if cte.SearchClause != nil || cte.CycleClause != nil {
		return nil, b.errorf(cte.Location, sqlerr.FeatureNotSupported, "SEARCH and CYCLE clauses of recursive queries are not supported")
	}
	if len(q.SortClause) > 0 {
		return nil, b.errorf(cte.Location, sqlerr.FeatureNotSupported, "ORDER BY in a recursive query is not implemented")
	}
	if q.LimitCount != nil || q.LimitOffset != nil {
		return nil, b.errorf(cte.Location, sqlerr.FeatureNotSupported, "OFFSET/LIMIT in a recursive query is not implemented")
	}
	if q.WithClause != nil {
		return nil, b.errorf(cte.Location, sqlerr.FeatureNotSupported, "WITH inside a recursive query is not supported")
	}
	if selfReferences(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: q.Larg}}, name) > 0 {
		return nil, b.errorf(cte.Location, "42P19", "recursive reference to query \"%s\" must not appear within its non-recursive term", name)
	}
	if selfReferences(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: q.Rarg}}, name) > 1 {
		return nil, b.errorf(cte.Location, "42P19", "recursive reference to query \"%s\" must not appear more than once", name)
	}
	base, err := b.bindSelect(q.Larg, outer)
	if err != nil {
		return nil, err
	}
	if base, err = resolveUnknownColumns(base); err != nil {
		return nil, err
	}
	if base, err = b.aliasColumns(base, &pg.Alias{Aliasname: name, Colnames: cte.Aliascolnames}, cte.Location); err != nil {
		return nil, err
	}
	out := base.Schema()
	id := plan.NewWorkID()
	frame[name] = &cteDef{node: &plan.WorkTable{WorkID: id, Name: name, Out: out}}
	rec, err := b.bindSelect(q.Rarg, outer)
	delete(frame, name)
	if err != nil {
		return nil, err
	}
	rs := rec.Schema()
	if len(rs) != len(out) {
		return nil, b.errorf(cte.Location, sqlerr.SyntaxError, "each UNION query must have the same number of columns")
	}
	proj := &plan.Project{Input: rec, Out: out}
	for i, c := range rs {
		var e expr.Expr = &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name}
		want := out[i].Type
		if c.Type.Kind != want.Kind || c.Type.Text != want.Text || c.Type.IsArray() && c.Type != want {
			if c.Type.Kind != types.KindUnknown && c.Type.Kind != types.KindNull {
				return nil, b.errorf(cte.Location, sqlerr.DatatypeMismatch, "recursive query \"%s\" column %d has type %s in non-recursive term but type %s overall", name, i+1, want.Name(), c.Type.Name())
			}
			if e, err = expr.NewCast(e, want, expr.CastImplicit); err != nil {
				return nil, b.errAt(err, cte.Location)
			}
		}
		proj.Exprs = append(proj.Exprs, e)
	}
	return &plan.RecursiveUnion{Base: base, Recursive: proj, All: q.All, WorkID: id, Out: out}, nil
}
