package exec

import (
	"context"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// TestHashAggAppendOnlyExtremes: over append-only input (SetAppendOnly)
// min/max of integers and text keep no inputs — their input tables stay
// empty — and give the same results as from scratch at every barrier,
// also when the group cache is tiny (groups reload from the result row)
// and after a restart over the same tables; max of float8 (0 and -0
// compare equal) still keeps its inputs. A retraction is an I6 error.
// Seeded (RUNNEL_TEST_SEED replays).
func TestHashAggAppendOnlyExtremes(t *testing.T) {
	inTypes := []types.Type{types.Int64, types.Int64, types.Int64, types.Text, types.Float64} // pk, g, v, s, f
	calls := []AggCall{
		{Agg: mustAgg(t, "max", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "min", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "min", false, types.Text), Args: []int{3}, Filter: NoColumn},
		{Agg: mustAgg(t, "max", false, types.Float64), Args: []int{4}, Filter: NoColumn},
		{Agg: mustAgg(t, "count", false), Filter: NoColumn},
	}
	for _, mode := range []string{"default", "tiny-cache"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "tiny-cache" {
				defer func(old *CacheBudget) { aggCacheBudget = old }(aggCacheBudget)
				aggCacheBudget = NewCacheBudget(4 << 10)
			}
			seed := testSeed(t)
			rng := rand.New(rand.NewSource(seed))
			h := newHarness(t)
			res, per, err := HashAggStateSchemas("test", inTypes, []int{1}, calls, []int{0})
			if err != nil {
				t.Fatal(err)
			}
			resT, perT := h.table(res), h.tables(per)
			start := func() (*HashAgg, *source) {
				src := newSource("t", inTypes...)
				tables := make([]*state.Table, len(perT))
				for i, pt := range perT {
					if pt != nil {
						tables[i] = state.New(pt.ID(), *pt.Schema(), h.engine, h.epoch)
					}
				}
				a, err := NewHashAgg(src, []int{1}, calls, []int{0}, state.New(resT.ID(), *resT.Schema(), h.engine, h.epoch), tables)
				if err != nil {
					t.Fatal(err)
				}
				a.SetStrict(true, nil)
				a.SetAppendOnly()
				return a, src
			}
			a, src := start()
			for i, want := range []bool{true, true, true, false, false} {
				if a.calls[i].extOnly != want {
					t.Fatalf("call %d (%s %s): extOnly %v; want %v", i, calls[i].Agg.Name, calls[i].Agg.ArgTypes, a.calls[i].extOnly, want)
				}
			}
			v := newView()
			var rows []types.Row
			words := []string{"a", "b", "c", "dd", ""}
			floats := []float64{0, -0.0, 1.5, -2, 3}
			pk := 0
			for step := 0; step < 40; step++ {
				c := &types.Chunk{}
				for i := rng.Intn(20); i >= 0; i-- {
					pk++
					var val any = rng.Intn(1000) - 500
					if rng.Intn(6) == 0 {
						val = nil
					}
					r := row(pk, rng.Intn(6), val, types.DVarchar(words[rng.Intn(len(words))]), types.DFloat64(floats[rng.Intn(len(floats))]))
					rows = append(rows, r)
					c.Append(types.OpInsert, r)
				}
				src.push(c)
				b := h.barrier()
				src.pushBarrier(b)
				drain(t, context.Background(), a, v)
				h.commit(b.Prev)
				want := rowsSorted(aggFromScratch(t, rows, []int{1}, calls, false))
				if got := v.sorted(); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: %s", seed, step, diffRows(got, want))
				}
				if step == 20 { // restart: the new executor reads the committed state
					a, src = start()
				}
			}
			for i, pt := range perT {
				if pt == nil {
					continue
				}
				it, err := state.New(pt.ID(), *pt.Schema(), h.engine, h.epoch).Iter(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for it.Next() {
					n++
				}
				it.Close()
				if kept := !a.calls[i].extOnly; (n > 0) != kept {
					t.Fatalf("call %d's input table holds %d rows (extOnly %v)", i, n, a.calls[i].extOnly)
				}
			}
			// I6: append-only input that retracts fails the actor (strict).
			src.push(chunk(types.OpDelete, rows[0]))
			src.pushBarrier(h.barrier())
			if _, err := a.Next(context.Background()); err == nil {
				t.Fatal("a retraction over append-only input: got no error")
			}
		})
	}
}
