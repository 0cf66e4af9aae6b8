package expr

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Arrays: the ARRAY[...] constructor, subscripts and slices, op ANY/ALL
// (array), the array operators (= <> < <= > >= @> <@ && ||) and the array
// functions, with PostgreSQL's polymorphic typing: an unknown literal next
// to an array is read as that array type ('{1,2}'), one next to an element
// position as the element type, and the elements of an anycompatible
// function (array_append, array_cat, ...) are brought to a common type.
// Values are one-dimensional with lower bound 1 (types/array.go).

// ArrayExpr is ARRAY[e1, e2, ...].
type ArrayExpr struct {
	Elems []Expr
	Typ   types.Type
}

func (a *ArrayExpr) Type() types.Type { return a.Typ }
func (a *ArrayExpr) String() string {
	parts := make([]string, len(a.Elems))
	for i, e := range a.Elems {
		parts[i] = e.String()
	}
	return "ARRAY[" + strings.Join(parts, ",") + "]"
}
func (a *ArrayExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	vals := make([]types.Datum, len(a.Elems))
	for i, e := range a.Elems {
		v, err := e.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		vals[i] = v
	}
	return types.DArray(a.Typ.Elem, vals), nil
}

func errMultiDim() error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "multidimensional arrays are not supported")
}

// NewArray builds ARRAY[elems]. want, when it is an array type (the
// target of ARRAY[...]::int[]), gives the element type; otherwise the
// elements' common type does, and all-unknown elements are text.
func NewArray(elems []Expr, want types.Type) (Expr, error) {
	var et types.Type
	if want.Kind == types.KindArray {
		et = want.ElemType()
		et.Mod = -1
	} else {
		if len(elems) == 0 {
			return nil, sqlerr.New(sqlerr.IndeterminateDatatype, "cannot determine type of empty array").
				WithHint("Explicitly cast to the desired type, for example ARRAY[]::integer[].")
		}
		t, err := CommonType(exprTypes(elems), "ARRAY")
		if err != nil {
			return nil, err
		}
		et = t
	}
	if et.Kind == types.KindArray {
		return nil, errMultiDim()
	}
	if !et.CanBeArrayElem() {
		return nil, sqlerr.Errorf(sqlerr.UndefinedObject, "could not find array type for data type %s", et.Name())
	}
	out := make([]Expr, len(elems))
	for i, e := range elems {
		if e.Type().Kind == types.KindArray {
			return nil, errMultiDim()
		}
		c, err := coerceTo(e, et, CastImplicit)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return &ArrayExpr{Elems: out, Typ: types.ArrayOf(et)}, nil
}

func arrayCastFn(from, to types.Type, explicit bool) castFunc {
	ef := castFn(from.ElemType(), to.ElemType(), explicit)
	if from.Elem == to.Elem {
		et := to.ElemType()
		ef = func(_ *EvalContext, d types.Datum) (types.Datum, error) { return types.ApplyTypmod(d, et, explicit) }
	}
	if ef == nil {
		return nil
	}
	return func(ctx *EvalContext, d types.Datum) (types.Datum, error) {
		elems := d.ArrayElems()
		for i, e := range elems {
			if e.IsNull() {
				continue
			}
			v, err := ef(ctx, e)
			if err != nil {
				return types.NullDatum, err
			}
			elems[i] = v
		}
		return types.DArray(to.Elem, elems), nil
	}
}

// arraySubscript is a[i]: NULL when i is NULL or out of range.
type arraySubscript struct {
	arr, idx Expr
}

func (s *arraySubscript) Type() types.Type { return s.arr.Type().ElemType() }
func (s *arraySubscript) String() string {
	return "(" + s.arr.String() + ")[" + s.idx.String() + "]"
}
func (s *arraySubscript) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	a, err := s.arr.Eval(ctx, row)
	if err != nil || a.IsNull() {
		return types.NullDatum, err
	}
	i, err := s.idx.Eval(ctx, row)
	if err != nil || i.IsNull() {
		return types.NullDatum, err
	}
	elems := a.ArrayElems()
	if i.Int() < 1 || i.Int() > int64(len(elems)) {
		return types.NullDatum, nil
	}
	return elems[i.Int()-1], nil
}

// arraySlice is a[lo:hi] (either bound may be omitted): the elements
// between the bounds clamped to the array, an empty array when none.
type arraySlice struct {
	arr, lo, hi Expr
}

func (s *arraySlice) Type() types.Type { return s.arr.Type() }
func (s *arraySlice) String() string {
	b := func(e Expr) string {
		if e == nil {
			return ""
		}
		return e.String()
	}
	return "(" + s.arr.String() + ")[" + b(s.lo) + ":" + b(s.hi) + "]"
}
func (s *arraySlice) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	a, err := s.arr.Eval(ctx, row)
	if err != nil || a.IsNull() {
		return types.NullDatum, err
	}
	elems := a.ArrayElems()
	lo, hi := int64(1), int64(len(elems))
	for _, p := range []struct {
		e   Expr
		dst *int64
	}{{s.lo, &lo}, {s.hi, &hi}} {
		if p.e == nil {
			continue
		}
		v, err := p.e.Eval(ctx, row)
		if err != nil || v.IsNull() {
			return types.NullDatum, err
		}
		*p.dst = v.Int()
	}
	lo = max(lo, 1)
	hi = min(hi, int64(len(elems)))
	if lo > hi {
		return types.DArray(a.ArrayElemKind(), nil), nil
	}
	return types.DArray(a.ArrayElemKind(), elems[lo-1:hi]), nil
}

