package binder

import (
	"fmt"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// The system catalogs have a few array-like values, kept as text with a
// marker type (types.CatalogArray): oidvector (pg_proc.proargtypes),
// int2vector (pg_index.indkey), name[] (current_schemas) and the record
// (x, n) of information_schema._pg_expandarray. Drivers' catalog queries
// subscript them (pgjdbc: (current_schemas(false))[s.r]) and select the
// record's fields (pgjdbc's getPrimaryKeys: (_pg_expandarray(i.indkey)).n,
// (result.keys).x); those forms are bound here.

// catalogArrayElem is arr[i] for a catalog array: NULL when i is out of
// range, as in PostgreSQL.
type catalogArrayElem struct {
	arr, idx expr.Expr
	elem     types.Type
	lower    int
}

func (e *catalogArrayElem) Type() types.Type { return e.elem }
func (e *catalogArrayElem) String() string {
	return fmt.Sprintf("(%s)[%s]", e.arr.String(), e.idx.String())
}
func (e *catalogArrayElem) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	a, err := e.arr.Eval(ctx, row)
	if err != nil || a.IsNull() {
		return types.NullDatum, err
	}
	i, err := e.idx.Eval(ctx, row)
	if err != nil || i.IsNull() {
		return types.NullDatum, err
	}
	elems := types.CatalogArrayElems(a.Str(), e.arr.Type())
	k := int(i.Int()) - e.lower
	if k < 0 || k >= len(elems) {
		return types.NullDatum, nil
	}
	return catalogElemDatum(elems[k], e.elem)
}

func catalogElemDatum(s string, t types.Type) (types.Datum, error) {
	if t.Kind == types.KindVarchar {
		return types.DVarchar(s), nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return types.NullDatum, sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "invalid input syntax for type %s: %q", t.Name(), s)
	}
	if t.Kind == types.KindInt16 {
		return types.DInt16(int16(n)), nil
	}
	return types.DInt32(int32(n)), nil
}

// expandArrayField is (r).x or (r).n of an _pg_expandarray record.
type expandArrayField struct {
	rec   expr.Expr
	field int // 0: x, 1: n
	name  string
}

func (e *expandArrayField) Type() types.Type { return types.Int32 }
func (e *expandArrayField) String() string   { return "(" + e.rec.String() + ")." + e.name }
func (e *expandArrayField) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	r, err := e.rec.Eval(ctx, row)
	if err != nil || r.IsNull() {
		return types.NullDatum, err
	}
	parts := strings.Split(strings.Trim(r.Str(), "()"), ",")
	if len(parts) != 2 {
		return types.NullDatum, sqlerr.Errorf(sqlerr.InternalError, "malformed _pg_expandarray record %q", r.Str())
	}
	return catalogElemDatum(parts[e.field], types.Int32)
}

// selectFields applies the field selections and subscripts of ind to e
// (already bound from ind.Arg).
func (b *Binder) selectFields(e expr.Expr, ind *pg.A_Indirection) (expr.Expr, error) {
	ec := &exprCtx{sc: &scope{}, clause: "select list"}
	return b.applyIndirection(e, ind.Indirection, ec)
}

func (b *Binder) applyIndirection(e expr.Expr, ind []*pg.Node, ec *exprCtx) (expr.Expr, error) {
	for _, x := range ind {
		switch {
		case x.GetAIndices() != nil && e.Type().IsArray():
			var err error
			if e, err = b.arraySubscript(e, x.GetAIndices(), ec); err != nil {
				return nil, err
			}
		case x.GetString_() != nil && e.Type() == types.ExpandArrayRecord:
			f := x.GetString_().Sval
			switch f {
			case "x":
				e = &expandArrayField{rec: e, field: 0, name: f}
			case "n":
				e = &expandArrayField{rec: e, field: 1, name: f}
			default:
				return nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "column \"%s\" not found in data type record", f)
			}
		case x.GetAIndices() != nil && !x.GetAIndices().IsSlice:
			elem, lower, ok := e.Type().CatalogArray()
			if !ok {
				return nil, unsupported("arrays are not supported")
			}
			idx, err := b.bindExpr(x.GetAIndices().Uidx, ec)
			if err != nil {
				return nil, err
			}
			if idx, err = expr.NewCast(idx, types.Int32, expr.CastImplicit); err != nil {
				return nil, err
			}
			e = &catalogArrayElem{arr: e, idx: idx, elem: elem, lower: lower}
		default:
			return nil, unsupported("field selection is not supported")
		}
	}
	return e, nil
}

