package expr

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// The array functions. Their signatures are polymorphic (anycompatiblearray
// and anycompatible, or anyarray), so they are resolved here rather than
// by resolveOverload: the element type is the common type of the array
// arguments' elements and the element arguments, unknown literals take
// it, and the call is then an ordinary FuncExpr over concrete types.

// arrayArg is one parameter of an array function.
type arrayArg uint8

const (
	argArray arrayArg = iota // anycompatiblearray / anyarray
	argElem                  // anycompatible / anyelement
	argInt                   // integer
	argText                  // text
)

type arrayFunc struct {
	args      []arrayArg
	optional  int // how many trailing args may be left out
	nonStrict bool
	// ret gives the result type from the array type.
	ret func(arr types.Type) types.Type
	fn  func(ctx *EvalContext, arr types.Type, a []types.Datum) (types.Datum, error)
}

// paramTypes is the types of the first n parameters, the array and
// element ones being arr and elem.
func (f *arrayFunc) paramTypes(n int, arr, elem types.Type) []types.Type {
	out := make([]types.Type, n)
	for i, a := range f.args[:n] {
		out[i] = map[arrayArg]types.Type{argArray: arr, argElem: elem, argInt: types.Int32, argText: types.Text}[a]
	}
	return out
}

func retArray(t types.Type) types.Type { return t }
func retInt(types.Type) types.Type     { return types.Int32 }
func retText(types.Type) types.Type    { return types.Text }

var arrayFuncs map[string]*arrayFunc

