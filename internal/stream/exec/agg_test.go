package exec

import (
	"context"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

func mustAgg(t testing.TB, name string, distinct bool, args ...types.Type) *expr.Aggregate {
	t.Helper()
	a, err := expr.LookupAggregate(name, args, distinct)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// aggFixture: input (pk int8, g int8, v int8, s text, f bool, delim text).
var aggInTypes = []types.Type{types.Int64, types.Int64, types.Int64, types.Text, types.Bool, types.Text}

func aggCalls(t testing.TB) []AggCall {
	return []AggCall{
		{Agg: mustAgg(t, "count", false), Filter: NoColumn},
		{Agg: mustAgg(t, "count", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "avg", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "min", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "max", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "count", true, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "sum", true, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "max", true, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "string_agg", false, types.Text, types.Text), Args: []int{3, 5}, Filter: NoColumn, OrderBy: []ColumnOrder{{Col: 0}}},
		{Agg: mustAgg(t, "count", false), Filter: 4},
		{Agg: mustAgg(t, "bool_or", false, types.Bool), Args: []int{4}, Filter: NoColumn},
		{Agg: mustAgg(t, "min", false, types.Text), Args: []int{3}, Filter: NoColumn},
	}
}

func newTestAgg(t testing.TB, h *harness, src *source, groupKey []int, calls []AggCall) *HashAgg {
	t.Helper()
	res, per, err := HashAggStateSchemas("test", aggInTypes, groupKey, calls, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	var a *HashAgg
	if len(groupKey) == 0 {
		a, err = NewSimpleAgg(src, calls, []int{0}, h.table(res), h.tables(per))
	} else {
		a, err = NewHashAgg(src, groupKey, calls, []int{0}, h.table(res), h.tables(per))
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func aggRow(pk, g int, v any, s string, f bool) types.Row {
	return row(pk, g, v, types.DVarchar(s), f, types.DVarchar(","))
}

func TestHashAggBasic(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	src := newSource("t", aggInTypes...)
	calls := []AggCall{
		{Agg: mustAgg(t, "count", false), Filter: NoColumn},
		{Agg: mustAgg(t, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "max", false, types.Int64), Args: []int{2}, Filter: NoColumn},
	}
	a := newTestAgg(t, h, src, []int{1}, calls)
	v := newView()

	src.push(chunk(types.OpInsert, aggRow(1, 1, 10, "a", true), types.OpInsert, aggRow(2, 1, 30, "b", true), types.OpInsert, aggRow(3, 2, 5, "c", false)))
	src.pushBarrier(h.barrier())
	got, _ := drain(t, ctx, a, v)
	want := []string{"+ (1, 2, 40, 30)", "+ (2, 1, 5, 5)"}
	if !slices.Equal(changes(got), want) {
		t.Fatalf("epoch 1: got %v; want %v", changes(got), want)
	}

	// Deleting the max retracts exactly; emptying group 2 deletes it.
	src.push(chunk(types.OpDelete, aggRow(2, 1, 30, "b", true), types.OpDelete, aggRow(3, 2, 5, "c", false)))
	src.pushBarrier(h.barrier())
	got, _ = drain(t, ctx, a, v)
	want = []string{"U- (1, 2, 40, 30)", "U+ (1, 1, 10, 10)", "- (2, 1, 5, 5)"}
	if !slices.Equal(changes(got), want) {
		t.Fatalf("epoch 2: got %v; want %v", changes(got), want)
	}

	// An update that leaves the output as it was emits nothing.
	src.push(chunk(types.OpUpdateDelete, aggRow(1, 1, 10, "a", true), types.OpUpdateInsert, aggRow(1, 1, 10, "z", false)))
	src.pushBarrier(h.barrier())
	got, _ = drain(t, ctx, a, v)
	if len(changes(got)) != 0 {
		t.Fatalf("epoch 3: got %v; want no changes", changes(got))
	}

	// A delete of a row never seen is an I6 error naming the executor.
	src.push(chunk(types.OpDelete, aggRow(9, 7, 1, "x", true)))
	src.pushBarrier(h.barrier())
	_, err := a.Next(ctx)
	if err == nil {
		t.Fatal("delete of an unknown row: got no error")
	}
	t.Logf("error: %v", err)
}

func TestSimpleAggEmptyInput(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	src := newSource("t", aggInTypes...)
	calls := []AggCall{
		{Agg: mustAgg(t, "count", false), Filter: NoColumn},
		{Agg: mustAgg(t, "sum", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "min", false, types.Int64), Args: []int{2}, Filter: NoColumn},
	}
	a := newTestAgg(t, h, src, nil, calls)
	v := newView()
	src.pushBarrier(h.barrier())
	got, _ := drain(t, ctx, a, v)
	if want := []string{"+ (0, NULL, NULL)"}; !slices.Equal(changes(got), want) {
		t.Fatalf("first barrier: got %v; want %v", changes(got), want)
	}
	src.push(chunk(types.OpInsert, aggRow(1, 1, 4, "a", true)))
	src.pushBarrier(h.barrier())
	got, _ = drain(t, ctx, a, v)
	if want := []string{"U- (0, NULL, NULL)", "U+ (1, 4, 4)"}; !slices.Equal(changes(got), want) {
		t.Fatalf("insert: got %v; want %v", changes(got), want)
	}
	src.push(chunk(types.OpDelete, aggRow(1, 1, 4, "a", true)))
	src.pushBarrier(h.barrier())
	got, _ = drain(t, ctx, a, v)
	if want := []string{"U- (1, 4, 4)", "U+ (0, NULL, NULL)"}; !slices.Equal(changes(got), want) {
		t.Fatalf("delete: got %v; want %v", changes(got), want)
	}
}

// randomSteps is the number of barriers in each randomized executor test;
// RUNNEL_STREAM_RANDOM_STEPS raises it for longer runs.
func randomSteps(def int) int {
	if s := os.Getenv("RUNNEL_STREAM_RANDOM_STEPS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return def
}

func testSeed(t *testing.T) int64 {
	seed := rand.Int63()
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (rerun with RUNNEL_TEST_SEED=%d)", seed, seed)
	return seed
}

// randomTable is a model of a keyed input table driven by random DML; it
// produces the change chunks and knows the current rows.
type randomTable struct {
	rng  *rand.Rand
	rows map[int64]types.Row
	gen  func(pk int64) types.Row
	pks  int64 // pk range
}

func (r *randomTable) step(n int) *types.Chunk {
	c := &types.Chunk{}
	touched := map[int64]bool{}
	for i := 0; i < n; i++ {
		pk := r.rng.Int63n(r.pks)
		if touched[pk] {
			continue
		}
		touched[pk] = true
		old, ok := r.rows[pk]
		switch {
		case !ok:
			nr := r.gen(pk)
			r.rows[pk] = nr
			c.Append(types.OpInsert, nr)
		case r.rng.Intn(2) == 0:
			delete(r.rows, pk)
			c.Append(types.OpDelete, old)
		default:
			nr := r.gen(pk)
			r.rows[pk] = nr
			c.Append(types.OpUpdateDelete, old)
			c.Append(types.OpUpdateInsert, nr)
		}
	}
	return c
}

func (r *randomTable) current() []types.Row {
	var out []types.Row
	for _, row := range r.rows {
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b types.Row) int { return types.Compare(a[0], b[0]) })
	return out
}

// aggFromScratch computes GROUP BY groupKey over rows with fresh,
// append-only aggregate states (the batch semantics).
func aggFromScratch(t *testing.T, rows []types.Row, groupKey []int, calls []AggCall, simple bool) []types.Row {
	groups := map[string][]types.Row{}
	var order []string
	for _, r := range rows {
		k := project(r, groupKey).String()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	if simple && len(groups) == 0 {
		groups[""] = nil
		order = append(order, "")
	}
	var out []types.Row
	for _, k := range order {
		rs := groups[k]
		var res types.Row
		if len(rs) > 0 {
			res = project(rs[0], groupKey)
		}
		for _, c := range calls {
			st := c.Agg.NewState()
			sorted := slices.Clone(rs)
			if len(c.OrderBy) > 0 {
				slices.SortStableFunc(sorted, func(a, b types.Row) int { return types.Compare(a[c.OrderBy[0].Col], b[c.OrderBy[0].Col]) })
			}
			for _, r := range sorted {
				if c.Filter != NoColumn && (r[c.Filter].IsNull() || !r[c.Filter].Bool()) {
					continue
				}
				if err := st.Add(project(r, c.Args)); err != nil {
					t.Fatal(err)
				}
			}
			d, err := st.Result()
			if err != nil {
				t.Fatal(err)
			}
			res = append(res, d)
		}
		out = append(out, res)
	}
	return out
}

func TestHashAggRandomized(t *testing.T) {
	for _, mode := range []string{"grouped", "simple", "grouped-early-flush", "grouped-tiny-cache"} {
		simple := mode == "simple"
		t.Run(mode, func(t *testing.T) {
			if mode == "grouped-early-flush" {
				// Emit whenever 2 groups are dirty: exact at any flush point.
				defer func(old int) { maxDirtyGroups = old }(maxDirtyGroups)
				maxDirtyGroups = 2
			}
			if mode == "grouped-tiny-cache" {
				// Room for about two groups: most first touches miss and
				// reload an evicted group from the result table.
				defer func(old *CacheBudget) { aggCacheBudget = old }(aggCacheBudget)
				aggCacheBudget = NewCacheBudget(16 << 10)
			}
			seed := testSeed(t)
			rng := rand.New(rand.NewSource(seed))
			h := newHarness(t)
			ctx := context.Background()
			src := newSource("t", aggInTypes...)
			calls := aggCalls(t)
			var gk []int
			if !simple {
				gk = []int{1}
			}
			a := newTestAgg(t, h, src, gk, calls)
			v := newView()
			words := []string{"a", "b", "c", "dd", ""}
			tbl := &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 60, gen: func(pk int64) types.Row {
				var val any = rng.Intn(8) - 2
				if rng.Intn(6) == 0 {
					val = nil
				}
				return aggRow(int(pk), rng.Intn(5), val, words[rng.Intn(len(words))], rng.Intn(2) == 0)
			}}
			steps := randomSteps(40)
			for step := 0; step < steps; step++ {
				for i := rng.Intn(3); i >= 0; i-- {
					src.push(tbl.step(1 + rng.Intn(20)))
				}
				b := h.barrier()
				src.pushBarrier(b)
				drain(t, ctx, a, v)
				if rng.Intn(2) == 0 {
					h.commit(b.Prev)
				}
				want := rowsSorted(aggFromScratch(t, tbl.current(), gk, calls, simple))
				if got := v.sorted(); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: %s", seed, step, diffRows(got, want))
				}
			}
		})
	}
}

var _ = state.Schema{}
