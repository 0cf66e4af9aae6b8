package exec

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// (p int4, o int4, v int4), pk o
var owStoryTypes = []types.Type{types.Int32, types.Int32, types.Int32}

func owStoryRow(p, o, v int32) types.Row {
	return types.Row{types.DInt32(p), types.DInt32(o), types.DInt32(v)}
}

func owStoryCall(t testing.TB, name string, frame expr.Frame) OverWindowCall {
	t.Helper()
	var args []types.Type
	var cols []int
	switch name {
	case "row_number":
	default:
		args, cols = []types.Type{types.Int32}, []int{2}
	}
	fn, err := expr.LookupWindowFunc(name, args)
	if err != nil {
		t.Fatal(err)
	}
	c := OverWindowCall{Func: fn, Args: cols, Filter: NoColumn, Frame: frame}
	if name == "lag" || name == "lead" {
		c.ConstOffset, c.OffsetConst = 1, true
	}
	return c
}

// TestOverWindowCancelLatency aborts an executor while it recomputes a
// 1,000,000-row partition (an insert at the partition's start with the
// default frame recomputes every row) and measures the time from the
// cancellation to Next returning (I5). The default partition has 200,000
// rows to keep the package's test time down; RUNNEL_OW_CANCEL_ROWS=1000000
// runs the design's size. Each point is tried three times and the best
// latency must be under 20ms: a missing cancellation check costs the rest
// of the recomputation (seconds) every time, while a GC pause on a loaded
// machine only hits some tries.
func TestOverWindowCancelLatency(t *testing.T) {
	n := int32(200_000)
	if s := os.Getenv("RUNNEL_OW_CANCEL_ROWS"); s != "" {
		var v int
		fmt.Sscan(s, &v)
		n = int32(v)
	}
	h := newHarness(t)
	calls := []OverWindowCall{owStoryCall(t, "sum", expr.DefaultFrame())}
	order := []ColumnOrder{{Col: 1}}
	st := h.table(OverWindowStateSchema("ow", owStoryTypes, []int{0}, order, []int{1}, calls))
	// The stored state of a partition of n rows: (p, o, v, sum).
	for o := int32(1); o <= n; o++ {
		r := owStoryRow(0, o*2, 1)
		st.Insert(append(r, types.DInt64(int64(o))))
	}
	b := h.barrier()
	if err := st.Commit(b.Curr); err != nil {
		t.Fatal(err)
	}
	h.commit(b.Prev)
	for _, point := range []string{"load", "compute"} {
		best := time.Hour
		for try := 0; try < 3; try++ {
			lat := owCancelOnce(t, h, st, calls, order, n, point)
			t.Logf("partition of %d rows, cancelled during %s: goroutine exited %v after cancel", n, point, lat)
			best = min(best, lat)
		}
		// The benchmark run (RUNNEL_OW_CANCEL_ROWS set, machine to itself)
		// holds the 20 ms bound; the default run shares the machine with
		// every other package's tests, so it only catches a recompute that
		// ignores cancellation (a 200,000-row recompute runs far longer).
		limit := 100 * time.Millisecond
		if os.Getenv("RUNNEL_OW_CANCEL_ROWS") != "" {
			limit = 20 * time.Millisecond
		}
		if best > limit {
			t.Fatalf("cancellation during %s took at least %v; want under %v (goal 10ms)", point, best, limit)
		}
	}
}

func owCancelOnce(t *testing.T, h *harness, st *state.Table, calls []OverWindowCall, order []ColumnOrder, n int32, point string) time.Duration {
	{
		{
			src := newSource("t", owStoryTypes...)
			var cancelAt atomic.Int64 // unix nanos
			var committing atomic.Bool
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			hook := func(p string, rows int) {
				if p == "commit" {
					committing.Store(true)
				}
				switch {
				case point == "load" && p == "load" && rows >= int(n)/2:
					// mid-load: cancel right here
					once.Do(func() { cancelAt.Store(time.Now().UnixNano()); cancel() })
				case point == "compute" && p == "compute":
					// mid-kernel: cancel from another goroutine shortly
					// after the kernel starts
					once.Do(func() {
						time.AfterFunc(20*time.Millisecond, func() { cancelAt.Store(time.Now().UnixNano()); cancel() })
					})
				}
			}
			ow, err := NewOverWindow(src, []int{0}, order, []int{1}, calls, st, OverWindowOptions{Strict: true, TestHook: hook})
			if err != nil {
				t.Fatal(err)
			}
			src.push(chunk(types.OpInsert, owStoryRow(0, 1, 5)))
			src.pushBarrier(h.barrier())
			done := make(chan error, 1)
			go func() {
				for {
					if _, err := ow.Next(ctx); err != nil {
						done <- err
						return
					}
				}
			}()
			err = <-done
			exited := time.Now()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Next returned %v; want context.Canceled", err)
			}
			if cancelAt.Load() == 0 {
				t.Fatalf("the executor finished before the cancellation point")
			}
			if committing.Load() {
				// the kernel finished within 20ms and the cancel hit the
				// state table's commit (not interruptible): retry
				t.Logf("cancel arrived after the recomputation")
				return time.Hour
			}
			return exited.Sub(time.Unix(0, cancelAt.Load()))
		}
	}
}