func subscriptInt(e Expr) (Expr, error) {
	if isUnknown(e.Type()) || e.Type().IsInteger() || e.Type().IsNumeric() {
		return coerceTo(e, types.Int32, CastAssignment)
	}
	return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "array subscript must have type integer")
}

// NewArraySubscript builds arr[idx].
func NewArraySubscript(arr, idx Expr) (Expr, error) {
	if arr.Type().Kind != types.KindArray {
		return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "cannot subscript type %s because it does not support subscripting", arr.Type().Name())
	}
	i, err := subscriptInt(idx)
	if err != nil {
		return nil, err
	}
	return &arraySubscript{arr: arr, idx: i}, nil
}

// NewArraySlice builds arr[lo:hi]; lo or hi is nil when omitted.
func NewArraySlice(arr, lo, hi Expr) (Expr, error) {
	if arr.Type().Kind != types.KindArray {
		return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "cannot subscript type %s because it does not support subscripting", arr.Type().Name())
	}
	var err error
	if lo != nil {
		if lo, err = subscriptInt(lo); err != nil {
			return nil, err
		}
	}
	if hi != nil {
		if hi, err = subscriptInt(hi); err != nil {
			return nil, err
		}
	}
	return &arraySlice{arr: arr, lo: lo, hi: hi}, nil
}

// arrayCompare is l op ANY/ALL (arr). ANY is true if some comparison is
// true, else NULL if some was NULL (or l is NULL and arr not empty), else
// false; ALL the converse. cmp is op over the row (l, element).
type arrayCompare struct {
	l, arr Expr
	cmp    Expr
	all    bool
	op     string
}

func (a *arrayCompare) Type() types.Type { return types.Bool }
func (a *arrayCompare) String() string {
	q := "ANY"
	if a.all {
		q = "ALL"
	}
	return a.l.String() + " " + a.op + " " + q + " (" + a.arr.String() + ")"
}
func (a *arrayCompare) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	l, err := a.l.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	arr, err := a.arr.Eval(ctx, row)
	if err != nil || arr.IsNull() {
		return types.NullDatum, err
	}
	pair := types.Row{l, types.NullDatum}
	sawNull := false
	for _, e := range arr.ArrayElems() {
		pair[1] = e
		v, err := a.cmp.Eval(ctx, pair)
		if err != nil {
			return types.NullDatum, err
		}
		switch {
		case v.IsNull():
			sawNull = true
		case v.Bool() != a.all:
			return types.DBool(!a.all), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(a.all), nil
}

// NewArrayCompare builds l op ANY (arr) or l op ALL (arr). An unknown
// literal array takes l's type as its element type.
func NewArrayCompare(op string, l, arr Expr, all bool) (Expr, error) {
	q := "ANY"
	if all {
		q = "ALL"
	}
	at := arr.Type()
	if isUnknown(at) {
		et := l.Type()
		if isUnknown(et) {
			et = types.Text
			var err error
			if l, err = coerceTo(l, et, CastImplicit); err != nil {
				return nil, err
			}
		}
		if !et.CanBeArrayElem() {
			return nil, sqlerr.Errorf(sqlerr.UndefinedObject, "could not find array type for data type %s", et.Name())
		}
		var err error
		if arr, err = coerceTo(arr, types.ArrayOf(baseType(et)), CastImplicit); err != nil {
			return nil, err
		}
		at = arr.Type()
	}
	if at.Kind != types.KindArray {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "op %s/%s (array) requires array on right side", q, q)
	}
	lt := l.Type()
	if isUnknown(lt) {
		var err error
		if l, err = coerceTo(l, at.ElemType(), CastImplicit); err != nil {
			return nil, err
		}
		lt = l.Type()
	}
	cmp, err := NewBinaryOp(op, &ColumnRef{Index: 0, Typ: lt, Name: l.String()}, &ColumnRef{Index: 1, Typ: at.ElemType(), Name: "element"})
	if err != nil {
		return nil, err
	}
	if cmp.Type().Kind != types.KindBool {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "op %s/%s (array) requires operator to yield boolean", q, q)
	}
	return &arrayCompare{l: l, arr: arr, cmp: cmp, all: all, op: op}, nil
}

// arrayOperand resolves the array type of a binary array operator: both
// sides' types with unknown literals read as the other side's array type.
func unifyArrays(name string, l, r Expr) (Expr, Expr, types.Type, error) {
	lt, rt := l.Type(), r.Type()
	var err error
	switch {
	case isUnknown(lt) && rt.Kind == types.KindArray:
		l, err = coerceTo(l, rt, CastImplicit)
	case isUnknown(rt) && lt.Kind == types.KindArray:
		r, err = coerceTo(r, lt, CastImplicit)
	case lt.Kind == types.KindArray && rt.Kind == types.KindArray && !sameBase(lt, rt):
		return nil, nil, types.Type{}, undefinedOperator(name, []types.Type{lt, rt})
	}
	if err != nil {
		return nil, nil, types.Type{}, err
	}
	t := l.Type()
	if t.Mod != r.Type().Mod {
		t.Mod = -1
	}
	return l, r, t, nil
}

