package exec

import (
	"context"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// A row's expansion is emitted a chunk at a time however long, and its
// delete retracts exactly the rows its insert produced; a zero step is an
// expression error: the row expands to nothing, both ways.
func TestProjectSetLongSeriesAndRetraction(t *testing.T) {
	ctx := context.Background()
	ts := []types.Type{types.Int64, types.Int64, types.Int64} // id, n, step
	src := newSource("t", ts...)
	col := func(i int) expr.Expr { return &expr.ColumnRef{Index: i, Typ: types.Int64} }
	one := &expr.Const{Value: types.DInt64(1), Typ: types.Int64}
	p, err := NewProjectSet(src, []SRF{{Name: "generate_series", Args: []expr.Expr{one, col(1), col(2)}, Type: types.Int64}}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 3*chunkSize + 7
	before := ExprErrorCount.Load()
	src.push(chunk(types.OpInsert, row(1, n, 1), types.OpInsert, row(2, 5, 0), types.OpInsert, row(3, 2, 1)))
	src.push(chunk(types.OpDelete, row(1, n, 1), types.OpDelete, row(2, 5, 0)))
	src.pushBarrier(newHarness(t).barrier())
	v := newView()
	chunks, _ := drain(t, ctx, p, v)
	for _, c := range chunks {
		if c.Len() > chunkSize {
			t.Fatalf("a chunk of %d rows; want at most %d", c.Len(), chunkSize)
		}
	}
	if got := v.sorted(); len(got) != 2 || got[0] != "(3, 2, 1, 1, 1)" || got[1] != "(3, 2, 2, 1, 2)" {
		t.Fatalf("after the retractions: %v; want row 3's two rows (id, n, value, step, ordinal)", got)
	}
	if d := ExprErrorCount.Load() - before; d != 2 {
		t.Fatalf("%d expression errors counted; want 2 (the zero step, inserted and deleted)", d)
	}
}
