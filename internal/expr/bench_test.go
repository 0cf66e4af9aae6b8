package expr

import (
	"testing"

	"github.com/runneldb/runnel/internal/types"
)

func benchRow() types.Row {
	return types.Row{types.DInt32(12345), types.DInt32(678), types.DInt64(1 << 40), types.DNumeric(decFromFloat(12.5))}
}

func BenchmarkIntAdd(b *testing.B) {
	e, err := NewBinaryOp("+", &ColumnRef{Index: 0, Typ: types.Int32}, &ColumnRef{Index: 1, Typ: types.Int32})
	if err != nil {
		b.Fatal(err)
	}
	row, ctx := benchRow(), testCtx()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(ctx, row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIntCompare(b *testing.B) {
	e, err := NewBinaryOp("<", &ColumnRef{Index: 0, Typ: types.Int32}, &ColumnRef{Index: 2, Typ: types.Int64})
	if err != nil {
		b.Fatal(err)
	}
	row, ctx := benchRow(), testCtx()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(ctx, row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNumericAdd(b *testing.B) {
	e, err := NewBinaryOp("+", &ColumnRef{Index: 3, Typ: types.Numeric}, &ColumnRef{Index: 0, Typ: types.Int32})
	if err != nil {
		b.Fatal(err)
	}
	row, ctx := benchRow(), testCtx()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(ctx, row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSumInt32(b *testing.B) {
	agg, err := LookupAggregate("sum", []types.Type{types.Int32}, false)
	if err != nil {
		b.Fatal(err)
	}
	st := agg.NewState()
	args := []types.Datum{types.DInt32(7)}
	b.ReportAllocs()
	for b.Loop() {
		if err := st.Add(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCountStar(b *testing.B) {
	agg, err := LookupAggregate("count", nil, false)
	if err != nil {
		b.Fatal(err)
	}
	st := agg.NewState()
	b.ReportAllocs()
	for b.Loop() {
		if err := st.Add(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWindowSlidingSum is the cost per row of sum(v) OVER (ROWS
// BETWEEN 100 PRECEDING AND CURRENT ROW) over a 10k-row partition.
func BenchmarkWindowSlidingSum(b *testing.B) {
	fn, err := LookupWindowFunc("sum", []types.Type{types.Int32})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10000
	in := &WindowInput{Args: make([][]types.Datum, n)}
	for i := range in.Args {
		in.Args[i] = []types.Datum{types.DInt32(int32(i % 97))}
	}
	out := make([]types.Datum, n)
	frame := Frame{Mode: FrameRows, Start: ib(OffsetPreceding, 100), End: ib(CurrentRow, 0)}
	ctx := testCtx()
	b.ReportAllocs()
	for b.Loop() {
		if err := ComputeWindow(ctx, fn, frame, in, 0, n, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}

// BenchmarkWindowSlidingMax uses the monotonic deque.
func BenchmarkWindowSlidingMax(b *testing.B) {
	fn, err := LookupWindowFunc("max", []types.Type{types.Int32})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10000
	in := &WindowInput{Args: make([][]types.Datum, n)}
	for i := range in.Args {
		in.Args[i] = []types.Datum{types.DInt32(int32((i * 7919) % 1000))}
	}
	out := make([]types.Datum, n)
	frame := Frame{Mode: FrameRows, Start: ib(OffsetPreceding, 100), End: ib(OffsetFollowing, 100)}
	ctx := testCtx()
	b.ReportAllocs()
	for b.Loop() {
		if err := ComputeWindow(ctx, fn, frame, in, 0, n, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