// arrayBinaryOp builds an operator with an array operand; ok is false
// when neither operand is an array (the caller resolves it as usual).
func arrayBinaryOp(name string, l, r Expr) (Expr, bool, error) {
	lt, rt := l.Type(), r.Type()
	if lt.Kind != types.KindArray && rt.Kind != types.KindArray {
		return nil, false, nil
	}
	mk := func(ret types.Type, fn func(a, b types.Datum) (types.Datum, error), l, r Expr) (Expr, bool, error) {
		return &binaryExpr{name: name, l: l, r: r, fn: fn, typ: ret, infix: true}, true, nil
	}
	switch name {
	case "=", "<>", "<", "<=", ">", ">=":
		l, r, _, err := unifyArrays(name, l, r)
		if err != nil {
			return nil, true, err
		}
		if l.Type().Kind != types.KindArray || r.Type().Kind != types.KindArray {
			return nil, true, undefinedOperator(name, []types.Type{lt, rt})
		}
		test := map[string]func(int) bool{
			"=": func(c int) bool { return c == 0 }, "<>": func(c int) bool { return c != 0 },
			"<": func(c int) bool { return c < 0 }, "<=": func(c int) bool { return c <= 0 },
			">": func(c int) bool { return c > 0 }, ">=": func(c int) bool { return c >= 0 },
		}[name]
		return mk(types.Bool, func(a, b types.Datum) (types.Datum, error) {
			return types.DBool(test(types.Compare(a, b))), nil
		}, l, r)
	case "@>", "<@", "&&":
		l, r, _, err := unifyArrays(name, l, r)
		if err != nil {
			return nil, true, err
		}
		if l.Type().Kind != types.KindArray || r.Type().Kind != types.KindArray {
			return nil, true, undefinedOperator(name, []types.Type{lt, rt})
		}
		var fn func(a, b types.Datum) (types.Datum, error)
		switch name {
		case "@>":
			fn = func(a, b types.Datum) (types.Datum, error) { return types.DBool(arrayContains(a, b)), nil }
		case "<@":
			fn = func(a, b types.Datum) (types.Datum, error) { return types.DBool(arrayContains(b, a)), nil }
		default:
			fn = func(a, b types.Datum) (types.Datum, error) { return types.DBool(arrayOverlaps(a, b)), nil }
		}
		return mk(types.Bool, fn, l, r)
	case "||":
		return arrayConcatOp(l, r)
	case "#>", "#>>", "?|", "?&", "#-":
		// jsonb path and key-set operators take text[]; Runnel's take the
		// array's text form ('{a,b}'), which is what array_out gives.
		if lt.Kind == types.KindJsonb && rt.IsArray() && rt.Elem == types.KindVarchar {
			rc, err := coerceTo(r, types.Text, CastAssignment)
			if err != nil {
				return nil, true, err
			}
			e, err := NewBinaryOp(name, l, rc)
			return e, true, err
		}
	}
	return nil, true, undefinedOperator(name, []types.Type{lt, rt})
}

// arrayConcatOp is ||: array_cat for two arrays (an unknown literal is
// the other's array type), else array_append / array_prepend.
func arrayConcatOp(l, r Expr) (Expr, bool, error) {
	lt, rt := l.Type(), r.Type()
	var e Expr
	var err error
	switch {
	case lt.Kind == types.KindArray && (rt.Kind == types.KindArray || isUnknown(rt) && rt.Kind != types.KindNull),
		rt.Kind == types.KindArray && isUnknown(lt) && lt.Kind != types.KindNull:
		e, err = newArrayFunc("array_cat", []Expr{l, r}, true)
	case lt.Kind == types.KindArray:
		e, err = newArrayFunc("array_append", []Expr{l, r}, true)
	default:
		e, err = newArrayFunc("array_prepend", []Expr{l, r}, true)
	}
	if err != nil && sqlerr.Code(err) == sqlerr.UndefinedFunction {
		err = undefinedOperator("||", []types.Type{lt, rt})
	}
	return e, true, err
}

// arrayContains is a @> b: every element of b equals some element of a
// (a NULL element equals nothing).
func arrayContains(a, b types.Datum) bool {
	ea := a.ArrayElems()
	for _, x := range b.ArrayElems() {
		if x.IsNull() {
			return false
		}
		found := false
		for _, y := range ea {
			if !y.IsNull() && types.Compare(x, y) == 0 {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func arrayOverlaps(a, b types.Datum) bool {
	ea := a.ArrayElems()
	for _, x := range b.ArrayElems() {
		if x.IsNull() {
			continue
		}
		for _, y := range ea {
			if !y.IsNull() && types.Compare(x, y) == 0 {
				return true
			}
		}
	}
	return false
}