func init() {
	arrayFuncs = map[string]*arrayFunc{
		"array_length": {args: []arrayArg{argArray, argInt}, ret: retInt, fn: func(_ *EvalContext, _ types.Type, a []types.Datum) (types.Datum, error) {
			n := a[0].ArrayLen()
			if a[1].Int() != 1 || n == 0 {
				return types.NullDatum, nil
			}
			return types.DInt32(int32(n)), nil
		}},
		"array_upper": {args: []arrayArg{argArray, argInt}, ret: retInt, fn: func(_ *EvalContext, _ types.Type, a []types.Datum) (types.Datum, error) {
			n := a[0].ArrayLen()
			if a[1].Int() != 1 || n == 0 {
				return types.NullDatum, nil
			}
			return types.DInt32(int32(n)), nil
		}},
		"array_lower": {args: []arrayArg{argArray, argInt}, ret: retInt, fn: func(_ *EvalContext, _ types.Type, a []types.Datum) (types.Datum, error) {
			if a[1].Int() != 1 || a[0].ArrayLen() == 0 {
				return types.NullDatum, nil
			}
			return types.DInt32(1), nil
		}},
		"array_ndims": {args: []arrayArg{argArray}, ret: retInt, fn: func(_ *EvalContext, _ types.Type, a []types.Datum) (types.Datum, error) {
			if a[0].ArrayLen() == 0 {
				return types.NullDatum, nil
			}
			return types.DInt32(1), nil
		}},
		"array_dims": {args: []arrayArg{argArray}, ret: retText, fn: func(_ *EvalContext, _ types.Type, a []types.Datum) (types.Datum, error) {
			n := a[0].ArrayLen()
			if n == 0 {
				return types.NullDatum, nil
			}
			return types.DVarchar("[1:" + itoa(n) + "]"), nil
		}},
		"cardinality": {args: []arrayArg{argArray}, ret: retInt, fn: func(_ *EvalContext, _ types.Type, a []types.Datum) (types.Datum, error) {
			return types.DInt32(int32(a[0].ArrayLen())), nil
		}},
		"array_append": {args: []arrayArg{argArray, argElem}, ret: retArray, nonStrict: true, fn: func(_ *EvalContext, t types.Type, a []types.Datum) (types.Datum, error) {
			var elems []types.Datum
			if !a[0].IsNull() {
				elems = a[0].ArrayElems()
			}
			return mkArray(t, append(elems, a[1]))
		}},
		"array_prepend": {args: []arrayArg{argElem, argArray}, ret: retArray, nonStrict: true, fn: func(_ *EvalContext, t types.Type, a []types.Datum) (types.Datum, error) {
			elems := []types.Datum{a[0]}
			if !a[1].IsNull() {
				elems = append(elems, a[1].ArrayElems()...)
			}
			return mkArray(t, elems)
		}},
		"array_cat": {args: []arrayArg{argArray, argArray}, ret: retArray, nonStrict: true, fn: func(_ *EvalContext, t types.Type, a []types.Datum) (types.Datum, error) {
			switch {
			case a[0].IsNull():
				return a[1], nil
			case a[1].IsNull():
				return a[0], nil
			}
			return mkArray(t, append(a[0].ArrayElems(), a[1].ArrayElems()...))
		}},
		"array_remove": {args: []arrayArg{argArray, argElem}, ret: retArray, nonStrict: true, fn: func(_ *EvalContext, t types.Type, a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.NullDatum, nil
			}
			var out []types.Datum
			for _, e := range a[0].ArrayElems() {
				if !notDistinct(e, a[1]) {
					out = append(out, e)
				}
			}
			return mkArray(t, out)
		}},
		"array_replace": {args: []arrayArg{argArray, argElem, argElem}, ret: retArray, nonStrict: true, fn: func(_ *EvalContext, t types.Type, a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.NullDatum, nil
			}
			elems := a[0].ArrayElems()
			for i, e := range elems {
				if notDistinct(e, a[1]) {
					elems[i] = a[2]
				}
			}
			return mkArray(t, elems)
		}},
		"array_position": {args: []arrayArg{argArray, argElem, argInt}, optional: 1, ret: retInt, nonStrict: true, fn: func(_ *EvalContext, _ types.Type, a []types.Datum) (types.Datum, error) {
			if a[0].IsNull() {
				return types.NullDatum, nil
			}
			start := 1
			if len(a) == 3 {
				if a[2].IsNull() {
					return types.NullDatum, sqlerr.New(sqlerr.NullValueNotAllowed, "initial position must not be null")
				}
				start = int(max(a[2].Int(), 1))
			}
			elems := a[0].ArrayElems()
			for i := start - 1; i < len(elems); i++ {
				if notDistinct(elems[i], a[1]) {
					return types.DInt32(int32(i + 1)), nil
				}
			}
			return types.NullDatum, nil
		}},
		"array_positions": {args: []arrayArg{argArray, argElem}, ret: func(types.Type) types.Type { return types.ArrayOf(types.Int32) }, nonStrict: true,
			fn: func(_ *EvalContext, _ types.Type, a []types.Datum) (types.Datum, error) {
				if a[0].IsNull() {
					return types.NullDatum, nil
				}
				var out []types.Datum
				for i, e := range a[0].ArrayElems() {
					if notDistinct(e, a[1]) {
						out = append(out, types.DInt32(int32(i+1)))
					}
				}
				return types.DArray(types.KindInt32, out), nil
			}},
		"trim_array": {args: []arrayArg{argArray, argInt}, ret: retArray, fn: func(_ *EvalContext, t types.Type, a []types.Datum) (types.Datum, error) {
			elems := a[0].ArrayElems()
			n := a[1].Int()
			if n < 0 || n > int64(len(elems)) {
				return types.NullDatum, sqlerr.Errorf("2202E", "number of elements to trim must be between 0 and %d", len(elems))
			}
			return mkArray(t, elems[:int64(len(elems))-n])
		}},
		"array_to_string": {args: []arrayArg{argArray, argText, argText}, optional: 1, ret: retText, nonStrict: true,
			fn: func(ctx *EvalContext, t types.Type, a []types.Datum) (types.Datum, error) {
				if a[0].IsNull() || a[1].IsNull() {
					return types.NullDatum, nil
				}
				var b []byte
				first := true
				et := t.ElemType()
				for _, e := range a[0].ArrayElems() {
					if e.IsNull() {
						if len(a) < 3 || a[2].IsNull() {
							continue
						}
						e = a[2]
					}
					if !first {
						b = append(b, a[1].Str()...)
					}
					first = false
					if e.Kind() == types.KindVarchar {
						b = append(b, e.Str()...)
					} else {
						b = types.AppendText(b, e, et, fmtOpts(ctx))
					}
				}
				return types.DVarchar(string(b)), nil
			}},
	}
	specialFuncs["string_to_array"] = newStringToArray
	for name := range arrayFuncs {
		n := name
		specialFuncs[n] = func(args []Expr) (Expr, error) { return newArrayFunc(n, args, false) }
	}
}

func isArrayFunc(name string) bool {
	_, ok := arrayFuncs[name]
	return ok || name == "string_to_array"
}

