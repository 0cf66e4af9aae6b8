package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// Arrays (expr/array.go has the semantics): ARRAY[...], subscripts and
// slices, op ANY/ALL (array).

// bindArrayExpr binds ARRAY[e, ...]; want is the array type it is cast to
// (ARRAY[]::int[]), or the zero Type.
func (b *Binder) bindArrayExpr(ae *pg.A_ArrayExpr, want types.Type, ec *exprCtx) (expr.Expr, error) {
	for _, n := range ae.Elements {
		if n.GetAArrayExpr() != nil {
			return nil, b.errAt(unsupported("multidimensional arrays are not supported"), ae.Location)
		}
	}
	elems, err := b.bindList(ae.Elements, ec)
	if err != nil {
		return nil, err
	}
	if want.IsArray() {
		// ARRAY[...]::t[] casts each element to t explicitly, as
		// PostgreSQL does (ARRAY[1::bigint]::int[] is {1}).
		for i := range elems {
			elems[i] = b.retypeParam(elems[i], want.ElemType())
			if elems[i].Type().Kind != types.KindUnknown && !elems[i].Type().Equal(want.ElemType()) {
				if elems[i], err = expr.NewCast(elems[i], want.ElemType(), expr.CastExplicit); err != nil {
					return nil, b.errAt(err, ae.Location)
				}
			}
		}
	}
	e, err := expr.NewArray(elems, want)
	if err != nil {
		return nil, b.errAt(err, ae.Location)
	}
	if want.IsArray() && want.Mod >= 0 {
		return expr.NewCast(e, want, expr.CastExplicit)
	}
	return e, nil
}

// arraySubscript binds e[i] or e[lo:hi] for an array e.
func (b *Binder) arraySubscript(e expr.Expr, ix *pg.A_Indices, ec *exprCtx) (expr.Expr, error) {
	bind := func(n *pg.Node) (expr.Expr, error) {
		if n == nil {
			return nil, nil
		}
		x, err := b.bindExpr(n, ec)
		if err != nil {
			return nil, err
		}
		return b.retypeParam(x, types.Int32), nil
	}
	hi, err := bind(ix.Uidx)
	if err != nil {
		return nil, err
	}
	if !ix.IsSlice {
		return expr.NewArraySubscript(e, hi)
	}
	lo, err := bind(ix.Lidx)
	if err != nil {
		return nil, err
	}
	return expr.NewArraySlice(e, lo, hi)
}

// arrayCompare binds l op ANY/ALL (r) for an array r or an untyped
// literal or parameter ('{1,2}', $1); ok is false otherwise.
func (b *Binder) arrayCompare(op, q string, l, r expr.Expr) (expr.Expr, bool, error) {
	if p, isParam := r.(*plan.Param); isParam && p.Typ.Kind == types.KindUnknown && l.Type().CanBeArrayElem() {
		r = b.retypeParam(r, types.ArrayOf(l.Type()))
	}
	if !r.Type().IsArray() && r.Type().Kind != types.KindUnknown {
		return nil, false, nil
	}
	e, err := expr.NewArrayCompare(op, l, r, q == "ALL")
	return e, true, err
}

func argTypeNames(args []expr.Expr) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += ", "
		}
		s += a.Type().Name()
	}
	return s
}

// bindArrayUnnest binds unnest(arr) in FROM, arr not referring to the
// FROM list: a table function with one column of the element type (and
// ordinality).
func (b *Binder) bindArrayUnnest(rf *pg.RangeFunction, arg expr.Expr, outer *scope) (*rel, error) {
	colName, alias := "unnest", "unnest"
	if rf.Alias != nil {
		alias, colName = rf.Alias.Aliasname, rf.Alias.Aliasname
		if len(rf.Alias.Colnames) > 0 {
			colName = rf.Alias.Colnames[0].GetString_().GetSval()
		}
	}
	sch := plan.Schema{{Name: colName, Type: arg.Type().ElemType(), Table: alias}}
	if rf.Ordinality {
		on := "ordinality"
		if rf.Alias != nil && len(rf.Alias.Colnames) > 1 {
			on = rf.Alias.Colnames[1].GetString_().GetSval()
		}
		sch = append(sch, plan.Column{Name: on, Type: types.Int64, Table: alias})
	}
	return b.leaf(&plan.TableFunc{Name: "unnest", Args: []expr.Expr{arg}, Out: sch, WithOrdinality: rf.Ordinality}, alias, outer), nil
}
