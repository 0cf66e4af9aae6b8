package expr

import (
	"sort"
	"strings"

	"github.com/runneldb/runnel/internal/types"
)

// BuiltinKind says how a built-in is called.
type BuiltinKind uint8

const (
	// BuiltinFunction is a scalar function: name(args).
	BuiltinFunction BuiltinKind = iota
	// BuiltinBinaryOp is an infix operator: l name r.
	BuiltinBinaryOp
	// BuiltinPrefixOp is a prefix operator: name e.
	BuiltinPrefixOp
	// BuiltinAggregate is an aggregate: name(args) in a grouping query.
	BuiltinAggregate
	// BuiltinWindow is a window-only function: name(args) OVER (...).
	BuiltinWindow
)

// Pseudo-types of the listed signatures. They are never the type of a
// value: Builtins uses them where PostgreSQL's pg_proc does.
var (
	// PseudoAny is PostgreSQL's "any" (count("any"), concat(VARIADIC "any")).
	PseudoAny = types.Type{Kind: types.KindUnknown, Mod: pseudoAnyMod}
	// PseudoAnyElement is anyelement: a polymorphic argument whose type the
	// result shares (first_value, lag).
	PseudoAnyElement = types.Type{Kind: types.KindUnknown, Mod: pseudoAnyElementMod}
	// PseudoAnyCompatible is anycompatible: polymorphic arguments coerced
	// to their common type (lag(value, offset, default)).
	PseudoAnyCompatible = types.Type{Kind: types.KindUnknown, Mod: pseudoAnyCompatibleMod}
	// PseudoAnyArray, PseudoAnyNonArray and PseudoAnyCompatibleArray are
	// anyarray, anynonarray and anycompatiblearray (the array functions,
	// array_agg).
	PseudoAnyArray           = types.Type{Kind: types.KindUnknown, Mod: pseudoAnyArrayMod}
	PseudoAnyNonArray        = types.Type{Kind: types.KindUnknown, Mod: pseudoAnyNonArrayMod}
	PseudoAnyCompatibleArray = types.Type{Kind: types.KindUnknown, Mod: pseudoAnyCompatibleArrayMod}
)

const (
	pseudoAnyMod           = -1000
	pseudoAnyElementMod    = -1001
	pseudoAnyCompatibleMod = -1002
	// The array pseudo-types.
	pseudoAnyArrayMod           = -1003
	pseudoAnyNonArrayMod        = -1004
	pseudoAnyCompatibleArrayMod = -1005
)

// PseudoOID returns the pg_type oid of a pseudo-type of Builtins and
// whether t is one.
func PseudoOID(t types.Type) (uint32, bool) {
	if t.Kind != types.KindUnknown {
		return 0, false
	}
	switch t.Mod {
	case pseudoAnyMod:
		return 2276, true
	case pseudoAnyElementMod:
		return 2283, true
	case pseudoAnyCompatibleMod:
		return 5077, true
	case pseudoAnyArrayMod:
		return 2277, true
	case pseudoAnyNonArrayMod:
		return 2776, true
	case pseudoAnyCompatibleArrayMod:
		return 5078, true
	}
	return 0, false
}

// Builtin is one signature of a built-in function, operator, aggregate or
// window function, as NewFuncCall, NewBinaryOp, NewUnaryOp,
// LookupAggregate and LookupWindowFunc resolve it. The system catalogs
// (pg_proc, pg_operator, pg_aggregate) are generated from this list, so
// that clients that build queries from the catalog (psql's \df, sqlsmith)
// call exactly what Runnel implements.
type Builtin struct {
	Name string
	Kind BuiltinKind
	// Args are the declared parameter types (PseudoAny / PseudoAnyElement
	// for polymorphic ones).
	Args []types.Type
	// Variadic: the last argument repeats (VARIADIC in PostgreSQL, whose
	// pg_proc lists it as an array; Runnel has no arrays and lists the
	// element type).
	Variadic bool
	// Result is the result type (PseudoAnyElement when it is the type of
	// the polymorphic argument).
	Result types.Type
	// Strict functions return NULL when any argument is NULL.
	Strict bool
	// Volatile functions may give a different result at every call.
	Volatile bool
}

