package expr

import "github.com/runneldb/runnel/internal/types"

// PostgreSQL's functions behind the boolean comparison operators (pg_proc's
// booleq, boolne, boollt, boolgt, boolle, boolge). They are strict, as the
// operators are: a NULL argument gives NULL.
func init() {
	B := types.Bool
	cmp := func(keep func(c int) bool) func(a, b types.Datum) (types.Datum, error) {
		return func(a, b types.Datum) (types.Datum, error) {
			return types.DBool(keep(types.Compare(a, b))), nil
		}
	}
	for name, keep := range map[string]func(c int) bool{
		"booleq": func(c int) bool { return c == 0 },
		"boolne": func(c int) bool { return c != 0 },
		"boollt": func(c int) bool { return c < 0 },
		"boolgt": func(c int) bool { return c > 0 },
		"boolle": func(c int) bool { return c <= 0 },
		"boolge": func(c int) bool { return c >= 0 },
	} {
		regFunc(name, &overload{args: []types.Type{B, B}, ret: B, fn2: cmp(keep)})
	}
	// RisingWave's name for array_to_string(array, delimiter [, null_string]).
	specialFuncs["array_join"] = func(args []Expr) (Expr, error) { return newArrayFunc("array_to_string", args, false) }
}
