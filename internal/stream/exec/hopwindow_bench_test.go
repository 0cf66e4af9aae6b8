package exec

import (
	"context"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// BenchmarkHopWindowProject is q5's hot path: 256 nexmark-like bids per
// chunk, HOP(2s, 10s) fused with the aggregation's projection (window
// start, auction, row id, window start).
func BenchmarkHopWindowProject(b *testing.B) {
	in := []types.Type{types.Int64, types.Int64, types.Int64, types.Varchar, types.Varchar, types.Timestamp, types.Varchar, types.Int64}
	c := &types.Chunk{}
	for i := 0; i < 256; i++ {
		c.Append(types.OpInsert, types.Row{types.DInt64(int64(1000 + i%50)), types.DInt64(int64(i)), types.DInt64(int64(i * 7)),
			types.DVarchar("channel"), types.DVarchar("https://example.com/item"), types.DTimestamp(int64(i) * 1000), types.DVarchar("extra"), types.DInt64(int64(i))})
	}
	exprs := []expr.Expr{
		&expr.ColumnRef{Index: 8, Typ: types.Timestamp},
		&expr.ColumnRef{Index: 0, Typ: types.Int64},
		&expr.ColumnRef{Index: 7, Typ: types.Int64},
		&expr.ColumnRef{Index: 8, Typ: types.Timestamp},
	}
	src := newSource("in", in...)
	h, err := NewHopWindowProject(src, 5, 2*sec, 10*sec, 0, exprs, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.expand(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*256)/b.Elapsed().Seconds(), "rows/s")
}
