package exec

import (
	"context"
	"testing"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// BenchmarkHashAgg: GROUP BY g (1000 groups) with count(*), sum(v),
// max(v), over inserts in 1024-row chunks and a barrier (and engine commit) every 64 chunks.
// Reports rows/s.
func BenchmarkHashAgg(b *testing.B) {
	h := newHarness(b)
	ctx := context.Background()
	src := newSource("t", aggInTypes...)
	calls := []AggCall{
		{Agg: mustAgg(b, "count", false), Filter: NoColumn},
		{Agg: mustAgg(b, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(b, "max", false, types.Int64), Args: []int{2}, Filter: NoColumn},
	}
	a := newTestAgg(b, h, src, []int{1}, calls)
	const chunkRows = 1024
	const chunksPerEpoch = 64
	b.ResetTimer()
	pk := 0
	rows := 0
	for rows < b.N {
		for c := 0; c < chunksPerEpoch && rows < b.N; c++ {
			ch := &types.Chunk{}
			for i := 0; i < chunkRows; i++ {
				ch.Append(types.OpInsert, aggRow(pk, pk%1000, pk%97, "x", true))
				pk++
			}
			rows += chunkRows
			src.push(ch)
		}
		bar := h.barrier()
		src.pushBarrier(bar)
		drainBench(b, ctx, a)
		h.commit(bar.Prev)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkHashJoin: inner join on a key with ~4 rows per key per side;
// both sides receive inserts; reports input rows/s.
func BenchmarkHashJoin(b *testing.B) {
	h := newHarness(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, l, r := newTestJoin(b, h, JoinInner, nil)
	const chunkRows = 1024
	const chunksPerEpoch = 64
	b.ResetTimer()
	pk := 0
	rows := 0
	for rows < b.N {
		for c := 0; c < chunksPerEpoch && rows < b.N; c++ {
			lc, rc := &types.Chunk{}, &types.Chunk{}
			for i := 0; i < chunkRows/2; i++ {
				lc.Append(types.OpInsert, row(pk, pk/4, 0))
				rc.Append(types.OpInsert, row(pk, pk/4, 1))
				pk++
			}
			rows += chunkRows
			l.push(lc)
			r.push(rc)
		}
		bar := h.barrier()
		l.pushBarrier(bar)
		r.pushBarrier(bar)
		drainBench(b, ctx, j)
		h.commit(bar.Prev)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

func drainBench(b *testing.B, ctx context.Context, e stream.Executor) {
	for {
		m, err := e.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if m.Barrier != nil {
			return
		}
	}
}
