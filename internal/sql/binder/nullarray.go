package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// Runnel has no array type. The array columns of the virtual system
// catalogs (pg_class.reloptions, pg_policy.polroles, ...) are NULL text,
// and the catalog queries of psql and drivers apply array operators to
// them. The constructs below accept those queries with PostgreSQL's
// result for a NULL (or, for ARRAY(subquery), empty) array and fail with
// 0A000 at run time on any real array value:
//
//   - x op ANY/ALL (arr): NULL when arr is NULL;
//   - ARRAY(subquery): NULL when the subquery returns no rows (PostgreSQL
//     returns an empty array, which array_to_string prints as '');
//   - unnest(arr) in FROM: no rows when arr is NULL.

// nullArrayOp is x op ANY/ALL (arr) for an array that can only be NULL.
type nullArrayOp struct {
	arr   expr.Expr
	label string
}

func (n *nullArrayOp) Type() types.Type { return types.Bool }
func (n *nullArrayOp) String() string   { return n.label }
func (n *nullArrayOp) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	v, err := n.arr.Eval(ctx, row)
	if err != nil || v.IsNull() {
		return types.NullDatum, err
	}
	return types.NullDatum, unsupported("arrays are not supported")
}

func (b *Binder) bindNullArrayOp(a *pg.A_Expr, ec *exprCtx) (expr.Expr, error) {
	l, err := b.bindExpr(a.Lexpr, ec)
	if err != nil {
		return nil, err
	}
	r, err := b.bindExpr(a.Rexpr, ec)
	if err != nil {
		return nil, err
	}
	q := "ANY"
	if a.Kind == pg.A_Expr_Kind_AEXPR_OP_ALL {
		q = "ALL"
	}
	if e, ok, err := catalogArrayOp(opName(a.Name), q, l, r); ok || err != nil {
		return e, err // see catalogarray.go
	}
	if e, ok, err := b.arrayCompare(opName(a.Name), q, l, r); ok || err != nil {
		return e, err // see array.go
	}
	return &nullArrayOp{arr: r, label: l.String() + " " + opName(a.Name) + " " + q + "(" + r.String() + ")"}, nil
}

// emptyArraySubquery is ARRAY(subquery) whose subquery must return no
// rows; exists is EXISTS(subquery).
type emptyArraySubquery struct {
	exists expr.Expr
}

func (e *emptyArraySubquery) Type() types.Type { return types.Text }
func (e *emptyArraySubquery) String() string   { return "ARRAY(subquery)" }
func (e *emptyArraySubquery) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	v, err := e.exists.Eval(ctx, row)
	if err != nil || v.IsNull() || !v.Bool() {
		return types.NullDatum, err
	}
	return types.NullDatum, unsupported("ARRAY(subquery) is not supported")
}

func (b *Binder) bindArraySubLink(sl *pg.SubLink, ec *exprCtx) (expr.Expr, error) {
	ex := &pg.SubLink{SubLinkType: pg.SubLinkType_EXISTS_SUBLINK, Subselect: sl.Subselect, Location: sl.Location}
	e, err := b.bindSubLink(ex, ec)
	if err != nil {
		return nil, err
	}
	return &emptyArraySubquery{exists: e}, nil
}

// isNullArray is a filter condition: false for a NULL array, an error
// otherwise.
type isNullArray struct {
	arr expr.Expr
}

func (n *isNullArray) Type() types.Type { return types.Bool }
func (n *isNullArray) String() string   { return "unnest(" + n.arr.String() + ")" }
func (n *isNullArray) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	v, err := n.arr.Eval(ctx, row)
	if err != nil || v.IsNull() {
		return types.DBool(false), err
	}
	return types.NullDatum, unsupported("unnest of an array is not supported")
}

// bindUnnest binds unnest(arr) in FROM: one text column, no rows.
func (b *Binder) bindUnnest(rf *pg.RangeFunction, fc *pg.FuncCall, outer, argScope *scope) (*rel, error) {
	if len(fc.Args) != 1 {
		return nil, unsupported("this form of unnest is not supported")
	}
	ec := &exprCtx{sc: argScope, clause: "FROM"}
	arg, err := b.bindExpr(fc.Args[0], ec)
	if err != nil {
		return nil, err
	}
	if arg.Type().IsArray() {
		return b.bindArrayUnnest(rf, arg, outer) // see array.go
	}
	if rf.Ordinality {
		return nil, unsupported("this form of unnest is not supported")
	}
	colName, alias := "unnest", "unnest"
	if rf.Alias != nil {
		alias, colName = rf.Alias.Aliasname, rf.Alias.Aliasname
		if len(rf.Alias.Colnames) > 0 {
			colName = rf.Alias.Colnames[0].GetString_().GetSval()
		}
	}
	sch := plan.Schema{{Name: colName, Type: types.Text, Table: alias}}
	vals := &plan.Values{Rows: [][]expr.Expr{{&expr.Const{Value: types.NullDatum, Typ: types.Text}}}, Out: sch}
	return b.leaf(&plan.Filter{Input: vals, Cond: &isNullArray{arr: arg}}, alias, outer), nil
}

// nullArrayValue is an array-valued (or array-element) expression over an
// array that can only be NULL: a cast to an array type (arr::int2[]) or a
// subscript (arr[i]).
type nullArrayValue struct {
	arr   expr.Expr
	typ   types.Type
	label string
}

func (n *nullArrayValue) Type() types.Type { return n.typ }
func (n *nullArrayValue) String() string   { return n.label }
func (n *nullArrayValue) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	v, err := n.arr.Eval(ctx, row)
	if err != nil || v.IsNull() {
		return types.NullDatum, err
	}
	return types.NullDatum, unsupported("arrays are not supported")
}

// bindNullArrayCast binds arr::elem[]; the result is NULL text.
func (b *Binder) bindNullArrayCast(tc *pg.TypeCast, ec *exprCtx) (expr.Expr, error) {
	arg, err := b.bindExpr(tc.Arg, ec)
	if err != nil {
		return nil, err
	}
	return &nullArrayValue{arr: arg, typ: types.Text, label: arg.String() + "::array"}, nil
}

// bindNullArraySubscript binds arr[i] (and slices); the element is an
// untyped NULL, so it compares with any type.
func (b *Binder) bindNullArraySubscript(ind *pg.A_Indirection, ec *exprCtx) (expr.Expr, error) {
	if e, ok, err := b.bindCatalogArrayIndirection(ind, ec); ok || err != nil {
		return e, err // see catalogarray.go
	}
	for _, x := range ind.Indirection {
		if x.GetAIndices() == nil {
			return nil, unsupported("field selection is not supported")
		}
	}
	arg, err := b.bindExpr(ind.Arg, ec)
	if err != nil {
		return nil, err
	}
	return &nullArrayValue{arr: arg, typ: types.Null, label: arg.String() + "[...]"}, nil
}
