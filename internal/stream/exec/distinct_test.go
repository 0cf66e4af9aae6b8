package exec

import (
	"context"
	"io"
	"log/slog"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

func TestDistinctRandomized(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t)
	ctx := context.Background()
	ts := []types.Type{types.Int64, types.Int64, types.Text}
	src := newSource("t", ts...)
	cols := []int{1, 2}
	d, err := NewDistinct(src, cols, h.table(DistinctStateSchema("distinct", ts, cols)))
	if err != nil {
		t.Fatal(err)
	}
	tbl := &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 50, gen: func(pk int64) types.Row {
		var s any = types.DVarchar([]string{"x", "y"}[rng.Intn(2)])
		if rng.Intn(5) == 0 {
			s = nil
		}
		return row(int(pk), rng.Intn(4), s)
	}}
	v := newView()
	for step := 0; step < randomSteps(40); step++ {
		for i := rng.Intn(3); i >= 0; i-- {
			src.push(tbl.step(1 + rng.Intn(10)))
		}
		b := h.barrier()
		src.pushBarrier(b)
		drain(t, ctx, d, v)
		if rng.Intn(2) == 0 {
			h.commit(b.Prev)
		}
		seen := map[string]bool{}
		var want []types.Row
		for _, r := range tbl.current() {
			p := project(r, cols)
			if !seen[p.String()] {
				seen[p.String()] = true
				want = append(want, p)
			}
		}
		if got := v.sorted(); !slices.Equal(got, rowsSorted(want)) {
			t.Fatalf("seed %d step %d: %s", seed, step, diffRows(got, rowsSorted(want)))
		}
	}
	src.push(chunk(types.OpDelete, row(1, 99, "never")))
	if _, err := d.Next(ctx); err == nil {
		t.Fatal("delete of an unknown row: no error")
	}
}

func TestUnionAllTagsAndAligns(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := newSource("a", types.Int64), newSource("b", types.Int64)
	u, err := NewUnionAll(3, []stream.Executor{a, b}, true)
	if err != nil {
		t.Fatal(err)
	}
	bar := h.barrier()
	a.push(chunk(types.OpInsert, row(1)))
	a.pushBarrier(bar)
	a.push(chunk(types.OpInsert, row(2))) // after the barrier: must come out after it
	b.push(chunk(types.OpInsert, row(1)))
	b.pushBarrier(bar)
	v := newView()
	_, gb := drain(t, ctx, u, v)
	if gb != bar {
		t.Fatalf("barrier %v; want %v", gb, bar)
	}
	if got, want := v.sorted(), []string{"(1, 0)", "(1, 1)"}; !slices.Equal(got, want) {
		t.Fatalf("before barrier: %s", diffRows(got, want))
	}
	m, err := u.Next(ctx)
	if err != nil || m.Chunk == nil || m.Chunk.Rows[0].String() != "(2, 0)" {
		t.Fatalf("after barrier: %v, %v", m, err)
	}
	// Mismatched barriers are an error.
	b1, b2 := h.barrier(), h.barrier()
	a.pushBarrier(b1)
	b.pushBarrier(b2)
	if _, err := u.Next(ctx); err == nil {
		t.Fatal("misaligned barriers: no error")
	}
}

func TestMaterializeStrictAndLenient(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ts := []types.Type{types.Int64, types.Int64}
	schema := state.Schema{Name: "mv", Types: ts, PK: []int{0}, DistKey: []int{0}}

	src := newSource("t", ts...)
	m := NewMaterialize(src, h.table(schema), true, nil)
	src.push(chunk(types.OpInsert, row(1, 10), types.OpInsert, row(2, 20)))
	src.push(chunk(types.OpUpdateDelete, row(1, 10), types.OpUpdateInsert, row(1, 11)))
	src.push(chunk(types.OpUpdateDelete, row(2, 20), types.OpUpdateInsert, row(3, 20)))
	src.pushBarrier(h.barrier())
	v := newView()
	drain(t, ctx, m, v)
	if got, want := v.sorted(), []string{"(1, 11)", "(3, 20)"}; !slices.Equal(got, want) {
		t.Fatalf("strict: %s", diffRows(got, want))
	}
	// The table holds the view.
	it, err := m.table.Iter(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stored []types.Row
	for it.Next() {
		stored = append(stored, it.Row())
	}
	it.Close()
	if got, want := rowsSorted(stored), []string{"(1, 11)", "(3, 20)"}; !slices.Equal(got, want) {
		t.Fatalf("stored: %s", diffRows(got, want))
	}
	src.push(chunk(types.OpDelete, row(7, 70)))
	if _, err := m.Next(ctx); err == nil {
		t.Fatal("strict delete of a missing row: no error")
	}
	src2 := newSource("t", ts...)
	m2 := NewMaterialize(src2, h.table(schema), true, nil)
	src2.push(chunk(types.OpInsert, row(1, 1), types.OpInsert, row(1, 2)))
	if _, err := m2.Next(ctx); err == nil {
		t.Fatal("strict duplicate insert: no error")
	}

	// Non-strict: tolerate, and forward what the table actually did.
	src3 := newSource("t", ts...)
	m3 := NewMaterialize(src3, h.table(schema), false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	src3.push(chunk(types.OpInsert, row(1, 1), types.OpInsert, row(1, 2), types.OpDelete, row(5, 5), types.OpDelete, row(1, 9)))
	src3.pushBarrier(h.barrier())
	got, _ := drain(t, ctx, m3, newView())
	if want := []string{"+ (1, 1)", "U- (1, 1)", "U+ (1, 2)", "- (1, 2)"}; !slices.Equal(changes(got), want) {
		t.Fatalf("lenient: got %v; want %v", changes(got), want)
	}
}

func TestProjectFilter(t *testing.T) {
	ctx := context.Background()
	ts := []types.Type{types.Int64, types.Int64}
	src := newSource("t", ts...)
	gt, err := expr.NewBinaryOp(">", &expr.ColumnRef{Index: 1, Typ: types.Int64}, &expr.Const{Value: types.DInt64(5), Typ: types.Int64})
	if err != nil {
		t.Fatal(err)
	}
	plus, err := expr.NewBinaryOp("+", &expr.ColumnRef{Index: 0, Typ: types.Int64}, &expr.ColumnRef{Index: 1, Typ: types.Int64})
	if err != nil {
		t.Fatal(err)
	}
	f := NewFilter(src, gt, nil)
	p := NewProject(f, []expr.Expr{&expr.ColumnRef{Index: 0, Typ: types.Int64}, plus}, nil)
	src.push(chunk(
		types.OpInsert, row(1, 10), types.OpInsert, row(2, 1), types.OpInsert, row(3, nil),
		types.OpUpdateDelete, row(1, 10), types.OpUpdateInsert, row(1, 2), // passes -> fails: delete
		types.OpUpdateDelete, row(2, 1), types.OpUpdateInsert, row(2, 7), // fails -> passes: insert
		types.OpUpdateDelete, row(4, 8), types.OpUpdateInsert, row(4, 9), // both pass: update
	))
	m, err := p.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"+ (1, 11)", "- (1, 11)", "+ (2, 9)", "U- (4, 12)", "U+ (4, 13)"}
	if got := changes([]*types.Chunk{m.Chunk}); !slices.Equal(got, want) {
		t.Fatalf("got %v; want %v", got, want)
	}
}
