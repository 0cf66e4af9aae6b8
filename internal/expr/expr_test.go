package expr

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func typed(s string, t types.Type) Expr {
	v, err := types.ParseText(s, t, nil)
	if err != nil {
		panic(err)
	}
	return &Const{Value: v, Typ: t}
}

func testCtx() *EvalContext {
	return &EvalContext{Ctx: context.Background(), Location: time.UTC, StatementTime: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}
}

func render(t *testing.T, e Expr) string {
	t.Helper()
	v, err := e.Eval(testCtx(), nil)
	if err != nil {
		return "ERROR " + sqlerr.Code(err) + " " + err.Error()
	}
	if v.IsNull() {
		return "NULL"
	}
	return types.FormatText(v, e.Type(), nil)
}

// TestResolution checks operator/function resolution and results against
// values taken from PostgreSQL 15.
func TestResolution(t *testing.T) {
	mk := func(f func() (Expr, error)) func() (Expr, error) { return f }
	tests := []struct {
		name string
		mk   func() (Expr, error)
		typ  string
		want string
	}{
		{"unknown = unknown is text", mk(func() (Expr, error) { return NewBinaryOp("=", cu("abc"), cu("abc")) }), "boolean", "t"},
		{"int + numeric", mk(func() (Expr, error) { return NewBinaryOp("+", ci(1), typed("1.5", types.Numeric)) }), "numeric", "2.5"},
		{"int + float8", mk(func() (Expr, error) { return NewBinaryOp("+", ci(1), typed("1.5", types.Float64)) }), "double precision", "2.5"},
		// real meets an integer or numeric through float48 operators, in
		// double precision (TestDifferentialExpressions seed 1796254967221010829)
		{"real < bigint widens both", mk(func() (Expr, error) {
			return NewBinaryOp("<", typed("3037000500", types.Float32), typed("3037000500", types.Int64))
		}), "boolean", "t"},
		{"real = int widens both", mk(func() (Expr, error) { return NewBinaryOp("=", typed("16777217", types.Float32), ci(16777217)) }), "boolean", "f"},
		{"real + bigint", mk(func() (Expr, error) {
			return NewBinaryOp("+", typed("16777217", types.Float32), typed("1", types.Int64))
		}), "double precision", "16777217"},
		{"real + numeric", mk(func() (Expr, error) { return NewBinaryOp("+", typed("1", types.Float32), typed("1", types.Numeric)) }), "double precision", "2"},
		{"real * smallint", mk(func() (Expr, error) {
			return NewBinaryOp("*", typed("1.5", types.Float32), &Const{Value: types.DInt16(2), Typ: types.Int16})
		}), "double precision", "3"},
		{"real NaN = float8 NaN", mk(func() (Expr, error) {
			return NewBinaryOp("=", typed("NaN", types.Float32), typed("NaN", types.Float64))
		}), "boolean", "t"},
		// pow uses the operands' exact binary values (TestDifferentialExpressions
		// seed 1796255211572019302)
		{"1e-300 ^ 0.1", mk(func() (Expr, error) {
			return NewBinaryOp("^", typed("1e-300", types.Float64), typed("0.1", types.Float64))
		}), "double precision", "9.999999999999962e-31"},
		// log10 of a float rounds like glibc (seed 1796271535530827008)
		{"log(0.1::float8)", mk(func() (Expr, error) { return NewFuncCall("log", []Expr{typed("0.1", types.Float64)}) }), "double precision", "-1"},
		{"log(1000::float8)", mk(func() (Expr, error) { return NewFuncCall("log", []Expr{typed("1000", types.Float64)}) }), "double precision", "3"},
		{"log(2::float8)", mk(func() (Expr, error) { return NewFuncCall("log", []Expr{typed("2", types.Float64)}) }), "double precision", "0.3010299956639812"},
		{"real + unknown stays real", mk(func() (Expr, error) { return NewBinaryOp("+", typed("1.5", types.Float32), cu("1")) }), "real", "2.5"},
		{"round numeric half away", mk(func() (Expr, error) { return NewFuncCall("round", []Expr{typed("-2.5", types.Numeric)}) }), "numeric", "-3"},
		{"round float half even", mk(func() (Expr, error) { return NewFuncCall("round", []Expr{typed("2.5", types.Float64)}) }), "double precision", "2"},
		{"round int picks float8", mk(func() (Expr, error) { return NewFuncCall("round", []Expr{ci(7)}) }), "double precision", "7"},
		{"length(unknown)", mk(func() (Expr, error) { return NewFuncCall("length", []Expr{cu("héllo")}) }), "integer", "5"},
		{"numeric / numeric scale", mk(func() (Expr, error) { return NewBinaryOp("/", typed("1", types.Numeric), typed("3", types.Numeric)) }), "numeric", "0.33333333333333333333"},
		{"numeric / big scale", mk(func() (Expr, error) { return NewBinaryOp("/", typed("10", types.Numeric), typed("4", types.Numeric)) }), "numeric", "2.5000000000000000"},
		{"numeric mul scale", mk(func() (Expr, error) {
			return NewBinaryOp("*", typed("1.10", types.Numeric), typed("2.5", types.Numeric))
		}), "numeric", "2.750"},
		{"numeric mod sign", mk(func() (Expr, error) { return NewBinaryOp("%", typed("-7.5", types.Numeric), typed("2", types.Numeric)) }), "numeric", "-1.5"},
		{"sqrt numeric", mk(func() (Expr, error) { return NewFuncCall("sqrt", []Expr{typed("2", types.Numeric)}) }), "numeric", "1.414213562373095"},
		{"now() - '1 day' parses as timestamptz", mk(func() (Expr, error) { return NewBinaryOp("-", mustFn("now"), cu("1 day")) }), "", "ERROR 22007"},
		{"timestamp - interval", mk(func() (Expr, error) {
			return NewBinaryOp("-", typed("2021-03-31 10:00", types.Timestamp), typed("1 mon", types.Interval))
		}), "timestamp without time zone", "2021-02-28 10:00:00"},
		{"date - date", mk(func() (Expr, error) {
			return NewBinaryOp("-", typed("2024-03-01", types.Date), typed("2024-02-01", types.Date))
		}), "integer", "29"},
		{"text || int", mk(func() (Expr, error) { return NewBinaryOp("||", typed("a", types.Text), ci(1)) }), "text", "a1"},
		{"bool cast to text", mk(func() (Expr, error) {
			return NewCast(&Const{Value: types.DBool(true), Typ: types.Bool}, types.Text, CastExplicit)
		}), "text", "true"},
		{"concat uses output", mk(func() (Expr, error) {
			return NewFuncCall("concat", []Expr{&Const{Value: types.DBool(true), Typ: types.Bool}, cnull(), ci(2)})
		}), "text", "t2"},
		{"numeric to int half away", mk(func() (Expr, error) { return NewCast(typed("-12.5", types.Numeric), types.Int32, CastExplicit) }), "integer", "-13"},
		{"float to int half even", mk(func() (Expr, error) { return NewCast(typed("-12.5", types.Float64), types.Int32, CastExplicit) }), "integer", "-12"},
		{"float to int overflow", mk(func() (Expr, error) { return NewCast(typed("3e9", types.Float64), types.Int32, CastExplicit) }), "", "ERROR 22003"},
		{"varchar(3) explicit truncates", mk(func() (Expr, error) {
			return NewCast(cu("abcdef"), types.Type{Kind: types.KindVarchar, Mod: 3}, CastExplicit)
		}), "character varying", "abc"},
		{"varchar(3) assignment errors", mk(func() (Expr, error) {
			return NewCast(typed("abcdef", types.Text), types.Type{Kind: types.KindVarchar, Mod: 3}, CastAssignment)
		}), "", "ERROR 22001"},
		{"numeric(5,2) rounds", mk(func() (Expr, error) {
			return NewCast(typed("1.005", types.Numeric), types.Type{Kind: types.KindNumeric, Mod: 5<<16 | 2}, CastAssignment)
		}), "numeric", "1.01"},
		{"int to bool explicit", mk(func() (Expr, error) { return NewCast(ci(5), types.Bool, CastExplicit) }), "boolean", "t"},
		{"int to bool implicit fails", mk(func() (Expr, error) { return NewCast(ci(5), types.Bool, CastImplicit) }), "", "ERROR 42846"},
		{"NULL AND false", mk(func() (Expr, error) {
			return NewBinaryOp("AND", cnull(), &Const{Value: types.DBool(false), Typ: types.Bool})
		}), "boolean", "f"},
		{"NULL OR true", mk(func() (Expr, error) {
			return NewBinaryOp("OR", cnull(), &Const{Value: types.DBool(true), Typ: types.Bool})
		}), "boolean", "t"},
		{"NULL OR false", mk(func() (Expr, error) {
			return NewBinaryOp("OR", cnull(), &Const{Value: types.DBool(false), Typ: types.Bool})
		}), "boolean", "NULL"},
		{"AND of int", mk(func() (Expr, error) { return NewBinaryOp("AND", ci(1), cnull()) }), "", "ERROR 42804"},
		{"IN with NULL no match", mk(func() (Expr, error) { return NewIn(ci(1), []Expr{ci(2), cnull()}, false) }), "boolean", "NULL"},
		{"NOT IN with NULL", mk(func() (Expr, error) { return NewIn(ci(1), []Expr{ci(2), cnull()}, true) }), "boolean", "NULL"},
		{"IN match beats NULL", mk(func() (Expr, error) { return NewIn(ci(1), []Expr{cnull(), cu("1")}, false) }), "boolean", "t"},
		{"BETWEEN SYMMETRIC", mk(func() (Expr, error) { return NewBetween(ci(5), ci(9), ci(1), false, true) }), "boolean", "t"},
		{"LIKE escape", mk(func() (Expr, error) { return NewBinaryOp("LIKE", typed("a_c", types.Text), cu(`a\_c`)) }), "boolean", "t"},
		{"LIKE trailing escape not reached", mk(func() (Expr, error) { return NewBinaryOp("LIKE", typed("a", types.Text), cu(`a\`)) }), "boolean", "f"},
		{"LIKE trailing escape", mk(func() (Expr, error) { return NewBinaryOp("LIKE", typed("ab", types.Text), cu(`a\`)) }), "", "ERROR 22025"},
		{"LIKE percent trailing escape", mk(func() (Expr, error) { return NewBinaryOp("LIKE", typed("ab", types.Text), cu(`%\`)) }), "", "ERROR 22025"},
		{"LIKE underscore after percent", mk(func() (Expr, error) { return NewBinaryOp("LIKE", typed("abc", types.Text), cu(`%_c`)) }), "boolean", "t"},
		{"ILIKE", mk(func() (Expr, error) { return NewBinaryOp("ILIKE", typed("HeLLo", types.Text), cu(`h%O`)) }), "boolean", "t"},
		{"COALESCE common type", mk(func() (Expr, error) { return NewCoalesce([]Expr{cnull(), ci(1), typed("2.5", types.Numeric)}) }), "numeric", "1"},
		{"GREATEST", mk(func() (Expr, error) { return NewGreatest([]Expr{ci(1), cnull(), ci8(7)}) }), "bigint", "7"},
		{"NULLIF", mk(func() (Expr, error) { return NewNullIf(ci(1), cu("1")) }), "integer", "NULL"},
		{"CASE mixed types", mk(func() (Expr, error) {
			return NewCase(nil, []When{{Cond: &Const{Value: types.DBool(false), Typ: types.Bool}, Result: ci(1)}}, typed("2.5", types.Numeric))
		}), "numeric", "2.5"},
		{"simple CASE", mk(func() (Expr, error) {
			return NewCase(ci(2), []When{{Cond: ci(1), Result: cu("one")}, {Cond: ci(2), Result: cu("two")}}, nil)
		}), "text", "two"},
		{"CASE type mismatch", mk(func() (Expr, error) {
			return NewCase(nil, []When{{Cond: &Const{Value: types.DBool(true), Typ: types.Bool}, Result: ci(1)}}, &Const{Value: types.DBool(true), Typ: types.Bool})
		}), "", "ERROR 42804"},
		{"undefined function", mk(func() (Expr, error) { return NewFuncCall("foo", []Expr{ci(1)}) }), "", "ERROR 42883 function foo(integer) does not exist"},
		{"extract epoch", mk(func() (Expr, error) {
			return NewFuncCall("extract", []Expr{cu("epoch"), typed("2020-01-01 00:00:01.5", types.Timestamp)})
		}), "numeric", "1577836801.500000"},
		{"date_trunc week", mk(func() (Expr, error) {
			return NewFuncCall("date_trunc", []Expr{cu("week"), typed("2024-05-09 10:00", types.Timestamp)})
		}), "timestamp without time zone", "2024-05-06 00:00:00"},
		{"to_char", mk(func() (Expr, error) {
			return NewFuncCall("to_char", []Expr{typed("2024-05-09 15:04:05", types.Timestamp), cu("FMDay DD Mon YYYY HH12:MI PM")})
		}), "text", "Thursday 09 May 2024 03:04 PM"},
		{"jsonb ->>", mk(func() (Expr, error) { return NewBinaryOp("->>", typed(`{"a": {"b": 2}}`, types.Jsonb), cu("a")) }), "text", `{"b": 2}`},
		{"jsonb #>>", mk(func() (Expr, error) {
			return NewBinaryOp("#>>", typed(`{"a": {"b": [1, 2]}}`, types.Jsonb), cu("{a,b,1}"))
		}), "text", "2"},
		{"jsonb_build_object", mk(func() (Expr, error) {
			return NewFuncCall("jsonb_build_object", []Expr{cu("x"), ci(1), cu("a"), &Const{Value: types.DBool(true), Typ: types.Bool}})
		}), "jsonb", `{"a": true, "x": 1}`},
		{"interval * float", mk(func() (Expr, error) {
			return NewBinaryOp("*", typed("1 mon 1 day", types.Interval), typed("1.5", types.Float64))
		}), "interval", "1 mon 16 days 12:00:00"},
		{"split_part negative", mk(func() (Expr, error) { return NewFuncCall("split_part", []Expr{cu("a,b,c"), cu(","), ci(-1)}) }), "text", "c"},
		{"format", mk(func() (Expr, error) {
			return NewFuncCall("format", []Expr{cu("%s %I %L"), cu("x"), cu("Ab"), cu("it's")})
		}), "text", `x "Ab" 'it''s'`},
		{"to_timestamp", mk(func() (Expr, error) {
			return NewFuncCall("to_timestamp", []Expr{cu("05/09/24 3:04 PM"), cu("MM/DD/YY HH:MI AM")})
		}), "timestamp with time zone", "2024-05-09 15:04:00+00"},
		{"to_timestamp fraction", mk(func() (Expr, error) {
			return NewFuncCall("to_timestamp", []Expr{cu("2024-05-09 15:04:05.25"), cu("YYYY-MM-DD HH24:MI:SS.MS")})
		}), "timestamp with time zone", "2024-05-09 15:04:05.25+00"},
		{"to_date compact", mk(func() (Expr, error) { return NewFuncCall("to_date", []Expr{cu("20240509"), cu("YYYYMMDD")}) }), "date", "2024-05-09"},
		{"to_date names", mk(func() (Expr, error) { return NewFuncCall("to_date", []Expr{cu("09 May 2024"), cu("DD Mon YYYY")}) }), "date", "2024-05-09"},
		{"to_date doy", mk(func() (Expr, error) { return NewFuncCall("to_date", []Expr{cu("2024 100"), cu("YYYY DDD")}) }), "date", "2024-04-09"},
		{"to_date range", mk(func() (Expr, error) { return NewFuncCall("to_date", []Expr{cu("2024-13-01"), cu("YYYY-MM-DD")}) }), "", "ERROR 22008"},
		{"to_date bad", mk(func() (Expr, error) { return NewFuncCall("to_date", []Expr{cu("x2024"), cu("YYYY")}) }), "", `ERROR 22007 invalid value "x202" for "YYYY"`},
		{"regexp_replace backref", mk(func() (Expr, error) {
			return NewFuncCall("regexp_replace", []Expr{cu("hello"), cu("(l+)"), cu(`<\1>`)})
		}), "text", "he<ll>o"},
	}
	for _, tc := range tests {
		e, err := tc.mk()
		var got string
		if err != nil {
			got = "ERROR " + sqlerr.Code(err) + " " + err.Error()
		} else {
			got = render(t, e)
			if tc.typ != "" && pgTypeName(e.Type()) != tc.typ {
				t.Errorf("%s: type %s; want %s", tc.name, pgTypeName(e.Type()), tc.typ)
			}
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: got %q; want %q", tc.name, got, tc.want)
		}
	}
}

func mustFn(name string, args ...Expr) Expr {
	e, err := NewFuncCall(name, args)
	if err != nil {
		panic(err)
	}
	return e
}

func TestCommonType(t *testing.T) {
	T := func(ts ...types.Type) []types.Type { return ts }
	tests := []struct {
		in   []types.Type
		want string
	}{
		{T(types.Int32, types.Numeric), "numeric"},
		{T(types.Int16, types.Int64), "bigint"},
		{T(types.Unknown, types.Unknown), "text"},
		{T(types.Unknown, types.Int32), "integer"},
		{T(types.Date, types.Timestamptz), "timestamp with time zone"},
		{T(types.Float64, types.Numeric), "double precision"},
		{T(types.Varchar, types.Text), "character varying"}, // as PostgreSQL: text -> varchar is implicit too
		{T(types.Int32, types.Text), "ERROR 42804 UNION types integer and text cannot be matched"},
		{T(types.Time, types.Date), "ERROR 42846 UNION could not convert type date to time without time zone"},
		{T(types.Type{Kind: types.KindVarchar, Mod: 5}, types.Type{Kind: types.KindVarchar, Mod: 5}), "character varying(5)"},
		{T(types.Type{Kind: types.KindVarchar, Mod: 5}, types.Type{Kind: types.KindVarchar, Mod: 7}), "character varying"},
	}
	for _, tc := range tests {
		got, err := CommonType(tc.in, "UNION")
		s := got.Name()
		if err != nil {
			s = "ERROR " + sqlerr.Code(err) + " " + err.Error()
		}
		if s != tc.want {
			t.Errorf("CommonType(%v) = %s; want %s", tc.in, s, tc.want)
		}
	}
}

func TestAggregateResultTypes(t *testing.T) {
	tests := []struct {
		name string
		args []types.Type
		want string
	}{
		{"count", nil, "bigint"},
		{"count", []types.Type{types.Text}, "bigint"},
		{"sum", []types.Type{types.Int16}, "bigint"},
		{"sum", []types.Type{types.Int32}, "bigint"},
		{"sum", []types.Type{types.Int64}, "numeric"},
		{"sum", []types.Type{types.Float32}, "real"},
		{"sum", []types.Type{types.Numeric}, "numeric"},
		{"avg", []types.Type{types.Int32}, "numeric"},
		{"avg", []types.Type{types.Float32}, "double precision"},
		{"avg", []types.Type{types.Interval}, "interval"},
		{"min", []types.Type{types.Text}, "text"},
		{"max", []types.Type{types.Date}, "date"},
		{"stddev", []types.Type{types.Int32}, "numeric"},
		{"string_agg", []types.Type{types.Text, types.Unknown}, "text"},
		{"sum", []types.Type{types.Text}, "ERROR 42883"},
	}
	for _, tc := range tests {
		a, err := LookupAggregate(tc.name, tc.args, false)
		got := ""
		if err != nil {
			got = "ERROR " + sqlerr.Code(err)
		} else {
			got = a.ResultType.Name()
		}
		if got != tc.want {
			t.Errorf("%s(%v): %s; want %s", tc.name, tc.args, got, tc.want)
		}
	}
}

// TestAggregateRetractEncode applies random adds and retracts to
// retractable states, round-trips the state through Encode/Decode at
// random points, and checks the result against an append-only state fed
// with the surviving multiset.
func TestAggregateRetractEncode(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 1))
	cases := []struct {
		name     string
		typ      types.Type
		distinct bool
		gen      func() types.Datum
	}{
		{"count", types.Int32, false, func() types.Datum { return types.DInt32(int32(r.IntN(10))) }},
		{"sum", types.Int32, false, func() types.Datum { return types.DInt32(int32(r.IntN(100) - 50)) }},
		{"sum", types.Int64, false, func() types.Datum { return types.DInt64(math.MaxInt64 - int64(r.IntN(3))) }},
		{"avg", types.Int64, false, func() types.Datum { return types.DInt64(int64(r.IntN(100))) }},
		{"sum", types.Numeric, false, func() types.Datum { return types.DNumeric(decFromFloat(float64(r.IntN(1000)) / 100)) }},
		{"avg", types.Numeric, true, func() types.Datum { return types.DNumeric(decFromFloat(float64(r.IntN(10)) / 4)) }},
		{"min", types.Int32, false, func() types.Datum { return types.DInt32(int32(r.IntN(20))) }},
		{"max", types.Text, false, func() types.Datum { return types.DVarchar(fmt.Sprint(r.IntN(20))) }},
		{"count", types.Int32, true, func() types.Datum { return types.DInt32(int32(r.IntN(5))) }},
		{"bool_and", types.Bool, false, func() types.Datum { return types.DBool(r.IntN(4) != 0) }},
		{"var_samp", types.Int32, false, func() types.Datum { return types.DInt32(int32(r.IntN(100))) }},
		{"sum", types.Interval, false, func() types.Datum {
			return types.DInterval(types.IntervalValue{Days: int32(r.IntN(5)), Micros: int64(r.IntN(1000))})
		}},
		{"avg", types.Interval, false, func() types.Datum { return types.DInterval(types.IntervalValue{Micros: int64(r.IntN(1000))}) }},
	}
	for _, c := range cases {
		agg, err := LookupAggregate(c.name, []types.Type{c.typ}, c.distinct)
		if err != nil {
			t.Fatal(err)
		}
		st := agg.NewRetractableState()
		var live []types.Datum
		for step := 0; step < 300; step++ {
			if len(live) > 0 && r.IntN(3) == 0 {
				i := r.IntN(len(live))
				if err := st.Retract([]types.Datum{live[i]}); err != nil {
					t.Fatalf("seed %d %s: retract: %v", seed, c.name, err)
				}
				live = append(live[:i], live[i+1:]...)
			} else {
				v := c.gen()
				if r.IntN(10) == 0 {
					v = types.NullDatum
				}
				if err := st.Add([]types.Datum{v}); err != nil {
					t.Fatalf("seed %d %s: add: %v", seed, c.name, err)
				}
				if !v.IsNull() {
					live = append(live, v)
				}
			}
			if r.IntN(20) == 0 {
				buf := st.Encode(nil)
				st = agg.NewRetractableState()
				if err := st.Decode(buf); err != nil {
					t.Fatalf("seed %d %s: decode: %v", seed, c.name, err)
				}
			}
			fresh := agg.NewState()
			for _, v := range live {
				fresh.Add([]types.Datum{v})
			}
			got, err1 := st.Result()
			want, err2 := fresh.Result()
			if (err1 == nil) != (err2 == nil) || types.Compare(got, want) != 0 {
				t.Fatalf("seed %d %s(distinct=%v) step %d: got %v (%v); want %v (%v)", seed, c.name, c.distinct, step, got, err1, want, err2)
			}
		}
	}
	// retracting a value never added is an error (I6), not a silent change
	agg, _ := LookupAggregate("min", []types.Type{types.Int32}, false)
	st := agg.NewRetractableState()
	if err := st.Retract([]types.Datum{types.DInt32(1)}); err == nil {
		t.Fatal("retract of unseen value succeeded")
	}
	if err := agg.NewState().Retract([]types.Datum{types.DInt32(1)}); err != ErrNotRetractable {
		t.Fatalf("append-only retract: %v", err)
	}
}

func TestWindowCancellation(t *testing.T) {
	fn, err := LookupWindowFunc("sum", []types.Type{types.Int32})
	if err != nil {
		t.Fatal(err)
	}
	n := 10000
	in := &WindowInput{Args: make([][]types.Datum, n)}
	for i := range in.Args {
		in.Args[i] = []types.Datum{types.DInt32(int32(i))}
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := make([]types.Datum, n)
	frame := Frame{Mode: FrameRows, Start: ib(OffsetPreceding, 5), End: ib(OffsetFollowing, 5), Exclude: ExcludeCurrentRow}
	err = ComputeWindow(&EvalContext{Ctx: cctx}, fn, frame, in, 0, n, out)
	if sqlerr.Code(err) != sqlerr.QueryCanceled {
		t.Fatalf("got %v; want query canceled", err)
	}
}

func TestValidateFrame(t *testing.T) {
	bad := []Frame{
		{Mode: FrameRows, Start: ib(UnboundedFollowing, 0), End: ib(UnboundedFollowing, 0)},
		{Mode: FrameRows, Start: ib(CurrentRow, 0), End: ib(OffsetPreceding, 1)},
		{Mode: FrameRows, Start: ib(UnboundedPreceding, 0), End: ib(UnboundedPreceding, 0)},
	}
	for _, f := range bad {
		if err := ValidateFrame(f, []types.Type{types.Int32}); sqlerr.Code(err) != sqlerr.WindowingError {
			t.Errorf("%+v: %v", f, err)
		}
	}
	rng := Frame{Mode: FrameRange, Start: FrameBound{Kind: OffsetPreceding, Offset: types.DInt32(1)}, End: ib(CurrentRow, 0)}
	if err := ValidateFrame(rng, []types.Type{types.Int32, types.Int32}); sqlerr.Code(err) != sqlerr.WindowingError {
		t.Errorf("RANGE offset with two keys: %v", err)
	}
	if err := ValidateFrame(rng, []types.Type{types.Int32}); err != nil {
		t.Errorf("valid frame: %v", err)
	}
}

// TestToCharNumber checks number templates against PostgreSQL 15 output.
func TestToCharNumber(t *testing.T) {
	tests := []struct {
		v    Expr
		f    string
		want string
	}{
		{ci(12), "999", "  12"}, {ci(-12), "999", " -12"}, {ci(12), "FM999", "12"},
		{typed("0.5", types.Numeric), "0.99", " 0.50"}, {typed("1234.5", types.Numeric), "9,999.99", " 1,234.50"},
		{typed("-0.5", types.Numeric), "FM990.00", "-0.50"}, {ci(12345), "999", " ###"}, {ci(5), "0009", " 0005"},
		{typed("1.005", types.Numeric), "FM9.99", "1.01"}, {ci(-5), "S999", "  -5"}, {ci(5), "S999", "  +5"},
		{ci(-5), "999MI", "  5-"}, {typed("1234567.891", types.Numeric), "FM9,999,999.99", "1,234,567.89"},
		{ci(0), "999", "   0"}, {ci(0), "FM999", "0"}, {typed("12.3", types.Numeric), "FM999.999", "12.3"},
		{ci(12), "99.9", " 12.0"}, {typed("2.5", types.Float64), "9", " 2"}, {ci(-1234), "FM9G999D00", "-1,234.00"},
		{ci(3), `"n="9`, "n= 3"}, {typed("0.5", types.Numeric), "9.99", "  .50"}, {ci(12), "FM99.9", "12."},
		{typed("-0.5", types.Numeric), "9.99", " -.50"}, {ci(-123), "999", "-123"}, {ci(5), "9,999", "     5"},
		{ci(-5), "FM999MI", "5-"}, {ci(5), "FM999MI", "5"}, {typed("1.5", types.Numeric), "FM0.00", "1.50"},
		{ci(0), "9.99", "  .00"}, {ci(12345), "99.9", " ##.#"}, {ci(-12), "FM999", "-12"}, {ci(7), "999S", "  7+"},
		{ci(100), "FM999.", "100"},
		{ci(0), "FM9G999D00", ".00"}, {ci(0), "FM9D90", ".00"}, {ci(0), "FM9D09", ".0"}, {ci(0), "FM0D00", "0.00"}, {typed("0.5", types.Numeric), "FM9D00", ".50"},
		{typed("NaN", types.Numeric), "999", " NaN"}, {typed("NaN", types.Numeric), "9,999.99", "   NaN"}, {typed("NaN", types.Numeric), "FM999.99", "NaN"},
		{typed("Infinity", types.Numeric), "999", " ###"}, {ci(0), "FM9.99", "0."}, {typed("0.5", types.Numeric), "FM9.99", ".5"},
		{typed("0.001", types.Numeric), "FM9.99", "0."}, {typed("-0.001", types.Numeric), "FM9.99", "0."},
		{ci(1000), "FM999.", "###."}, {ci(1000), "FM999.9", "###.#"}, {ci(0), "FM.99", ".##"}, {typed("0.5", types.Numeric), "FM.99", ".##"},
		// NaN and Infinity fill digit positions with their letters (found by
		// TestDifferentialExpressions seed 1796253861520300463: '999S')
		{typed("NaN", types.Numeric), "999S", "NaN+"}, {typed("NaN", types.Numeric), "S999", "+NaN"}, {typed("NaN", types.Numeric), "FM999S", "NaN+"},
		{typed("NaN", types.Numeric), "999MI", "NaN "}, {typed("NaN", types.Numeric), "0009", " 0NaN"}, {typed("NaN", types.Numeric), "0.99", " #.##"},
		{typed("NaN", types.Numeric), "999.99S", "NaN"}, {typed("NaN", types.Numeric), "999,999", "     NaN"},
		{typed("Infinity", types.Numeric), "9999999999.999", "   Infinity"}, {typed("-Infinity", types.Numeric), "9999999999.999", "  -Infinity"},
		{typed("-Infinity", types.Numeric), "99999999MI", "Infinity-"}, {typed("-Infinity", types.Numeric), "FM999", "-###"},
		{typed("NaN", types.Float64), "999S", "NaN+"}, {typed("Infinity", types.Float64), "999", " ###"},
		{typed("-Infinity", types.Float64), "999MI", "###-"}, {typed("Infinity", types.Float64), "9999999999", "   Infinity"},
		// a point with no fraction positions ends the output when not FM
		{ci(5), "999.", "   5"}, {ci(-5), "999.MI", "  5"}, {typed("5.5", types.Numeric), "999.", "   6"},
	}
	for _, tc := range tests {
		e, err := NewFuncCall("to_char", []Expr{tc.v, cu(tc.f)})
		if err != nil {
			t.Fatal(err)
		}
		if got := render(t, e); got != tc.want {
			t.Errorf("to_char(%s, %q) = %q; want %q", tc.v, tc.f, got, tc.want)
		}
	}
}

// TestJsonbOrdering checks jsonb comparisons against PostgreSQL 15.
func TestJsonbOrdering(t *testing.T) {
	tests := []struct {
		a, op, b string
		want     bool
	}{
		{`[1]`, "<", `1`, false}, {`"a"`, "<", `["a"]`, true}, {`[]`, "<", `null`, true},
		{`{}`, ">", `[1,2]`, true}, {`[1,2]`, ">", `3`, true}, {`[[]]`, "<", `[null]`, false},
		{`[{}]`, ">", `[[1]]`, true}, {`1.0`, "=", `1`, true}, {`{"a": 1.50}`, "=", `{"a": 1.5}`, true},
		{`"b"`, ">", `"a"`, true}, {`true`, ">", `false`, true}, {`{"a": 1}`, "<", `{"b": 0}`, true},
	}
	for _, tc := range tests {
		e, err := NewBinaryOp(tc.op, typed(tc.a, types.Jsonb), typed(tc.b, types.Jsonb))
		if err != nil {
			t.Fatal(err)
		}
		want := "f"
		if tc.want {
			want = "t"
		}
		if got := render(t, e); got != want {
			t.Errorf("%s %s %s = %s; want %s", tc.a, tc.op, tc.b, got, want)
		}
	}
}
