package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// bindSubLink binds EXISTS, IN / op ANY / op ALL and scalar subqueries.
// The subquery's scope has the current scope as parent, so its column
// references may be correlated (plan.OuterRef).
func (b *Binder) bindSubLink(sl *pg.SubLink, ec *exprCtx) (expr.Expr, error) {
	correlated := false
	parent := &scope{cols: ec.sc.cols, star: ec.sc.star, tables: ec.sc.tables, parent: ec.sc.parent,
		correlated: &correlated, width: ec.sc.width}
	if ec.agg != nil {
		parent = &scope{cols: ec.agg.out.cols, star: ec.agg.out.star, tables: ec.agg.out.tables,
			parent: ec.agg.out.parent, correlated: &correlated}
	}
	if sl.SubLinkType == pg.SubLinkType_ARRAY_SUBLINK {
		return b.bindArraySubLink(sl, ec) // see nullarray.go
	}
	sel := sl.Subselect.GetSelectStmt()
	q, err := b.bindSelect(sel, parent)
	if err != nil {
		return nil, err
	}
	if q, err = resolveUnknownColumns(q); err != nil {
		return nil, err
	}
	sch := visible(q.Schema())
	s := &plan.Subquery{Plan: q}
	switch sl.SubLinkType {
	case pg.SubLinkType_EXISTS_SUBLINK:
		s.Kind, s.Typ, s.Label = plan.ExistsSubquery, types.Bool, "EXISTS(subquery)"
	case pg.SubLinkType_EXPR_SUBLINK:
		if len(sch) != 1 {
			return nil, b.errorf(sl.Location, sqlerr.SyntaxError, "subquery must return only one column")
		}
		s.Kind, s.Typ, s.Label = plan.ScalarSubquery, sch[0].Type, "(subquery)"
	case pg.SubLinkType_ANY_SUBLINK, pg.SubLinkType_ALL_SUBLINK:
		if len(sch) != 1 {
			if len(sch) > 1 {
				return nil, b.errorf(sl.Location, sqlerr.SyntaxError, "subquery has too many columns")
			}
			return nil, b.errorf(sl.Location, sqlerr.SyntaxError, "subquery has too few columns")
		}
		test, err := b.bindExpr(sl.Testexpr, ec)
		if err != nil {
			return nil, err
		}
		op := "="
		if len(sl.OperName) > 0 {
			op = opName(sl.OperName)
		}
		test = b.retypeParam(test, sch[0].Type)
		// The comparison is bound against the pair (test, subquery column).
		cmp, err := expr.NewBinaryOp(op, &expr.ColumnRef{Index: 0, Typ: test.Type(), Name: test.String()},
			&expr.ColumnRef{Index: 1, Typ: sch[0].Type, Name: "subquery"})
		if err != nil {
			return nil, b.errAt(err, sl.Location)
		}
		if cmp.Type().Kind != types.KindBool {
			return nil, b.errorf(sl.Location, sqlerr.DatatypeMismatch, "operator %s must return type boolean, not type %s", op, cmp.Type().Name())
		}
		s.Test, s.Cmp, s.Typ = test, cmp, types.Bool
		if sl.SubLinkType == pg.SubLinkType_ANY_SUBLINK {
			s.Kind, s.Label = plan.AnySubquery, test.String()+" "+op+" ANY(subquery)"
		} else {
			s.Kind, s.Label = plan.AllSubquery, test.String()+" "+op+" ALL(subquery)"
		}
	case pg.SubLinkType_ARRAY_SUBLINK:
		return nil, unsupported("ARRAY(subquery) is not supported")
	default:
		return nil, unsupported("this kind of subquery is not supported")
	}
	// A subquery without visible-column projection may carry hidden
	// columns; keep only the visible ones for scalar/ANY use.
	if len(sch) != len(q.Schema()) {
		s.Plan = projectVisible(q)
	}
	s.Correlated = correlated
	return s, nil
}

func visible(s plan.Schema) plan.Schema {
	var out plan.Schema
	for _, c := range s {
		if !c.Hidden {
			out = append(out, c)
		}
	}
	return out
}

func projectVisible(q plan.Node) plan.Node {
	var exprs []expr.Expr
	var out plan.Schema
	for i, c := range q.Schema() {
		if !c.Hidden {
			exprs = append(exprs, &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name})
			out = append(out, c)
		}
	}
	return &plan.Project{Input: q, Exprs: exprs, Out: out}
}

// resolveUnknownColumns types still-unknown output columns as text.
func resolveUnknownColumns(q plan.Node) (plan.Node, error) {
	sch := q.Schema()
	need := false
	for _, c := range sch {
		if c.Type.Kind == types.KindUnknown {
			need = true
		}
	}
	if !need {
		return q, nil
	}
	// Fold into an existing projection where possible.
	if p, ok := q.(*plan.Project); ok {
		np := &plan.Project{Input: p.Input, Exprs: append([]expr.Expr(nil), p.Exprs...), Out: append(plan.Schema(nil), p.Out...)}
		for i, e := range np.Exprs {
			if e.Type().Kind == types.KindUnknown {
				r, err := expr.ResolveUnknown(e)
				if err != nil {
					return nil, err
				}
				np.Exprs[i] = r
				np.Out[i].Type = r.Type()
			}
		}
		return np, nil
	}
	exprs := make([]expr.Expr, len(sch))
	out := append(plan.Schema(nil), sch...)
	for i, c := range sch {
		var e expr.Expr = &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name}
		if c.Type.Kind == types.KindUnknown {
			r, err := expr.ResolveUnknown(e)
			if err != nil {
				return nil, err
			}
			e = r
			out[i].Type = r.Type()
		}
		exprs[i] = e
	}
	return &plan.Project{Input: q, Exprs: exprs, Out: out}, nil
}
