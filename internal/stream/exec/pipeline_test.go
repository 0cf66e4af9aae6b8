package exec

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// A view's whole chain over an exchange: source -> HashDispatcher (by
// group key) -> 2 actors each Merge -> Filter -> HashAgg -> Materialize.
// After every barrier the union of both materialized tables must equal
// the aggregation computed from scratch over the current input, and each
// Materialize (strict) must never see an inconsistent change.
func TestPipelineOverExchangeRandomized(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	actors := []stream.ActorID{21, 22}
	chans := []chan stream.Message{make(chan stream.Message, 1024), make(chan stream.Message, 1024)}
	d, err := stream.NewHashDispatcher(20, []int{1}, stream.VnodeOwners(actors),
		[]stream.Output{{Actor: 21, Ch: chans[0]}, {Actor: 22, Ch: chans[1]}})
	if err != nil {
		t.Fatal(err)
	}
	// Filter: v IS NOT NULL OR f.
	isNotNull, err := expr.NewIsNull(&expr.ColumnRef{Index: 2, Typ: types.Int64}, true)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := expr.NewBinaryOp("OR", isNotNull, &expr.ColumnRef{Index: 4, Typ: types.Bool})
	if err != nil {
		t.Fatal(err)
	}
	calls := []AggCall{
		{Agg: mustAgg(t, "count", false), Filter: NoColumn},
		{Agg: mustAgg(t, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "min", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "count", true, types.Int64), Args: []int{2}, Filter: NoColumn},
	}
	resSchema, per, err := HashAggStateSchemas("pipe", aggInTypes, []int{1}, calls, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	var mats []*Materialize
	for i, a := range actors {
		m := stream.NewMerge(a, aggInTypes, []<-chan stream.Message{chans[i]})
		agg, err := NewHashAgg(NewFilter(m, pred, nil), []int{1}, calls, []int{0}, h.table(resSchema), h.tables(per))
		if err != nil {
			t.Fatal(err)
		}
		outTypes := agg.Schema()
		mv := h.table(state.Schema{Name: fmt.Sprintf("mv part %d", i), Types: outTypes, PK: []int{0}, DistKey: []int{0}})
		mats = append(mats, NewMaterialize(agg, mv, true, nil))
	}
	tbl := &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 80, gen: func(pk int64) types.Row {
		var v any = rng.Intn(10)
		if rng.Intn(5) == 0 {
			v = nil
		}
		return aggRow(int(pk), rng.Intn(12), v, "s", rng.Intn(2) == 0)
	}}
	for step := 0; step < randomSteps(30); step++ {
		for i := rng.Intn(4); i >= 0; i-- {
			if err := d.Dispatch(ctx, stream.Message{Chunk: tbl.step(1 + rng.Intn(30))}); err != nil {
				t.Fatal(err)
			}
		}
		b := h.barrier()
		if err := d.Dispatch(ctx, stream.Message{Barrier: b}); err != nil {
			t.Fatal(err)
		}
		var got []types.Row
		for _, m := range mats {
			drain(t, ctx, m, nil)
			it, err := m.table.Iter(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				got = append(got, it.Row())
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
		}
		if rng.Intn(2) == 0 {
			h.commit(b.Prev)
		}
		var kept []types.Row
		for _, r := range tbl.current() {
			if !r[2].IsNull() || r[4].Bool() {
				kept = append(kept, r)
			}
		}
		want := rowsSorted(aggFromScratch(t, kept, []int{1}, calls, false))
		if g := rowsSorted(got); !slices.Equal(g, want) {
			t.Fatalf("seed %d step %d: %s", seed, step, diffRows(g, want))
		}
	}
}
