package exec

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// The executor benchmarks feed inserts in 1024-row chunks with a barrier
// (and an engine commit) every 64 chunks, through a real storage engine
// on the in-memory object store. Each reports rows/s and the process's
// CPU time per input row (cpu-µs/row: user+system of every goroutine,
// GC and the engine's background work included), which says more than
// wall time on a shared, loaded machine.
//
//	go test -run XXX -bench 'HashAgg|HashJoin' ./internal/stream/exec/

const (
	benchChunkRows      = 1024
	benchChunksPerEpoch = 64
)

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMeter reports rows/s and CPU µs per row at the end of a benchmark.
type benchMeter struct {
	b    *testing.B
	cpu0 time.Duration
}

func startMeter(b *testing.B) *benchMeter {
	b.ResetTimer()
	return &benchMeter{b: b, cpu0: cpuTime()}
}

func (m *benchMeter) stop(rows int) {
	m.b.StopTimer()
	cpu := cpuTime() - m.cpu0
	m.b.ReportMetric(float64(rows)/m.b.Elapsed().Seconds(), "rows/s")
	m.b.ReportMetric(float64(cpu.Microseconds())/float64(rows), "cpu-µs/row")
}

// benchAgg feeds rows from gen into an aggregation over aggInTypes.
func benchAgg(b *testing.B, groupKey []int, calls []AggCall, gen func(pk int) types.Row) {
	h := newHarness(b)
	ctx := context.Background()
	src := newSource("t", aggInTypes...)
	a := newTestAgg(b, h, src, groupKey, calls)
	m := startMeter(b)
	pk, rows := 0, 0
	for rows < b.N {
		for c := 0; c < benchChunksPerEpoch && rows < b.N; c++ {
			ch := &types.Chunk{}
			for i := 0; i < benchChunkRows; i++ {
				ch.Append(types.OpInsert, gen(pk))
				pk++
			}
			rows += benchChunkRows
			src.push(ch)
		}
		bar := h.barrier()
		src.pushBarrier(bar)
		drainBench(b, ctx, a)
		h.commit(bar.Prev)
	}
	m.stop(rows)
}

// BenchmarkHashAgg: GROUP BY g (1000 groups) with count(*), sum(v),
// max(v).
func BenchmarkHashAgg(b *testing.B) {
	calls := []AggCall{
		{Agg: mustAgg(b, "count", false), Filter: NoColumn},
		{Agg: mustAgg(b, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(b, "max", false, types.Int64), Args: []int{2}, Filter: NoColumn},
	}
	benchAgg(b, []int{1}, calls, func(pk int) types.Row { return aggRow(pk, pk%1000, pk%97, "x", true) })
}

// BenchmarkHashAggManyGroups: GROUP BY g over 100,000 groups (each row a
// pseudo-random group) with count(*), sum, min, max and avg of v: the
// `runnel bench views` aggregation.
func BenchmarkHashAggManyGroups(b *testing.B) {
	calls := []AggCall{
		{Agg: mustAgg(b, "count", false), Filter: NoColumn},
		{Agg: mustAgg(b, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(b, "min", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(b, "max", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(b, "avg", false, types.Int64), Args: []int{2}, Filter: NoColumn},
	}
	benchAgg(b, []int{1}, calls, func(pk int) types.Row {
		return aggRow(pk, (pk*7919)%100_000, (pk*31)%100_003, "x", true)
	})
}

// BenchmarkHashJoin: inner join on a key with ~4 rows per key per side;
// both sides receive inserts; reports input rows/s.
func BenchmarkHashJoin(b *testing.B) {
	h := newHarness(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, l, r := newTestJoin(b, h, JoinInner, nil)
	m := startMeter(b)
	pk, rows := 0, 0
	for rows < b.N {
		for c := 0; c < benchChunksPerEpoch && rows < b.N; c++ {
			lc, rc := &types.Chunk{}, &types.Chunk{}
			for i := 0; i < benchChunkRows/2; i++ {
				lc.Append(types.OpInsert, row(pk, pk/4, 0))
				rc.Append(types.OpInsert, row(pk, pk/4, 1))
				pk++
			}
			rows += benchChunkRows
			l.push(lc)
			r.push(rc)
		}
		bar := h.barrier()
		l.pushBarrier(bar)
		r.pushBarrier(bar)
		drainBench(b, ctx, j)
		h.commit(bar.Prev)
	}
	m.stop(rows)
}

// BenchmarkHashJoinDimFact: the right side holds 100,000 dimension rows
// (one per key, loaded before the timer starts); the left side receives
// fact rows, each matching one dimension row: the `runnel bench views`
// join. Reports fact rows/s.
func BenchmarkHashJoinDimFact(b *testing.B) {
	const dimRows = 100_000
	h := newHarness(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, l, r := newTestJoin(b, h, JoinInner, nil)
	for lo := 0; lo < dimRows; lo += benchChunkRows {
		rc := &types.Chunk{}
		for i := lo; i < lo+benchChunkRows && i < dimRows; i++ {
			rc.Append(types.OpInsert, row(i, i, 1))
		}
		r.push(rc)
	}
	bar := h.barrier()
	l.pushBarrier(bar)
	r.pushBarrier(bar)
	drainBench(b, ctx, j)
	h.commit(bar.Prev)
	m := startMeter(b)
	pk, rows := 0, 0
	for rows < b.N {
		for c := 0; c < benchChunksPerEpoch && rows < b.N; c++ {
			lc := &types.Chunk{}
			for i := 0; i < benchChunkRows; i++ {
				lc.Append(types.OpInsert, row(pk, (pk*7919)%dimRows, 0))
				pk++
			}
			rows += benchChunkRows
			l.push(lc)
		}
		bar := h.barrier()
		l.pushBarrier(bar)
		r.pushBarrier(bar)
		drainBench(b, ctx, j)
		h.commit(bar.Prev)
	}
	m.stop(rows)
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