// Builtins lists every built-in signature, sorted by kind, name and
// argument types. COALESCE, NULLIF, GREATEST and LEAST are syntax in
// PostgreSQL (not in pg_proc) and are not listed.
func Builtins() []Builtin {
	var out []Builtin
	addOverloads := func(kind BuiltinKind, reg map[string][]*overload) {
		for name, ovs := range reg {
			for _, o := range ovs {
				if o.uncataloged {
					continue
				}
				b := Builtin{Name: strings.ToLower(name), Kind: kind, Result: o.ret,
					Strict: !o.nonStrict, Volatile: o.volatile, Variadic: o.variadic}
				if o.anyArgs {
					b.Args, b.Variadic = []types.Type{PseudoAny}, true
				} else {
					b.Args = append([]types.Type(nil), o.args...)
				}
				out = append(out, b)
			}
		}
	}
	addOverloads(BuiltinFunction, funcRegistry)
	addOverloads(BuiltinBinaryOp, binopRegistry)
	addOverloads(BuiltinPrefixOp, unopRegistry)
	out = append(out, arrayBuiltins()...)
	for name := range specialFuncs {
		if isArrayFunc(name) {
			continue
		}
		// jsonb_build_object / jsonb_build_array: VARIADIC "any".
		out = append(out, Builtin{Name: name, Kind: BuiltinFunction, Args: []types.Type{PseudoAny},
			Variadic: true, Result: types.Jsonb})
	}
	// The ordered-set aggregates (agg_ordered_set.go) are registered in
	// the binder's internal form, f(v, direct argument, desc), which is
	// not PostgreSQL's declaration: they are not listed.
	for name, sigs := range aggRegistry {
		if IsOrderedSetAggregate(name) {
			continue
		}
		for _, s := range sigs {
			b := Builtin{Name: name, Kind: BuiltinAggregate, Args: append([]types.Type(nil), s.args...), Result: s.ret}
			for i, a := range b.Args {
				if _, pseudo := PseudoOID(a); a.Kind == types.KindUnknown && !pseudo {
					b.Args[i] = PseudoAny // count("any")
				}
			}
			if s.retFn != nil {
				b.Result = s.retFn(b.Args)
			}
			out = append(out, b)
		}
	}
	win := func(name string, ret types.Type, args ...types.Type) {
		// PostgreSQL declares the window functions with arguments strict.
		out = append(out, Builtin{Name: name, Kind: BuiltinWindow, Args: args, Result: ret, Strict: len(args) > 0})
	}
	win("row_number", types.Int64)
	win("rank", types.Int64)
	win("dense_rank", types.Int64)
	win("percent_rank", types.Float64)
	win("cume_dist", types.Float64)
	win("ntile", types.Int32, types.Int32)
	for _, n := range []string{"lag", "lead"} {
		win(n, PseudoAnyElement, PseudoAnyElement)
		win(n, PseudoAnyElement, PseudoAnyElement, types.Int32)
		win(n, PseudoAnyCompatible, PseudoAnyCompatible, types.Int32, PseudoAnyCompatible)
	}
	win("first_value", PseudoAnyElement, PseudoAnyElement)
	win("last_value", PseudoAnyElement, PseudoAnyElement)
	win("nth_value", PseudoAnyElement, PseudoAnyElement, types.Int32)
	sort.SliceStable(out, func(i, j int) bool { return builtinLess(&out[i], &out[j]) })
	return out
}

func builtinLess(a, b *Builtin) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	if len(a.Args) != len(b.Args) {
		return len(a.Args) < len(b.Args)
	}
	for i := range a.Args {
		if x, y := typeKey(a.Args[i]), typeKey(b.Args[i]); x != y {
			return x < y
		}
	}
	return typeKey(a.Result) < typeKey(b.Result)
}

func typeKey(t types.Type) uint64 {
	oid := uint64(t.OID())
	if p, ok := PseudoOID(t); ok {
		oid = uint64(p)
	}
	return oid<<32 | uint64(uint32(t.Mod))
}
