package batch

import (
	"testing"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// timeBounds reads the time index's comparisons with constants (either
// side, AND-ed, BETWEEN's form) and ignores everything else.
func TestTimeBounds(t *testing.T) {
	rel := &catalog.Relation{Kind: catalog.KindTable, Name: "m",
		Columns: []catalog.Column{{Name: "host", Type: types.Text}, {Name: "ts", Type: types.Timestamptz}, {Name: "v", Type: types.Int64}},
		PK:      []int{0, 1}, Options: map[string]string{"time_index": "ts"}}
	ts := &expr.ColumnRef{Index: 1, Typ: types.Timestamptz}
	v := &expr.ColumnRef{Index: 2, Typ: types.Int64}
	c := func(x int64) expr.Expr { return &expr.Const{Value: types.DTimestamptz(x), Typ: types.Timestamptz} }
	op := func(name string, l, r expr.Expr) expr.Expr {
		e, err := expr.NewBinaryOp(name, l, r)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	and := func(l, r expr.Expr) expr.Expr { return op("AND", l, r) }
	for _, tc := range []struct {
		name   string
		filter expr.Expr
		lo, hi int64
		ok     bool
	}{
		{"range", and(op(">=", ts, c(10)), op("<", ts, c(20))), 10, 20, true},
		{"flipped", and(op(">", c(20), ts), op("<=", c(10), ts)), 10, 20, true},
		{"equal", op("=", ts, c(15)), 15, 15, true},
		{"tightest", and(and(op(">=", ts, c(10)), op(">=", ts, c(12))), op("<=", ts, c(30))), 12, 30, true},
		{"other columns only", op(">", v, &expr.Const{Value: types.DInt64(3), Typ: types.Int64}), 0, 0, false},
		{"column against column", op(">", ts, ts), 0, 0, false},
	} {
		lo, hi, ok := timeBounds(rel, tc.filter, &expr.EvalContext{})
		if ok != tc.ok || ok && (lo != tc.lo || hi != tc.hi) {
			t.Errorf("%s: %d..%d ok=%v; want %d..%d ok=%v", tc.name, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
	if _, _, ok := timeBounds(&catalog.Relation{Kind: catalog.KindTable, Columns: rel.Columns}, op(">", ts, c(1)), &expr.EvalContext{}); ok {
		t.Error("bounds for a table without a time index")
	}
}
