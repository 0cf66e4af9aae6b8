package exec

import (
	"context"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// ROLLUP(a, b) over (pk, a, b, hidden key): each row becomes three, the
// keys outside a set NULLed and the set number after them, the hidden
// column kept last; a delete retracts exactly its insert's rows, an update
// pair becomes deletes and inserts, and a long expansion comes a chunk at
// a time.
func TestExpandRollup(t *testing.T) {
	ctx := context.Background()
	ts := []types.Type{types.Int64, types.Int64, types.Int64, types.Int64}
	src := newSource("t", ts...)
	col := func(i int) expr.Expr { return &expr.ColumnRef{Index: i, Typ: types.Int64} }
	e, err := NewExpand(src, []expr.Expr{col(1), col(2)}, [][]int{{0, 1}, {0}, {}}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.Schema(), []types.Type{types.Int64, types.Int64, types.Int64, types.Int64, types.Int64, types.Int32, types.Int64}; !slices.Equal(got, want) {
		t.Fatalf("schema %v; want %v", got, want)
	}
	src.push(chunk(types.OpInsert, row(1, 10, nil, 100), types.OpInsert, row(2, 20, 5, 200)))
	src.push(chunk(types.OpUpdateDelete, row(2, 20, 5, 200), types.OpUpdateInsert, row(2, 21, 6, 200)))
	src.push(chunk(types.OpDelete, row(1, 10, nil, 100)))
	src.pushBarrier(newHarness(t).barrier())
	v := newView()
	chunks, _ := drain(t, ctx, e, v)
	for _, c := range chunks {
		for i, op := range c.Ops {
			if op == types.OpUpdateDelete || op == types.OpUpdateInsert {
				t.Fatalf("row %s kept update op %s", c.Rows[i], op)
			}
		}
	}
	want := []string{
		"(2, 21, 6, 21, 6, 0, 200)",
		"(2, 21, 6, 21, NULL, 1, 200)",
		"(2, 21, 6, NULL, NULL, 2, 200)",
	}
	if got := v.sorted(); !slices.Equal(got, want) {
		t.Fatal(diffRows(got, want))
	}

	var long []any
	for i := range chunkSize {
		long = append(long, types.OpInsert, row(10+i, i, i, 0))
	}
	src.push(chunk(long...))
	src.pushBarrier(newHarness(t).barrier())
	chunks, _ = drain(t, ctx, e, nil)
	n := 0
	for _, c := range chunks {
		if c.Len() > chunkSize {
			t.Fatalf("a chunk of %d rows; want at most %d", c.Len(), chunkSize)
		}
		n += c.Len()
	}
	if n != 3*chunkSize {
		t.Fatalf("%d rows out of %d inputs; want %d", n, chunkSize, 3*chunkSize)
	}
}

// An always group (an empty grouping set's row: NULL key) exists from the
// first barrier over empty input, stays with count 0 when its last row
// goes, and is created only by the actor owning its vnode.
func TestHashAggAlwaysGroups(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	calls := []AggCall{
		{Agg: mustAgg(t, "count", false), Filter: NoColumn},
		{Agg: mustAgg(t, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn},
	}
	src := newSource("t", aggInTypes...)
	a := newTestAgg(t, h, src, []int{1}, calls)
	a.SetAlwaysGroups([]types.Row{row(nil)})
	v := newView()
	src.pushBarrier(h.barrier())
	got, _ := drain(t, ctx, a, v)
	if want := []string{"+ (NULL, 0, NULL)"}; !slices.Equal(changes(got), want) {
		t.Fatalf("first barrier: got %v; want %v", changes(got), want)
	}
	src.push(chunk(types.OpInsert, aggRow(1, 0, 4, "a", true), types.OpInsert, aggRow(2, 1, 5, "b", true)))
	src.pushBarrier(h.barrier())
	drain(t, ctx, a, v)
	// (aggRow's g is never NULL: put a row in the NULL group directly.)
	src.push(chunk(types.OpInsert, row(3, nil, 7, types.DVarchar("c"), true, types.DVarchar(","))))
	src.pushBarrier(h.barrier())
	got, _ = drain(t, ctx, a, v)
	if want := []string{"U- (NULL, 0, NULL)", "U+ (NULL, 1, 7)"}; !slices.Equal(changes(got), want) {
		t.Fatalf("insert into the always group: got %v; want %v", changes(got), want)
	}
	src.push(chunk(types.OpDelete, row(3, nil, 7, types.DVarchar("c"), true, types.DVarchar(",")), types.OpDelete, aggRow(2, 1, 5, "b", true)))
	src.pushBarrier(h.barrier())
	got, _ = drain(t, ctx, a, v)
	if want := []string{"U- (NULL, 1, 7)", "U+ (NULL, 0, NULL)", "- (1, 1, 5)"}; !slices.Equal(changes(got), want) {
		t.Fatalf("deletes: got %v; want %v", changes(got), want)
	}

	// Another actor's vnode: nothing to create here.
	src2 := newSource("t", aggInTypes...)
	b := newTestAgg(t, h, src2, []int{1}, calls)
	b.SetVnodeOwner(func(uint16) bool { return false })
	b.SetAlwaysGroups([]types.Row{row(nil)})
	src2.pushBarrier(h.barrier())
	if got, _ := drain(t, ctx, b, nil); len(changes(got)) != 0 {
		t.Fatalf("an actor not owning the group's vnode emitted %v", changes(got))
	}
}