// bindCatalogArrayIndirection binds subscripts and field selections of
// catalog arrays and _pg_expandarray records; ok is false for anything
// else (left to the NULL-array binding).
func (b *Binder) bindCatalogArrayIndirection(ind *pg.A_Indirection, ec *exprCtx) (expr.Expr, bool, error) {
	if fc := ind.Arg.GetFuncCall(); fc != nil && isSRFName(fc) {
		return nil, false, nil // only at the top of a select item (srfFieldSelect)
	}
	arg, err := b.bindExpr(ind.Arg, ec)
	if err != nil {
		return nil, false, err
	}
	if _, _, ok := arg.Type().CatalogArray(); !ok && arg.Type() != types.ExpandArrayRecord && !arg.Type().IsArray() {
		return nil, false, nil
	}
	e, err := b.applyIndirection(arg, ind.Indirection, ec)
	return e, true, err
}

// catalogArrayCmp is x op ANY/ALL (arr) over a catalog array
// (a.attnum = ANY(i.indkey), as node tools and psql write it), with
// PostgreSQL's NULL rules: ANY is true if some comparison is true, else
// NULL if some was NULL, else false; ALL the converse.
type catalogArrayCmp struct {
	arr   expr.Expr
	elem  *catalogElemSlot
	cmp   expr.Expr // x op elem
	all   bool
	label string
}

// catalogElemSlot is the element catalogArrayCmp compares with, set before
// each evaluation of cmp.
type catalogElemSlot struct {
	typ types.Type
	val types.Datum
}

func (s *catalogElemSlot) Type() types.Type { return s.typ }
func (s *catalogElemSlot) String() string   { return "element" }
func (s *catalogElemSlot) Eval(*expr.EvalContext, types.Row) (types.Datum, error) {
	return s.val, nil
}

func (e *catalogArrayCmp) Type() types.Type { return types.Bool }
func (e *catalogArrayCmp) String() string   { return e.label }
func (e *catalogArrayCmp) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	a, err := e.arr.Eval(ctx, row)
	if err != nil || a.IsNull() {
		return types.NullDatum, err
	}
	sawNull := false
	for _, s := range types.CatalogArrayElems(a.Str(), e.arr.Type()) {
		if e.elem.val, err = catalogElemDatum(s, e.elem.typ); err != nil {
			return types.NullDatum, err
		}
		v, err := e.cmp.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		switch {
		case v.IsNull():
			sawNull = true
		case v.Bool() != e.all:
			return types.DBool(!e.all), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(e.all), nil
}

// catalogArrayOp binds l op ANY/ALL (r) when r is a catalog array; ok is
// false otherwise.
func catalogArrayOp(op, q string, l, r expr.Expr) (expr.Expr, bool, error) {
	elem, _, ok := r.Type().CatalogArray()
	if !ok {
		return nil, false, nil
	}
	slot := &catalogElemSlot{typ: elem}
	cmp, err := expr.NewBinaryOp(op, l, slot)
	if err != nil {
		return nil, true, err
	}
	if cmp.Type().Kind != types.KindBool {
		return nil, true, sqlerr.Errorf(sqlerr.WrongObjectType, "op ANY/ALL (array) requires operator to yield boolean")
	}
	return &catalogArrayCmp{arr: r, elem: slot, cmp: cmp, all: q == "ALL",
		label: l.String() + " " + op + " " + q + "(" + r.String() + ")"}, true, nil
}