// processCPU returns the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOverWindow measures input rows per second under random
// updates that move rows within their partition (new order key and
// value), for partitions of 100 and 100,000 rows.
func BenchmarkOverWindow(b *testing.B) {
	funcs := []struct {
		label, name string
		frame       expr.Frame
	}{
		{"sum", "sum", expr.DefaultFrame()},
		{"sum_rows2", "sum", expr.Frame{Mode: expr.FrameRows, Start: expr.FrameBound{Kind: expr.OffsetPreceding, Offset: types.DInt64(2)}, End: expr.FrameBound{Kind: expr.CurrentRow}}},
		{"row_number", "row_number", expr.DefaultFrame()},
		{"lag", "lag", expr.DefaultFrame()},
	}
	for _, size := range []int{100, 100_000} {
		for _, f := range funcs {
			for _, pol := range []OverWindowCachePolicy{CacheFull, CacheRecent} {
				b.Run(fmt.Sprintf("%s/partition=%d/cache=%s", f.label, size, pol), func(b *testing.B) {
					benchOverWindow(b, f.name, f.frame, size, pol)
				})
			}
		}
	}
}

func benchOverWindow(b *testing.B, name string, frame expr.Frame, size int, pol OverWindowCachePolicy) {
	const total = 100_000 // rows in all partitions
	const batch = 256     // updates per epoch
	h := newHarness(b)
	ctx := context.Background()
	src := newSource("t", owStoryTypes...)
	calls := []OverWindowCall{owStoryCall(b, name, frame)}
	order := []ColumnOrder{{Col: 1}}
	st := h.table(OverWindowStateSchema("ow", owStoryTypes, []int{0}, order, []int{1}, calls))
	ow, err := NewOverWindow(src, []int{0}, order, []int{1}, calls, st, OverWindowOptions{Strict: true, Cache: pol})
	if err != nil {
		b.Fatal(err)
	}
	parts := total / size
	// o identifies a row (the pk); rows are (p = o % parts, o, v).
	rows := make([]types.Row, total)
	c := &types.Chunk{}
	for i := range rows {
		rows[i] = owStoryRow(int32(i%parts), int32(i*4), int32(i%7))
		c.Append(types.OpInsert, rows[i])
		if c.Len() == 4096 {
			src.push(c)
			c = &types.Chunk{}
		}
	}
	src.push(c)
	bar := h.barrier()
	src.pushBarrier(bar)
	drain(b, ctx, ow, nil)
	h.commit(bar.Prev)
	recomputed0 := ow.Stats().RowsRecomputed.Load()
	rng := rand.New(rand.NewSource(1))
	used := make(map[int32]bool, total)
	for _, r := range rows {
		used[int32(r[1].Int())] = true
	}
	b.ResetTimer()
	cpu0 := processCPU()
	for it := 0; it < b.N; it++ {
		c := &types.Chunk{}
		for k := 0; k < batch; k++ {
			i := rng.Intn(total)
			old := rows[i]
			// a delete and an insert with a new pk: the row moves to a
			// random place in its partition
			o := int32(rng.Intn(total * 16))
			for used[o] {
				o = int32(rng.Intn(total * 16))
			}
			delete(used, int32(old[1].Int()))
			used[o] = true
			nr := owStoryRow(int32(old[0].Int()), o, int32(rng.Intn(7)))
			rows[i] = nr
			c.Append(types.OpDelete, old)
			c.Append(types.OpInsert, nr)
		}
		src.push(c)
		bar := h.barrier()
		src.pushBarrier(bar)
		drain(b, ctx, ow, nil)
		if it%16 == 15 {
			h.commit(bar.Prev)
		}
	}
	b.StopTimer()
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(b.N*batch*2)/b.Elapsed().Seconds(), "rows/s")
	// CPU seconds of the whole process (GC included): the rate per core,
	// steadier than rows/s on a shared machine.
	b.ReportMetric(float64(b.N*batch*2)/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(ow.Stats().RowsRecomputed.Load()-recomputed0)/float64(b.N*batch*2), "recomputed/row")
}
