package expr

import "github.com/runneldb/runnel/internal/types"

// FuncParam is a named parameter of a built-in function, for calls with
// named arguments (make_interval(days => 2)); Default is nil when the
// parameter has none.
type FuncParam struct {
	Name    string
	Default Expr
}

// funcParams lists the built-ins PostgreSQL declares with parameter names
// users pass by name.
var funcParams = map[string][]FuncParam{}

func init() {
	zero := func(t types.Type) Expr {
		if t.Kind == types.KindFloat64 {
			return &Const{Value: types.DFloat64(0), Typ: t}
		}
		return &Const{Value: types.DInt32(0), Typ: t}
	}
	I, F := types.Int32, types.Float64
	funcParams["make_interval"] = []FuncParam{{"years", zero(I)}, {"months", zero(I)}, {"weeks", zero(I)}, {"days", zero(I)}, {"hours", zero(I)}, {"mins", zero(I)}, {"secs", zero(F)}}
	funcParams["make_timestamp"] = []FuncParam{{"year", nil}, {"month", nil}, {"mday", nil}, {"hour", nil}, {"min", nil}, {"sec", nil}}
	funcParams["make_timestamptz"] = []FuncParam{{"year", nil}, {"month", nil}, {"mday", nil}, {"hour", nil}, {"min", nil}, {"sec", nil}, {"timezone", nil}}
	funcParams["make_date"] = []FuncParam{{"year", nil}, {"month", nil}, {"day", nil}}
	funcParams["make_time"] = []FuncParam{{"hour", nil}, {"min", nil}, {"sec", nil}}
	funcParams["jsonb_set"] = []FuncParam{{"jsonb_in", nil}, {"path", nil}, {"replacement", nil}, {"create_if_missing", &Const{Value: types.DBool(true), Typ: types.Bool}}}
	funcParams["jsonb_insert"] = []FuncParam{{"jsonb_in", nil}, {"path", nil}, {"replacement", nil}, {"insert_after", &Const{Value: types.DBool(false), Typ: types.Bool}}}
}

// FuncParams returns the named parameters of built-in function name, or
// nil when its parameters have no names.
func FuncParams(name string) []FuncParam { return funcParams[name] }
