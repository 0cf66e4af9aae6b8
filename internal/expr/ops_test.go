package expr

import (
	"testing"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func ci(v int32) Expr  { return &Const{Value: types.DInt32(v), Typ: types.Int32} }
func ci2(v int16) Expr { return &Const{Value: types.DInt16(v), Typ: types.Int16} }
func ci8(v int64) Expr { return &Const{Value: types.DInt64(v), Typ: types.Int64} }
func cu(s string) Expr { return &Const{Value: types.DUnknown(s), Typ: types.Unknown} }
func cnull() Expr      { return &Const{Typ: types.Null} }

func evalConst(t *testing.T, e Expr) (types.Datum, error) {
	t.Helper()
	return e.Eval(&EvalContext{}, nil)
}

func TestIntArithmetic(t *testing.T) {
	tests := []struct {
		op     string
		l, r   Expr
		want   string
		typ    string
		sqlErr string
	}{
		{"+", ci(1), ci(2), "3", "integer", ""},
		{"+", ci(2147483647), ci(1), "", "", "22003"},
		{"-", ci(-2147483648), ci(1), "", "", "22003"},
		{"*", ci8(1 << 62), ci8(2), "", "", "22003"},
		{"/", ci(7), ci(-2), "-3", "integer", ""},
		{"/", ci(7), ci(0), "", "", "22012"},
		{"%", ci(-7), ci(2), "-1", "integer", ""},
		{"%", ci(7), ci(0), "", "", "22012"},
		{"/", ci(-2147483648), ci(-1), "", "", "22003"},
		{"+", ci2(32767), ci2(1), "", "", "22003"},
		{"+", ci2(1), ci(1), "2", "integer", ""},
		{"+", ci(1), ci8(1), "2", "bigint", ""},
		{"+", ci(1), cu("2"), "3", "integer", ""},
		{"=", ci(1), cu("1"), "t", "boolean", ""},
		{"<", ci(1), ci8(2), "t", "boolean", ""},
		{"+", ci(1), cnull(), "NULL", "integer", ""},
		{"^", ci(2), ci(3), "8", "double precision", ""},
	}
	for _, tc := range tests {
		e, err := NewBinaryOp(tc.op, tc.l, tc.r)
		if err != nil {
			if sqlerr.Code(err) != tc.sqlErr {
				t.Errorf("%s %s %s: bind error %v; want %s", tc.l, tc.op, tc.r, err, tc.sqlErr)
			}
			continue
		}
		v, err := evalConst(t, e)
		if tc.sqlErr != "" {
			if sqlerr.Code(err) != tc.sqlErr {
				t.Errorf("%s: got %v, %v; want error %s", e, v, err, tc.sqlErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", e, err)
			continue
		}
		if v.String() != tc.want || e.Type().Name() != tc.typ {
			t.Errorf("%s: got %s (%s); want %s (%s)", e, v, e.Type().Name(), tc.want, tc.typ)
		}
	}
}

func TestUndefinedOperator(t *testing.T) {
	_, err := NewBinaryOp("+", ci(1), &Const{Value: types.DBool(true), Typ: types.Bool})
	if sqlerr.Code(err) != sqlerr.UndefinedFunction || err.Error() != "operator does not exist: integer + boolean" {
		t.Fatalf("got %v", err)
	}
}