// arrayBuiltins lists the array functions as PostgreSQL's pg_proc does
// (anyarray functions strict, anycompatiblearray ones mostly not).
func arrayBuiltins() []Builtin {
	var out []Builtin
	for name, f := range arrayFuncs {
		compatible := name == "array_cat"
		for _, a := range f.args {
			compatible = compatible || a == argElem
		}
		arr := PseudoAnyArray
		if compatible {
			arr = PseudoAnyCompatibleArray
		}
		for n := len(f.args) - f.optional; n <= len(f.args); n++ {
			b := Builtin{Name: name, Kind: BuiltinFunction, Strict: !f.nonStrict}
			b.Args = f.paramTypes(n, arr, PseudoAnyCompatible)
			switch r := f.ret(types.ArrayOf(types.Int32)); {
			case r == types.ArrayOf(types.Int32) && name != "array_positions":
				b.Result = arr
			default:
				b.Result = r
			}
			if name == "array_to_string" {
				b.Strict = n == 2
			}
			out = append(out, b)
		}
	}
	for n := 2; n <= 3; n++ {
		b := Builtin{Name: "string_to_array", Kind: BuiltinFunction, Result: types.ArrayOf(types.Text)}
		for i := 0; i < n; i++ {
			b.Args = append(b.Args, types.Text)
		}
		out = append(out, b)
	}
	return out
}

func notDistinct(a, b types.Datum) bool { return types.Compare(a, b) == 0 }

func mkArray(t types.Type, elems []types.Datum) (types.Datum, error) {
	if len(elems) > types.MaxArrayElems {
		return types.NullDatum, types.ErrArrayTooLarge()
	}
	return types.DArray(t.Elem, elems), nil
}

// newArrayFunc resolves a call of an array function (see arrayFuncs).
func newArrayFunc(name string, args []Expr, infix bool) (Expr, error) {
	f := arrayFuncs[name]
	ts := exprTypes(args)
	if len(args) > len(f.args) || len(args) < len(f.args)-f.optional {
		return nil, undefinedFunction(name, ts)
	}
	// The element type: common type of the known array elements and
	// element arguments.
	var cands []types.Type
	for i, a := range args {
		t := a.Type()
		switch f.args[i] {
		case argArray:
			if t.Kind == types.KindArray {
				cands = append(cands, t.ElemType())
			} else if !isUnknown(t) {
				return nil, undefinedFunction(name, ts)
			}
		case argElem:
			if t.Kind == types.KindArray {
				return nil, undefinedFunction(name, ts)
			}
			if !isUnknown(t) {
				cands = append(cands, t)
			}
		}
	}
	if len(cands) == 0 {
		return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "could not determine polymorphic type because input has type unknown")
	}
	et, err := CommonType(cands, name)
	if err != nil {
		return nil, undefinedFunction(name, ts)
	}
	if !et.CanBeArrayElem() {
		return nil, undefinedFunction(name, ts)
	}
	at := types.ArrayOf(et)
	o := &overload{nonStrict: f.nonStrict, ret: f.ret(at), args: f.paramTypes(len(args), at, et)}
	for i, a := range args {
		if !CanCoerce(a.Type(), o.args[i], CastImplicit) {
			return nil, undefinedFunction(name, ts)
		}
	}
	fn := f.fn
	o.fn = func(ctx *EvalContext, a []types.Datum) (types.Datum, error) { return fn(ctx, at, a) }
	return bindOverload(name, o, args, infix)
}

// newStringToArray is string_to_array(text, delimiter [, null_string]).
func newStringToArray(args []Expr) (Expr, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, undefinedFunction("string_to_array", exprTypes(args))
	}
	o := &overload{nonStrict: true, ret: types.ArrayOf(types.Text)}
	for range args {
		o.args = append(o.args, types.Text)
	}
	for i, a := range args {
		if !CanCoerce(a.Type(), o.args[i], CastImplicit) {
			return nil, undefinedFunction("string_to_array", exprTypes(args))
		}
	}
	o.fn = func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		s := a[0].Str()
		if s == "" {
			return types.DArray(types.KindVarchar, nil), nil
		}
		var parts []string
		switch {
		case a[1].IsNull():
			for _, r := range s {
				parts = append(parts, string(r))
			}
		case a[1].Str() == "":
			parts = []string{s}
		default:
			parts = strings.Split(s, a[1].Str())
		}
		if len(parts) > types.MaxArrayElems {
			return types.NullDatum, types.ErrArrayTooLarge()
		}
		elems := make([]types.Datum, len(parts))
		for i, p := range parts {
			if len(a) == 3 && !a[2].IsNull() && p == a[2].Str() {
				continue
			}
			elems[i] = types.DVarchar(p)
		}
		return types.DArray(types.KindVarchar, elems), nil
	}
	return bindOverload("string_to_array", o, args, false)
}
