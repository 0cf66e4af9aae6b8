package expr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/types"
)

// TestNoPanicOnAnyOverload calls every registered function and operator
// overload with edge-case arguments (NULL, extremes, NaN, infinities,
// empty and odd strings) and requires an error or a value, never a panic.
func TestNoPanicOnAnyOverload(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 3))
	typeName := map[types.Kind]string{
		types.KindInt16: "smallint", types.KindInt32: "integer", types.KindInt64: "bigint", types.KindNumeric: "numeric",
		types.KindFloat64: "double precision", types.KindFloat32: "real", types.KindVarchar: "text", types.KindBool: "boolean",
		types.KindDate: "date", types.KindTimestamp: "timestamp", types.KindTimestamptz: "timestamptz",
		types.KindInterval: "interval", types.KindJsonb: "jsonb",
	}
	extra := map[string][]string{
		"integer":     {"-2147483648", "2147483647", "0", "100000"},
		"bigint":      {"-9223372036854775808", "9223372036854775807"},
		"numeric":     {"Infinity", "-Infinity", "NaN", "1e-1000", "-1e300"},
		"text":        {"", "%", "\\", "{a,\"b\"}", "{", "[", "%%s %I", "year", "YYYY-MM-DD", "x\u00e9\U0001F600", "("},
		"date":        {"infinity", "-infinity", "4714-11-24 BC", "5874897-12-31"},
		"timestamp":   {"infinity", "-infinity", "4714-11-24 00:00:00 BC", "294246-12-31 23:59:59"},
		"timestamptz": {"infinity", "-infinity"},
		"interval":    {"178000000 years", "-178000000 years", "2147483647 days", "-2147483648 days"},
	}
	val := func(typ types.Type) Expr {
		if r.IntN(6) == 0 {
			return &Const{Typ: typ}
		}
		name := typeName[typ.Kind]
		pool := append(append([]string{}, genConsts[name]...), extra[name]...)
		if len(pool) == 0 {
			return &Const{Typ: typ}
		}
		v, err := types.ParseText(pool[r.IntN(len(pool))], typ, nil)
		if err != nil {
			return &Const{Typ: typ}
		}
		return &Const{Value: v, Typ: typ}
	}
	check := func(what string, build func() (Expr, error)) {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("seed %d: %s panicked: %v", seed, what, p)
			}
		}()
		e, err := build()
		if err != nil {
			return
		}
		what = e.String()
		// A deadline, so that pg_sleep(1e308) ends (as a cancelled
		// statement's would).
		ec := testCtx()
		ctx, cancel := context.WithTimeout(ec.Ctx, 20*time.Millisecond)
		defer cancel()
		ec.Ctx = ctx
		e.Eval(ec, nil)
	}
	names := func(m map[string][]*overload) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for round := 0; round < 8; round++ {
		for _, name := range names(funcRegistry) {
			for _, o := range funcRegistry[name] {
				if o.anyArgs {
					continue
				}
				n := len(o.args)
				if o.variadic {
					n += r.IntN(3)
				}
				args := make([]Expr, n)
				for i := range args {
					args[i] = val(o.paramType(i))
				}
				check(fmt.Sprintf("%s%v", name, args), func() (Expr, error) { return NewFuncCall(name, args) })
			}
		}
		for _, op := range names(binopRegistry) {
			for _, o := range binopRegistry[op] {
				l, rr := val(o.args[0]), val(o.args[1])
				check(op, func() (Expr, error) { return NewBinaryOp(op, l, rr) })
			}
		}
		for _, op := range names(unopRegistry) {
			for _, o := range unopRegistry[op] {
				a := val(o.args[0])
				check(op, func() (Expr, error) { return NewUnaryOp(op, a) })
			}
		}
		for _, target := range []types.Type{types.Int16, types.Int32, types.Int64, types.Numeric, types.Float32, types.Float64,
			types.Text, types.Bool, types.Date, types.Timestamp, types.Timestamptz, types.Interval, types.Jsonb, types.Time} {
			for k := range typeName {
				src := val(types.Type{Kind: k, Mod: -1})
				check("cast", func() (Expr, error) { return NewCast(src, target, CastExplicit) })
			}
		}
	}
}
