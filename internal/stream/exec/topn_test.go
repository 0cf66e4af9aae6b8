package exec

import (
	"context"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/types"
)

// topn input: (pk int8, g int8, o int8 nullable, v int8)
var topnTypes = []types.Type{types.Int64, types.Int64, types.Int64, types.Int64}

func TestTopNBasic(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	src := newSource("t", topnTypes...)
	order := []ColumnOrder{{Col: 2}}
	tn, err := NewTopN(src, order, []int{0}, 2, 0, h.table(TopNStateSchema("topn", topnTypes, nil, order, []int{0})))
	if err != nil {
		t.Fatal(err)
	}
	v := newView()
	step := func(c *types.Chunk, want ...string) {
		t.Helper()
		src.push(c)
		src.pushBarrier(h.barrier())
		got, _ := drain(t, ctx, tn, v)
		if !slices.Equal(changes(got), want) {
			t.Fatalf("got %v; want %v", changes(got), want)
		}
	}
	step(chunk(types.OpInsert, row(1, 0, 10, 0), types.OpInsert, row(2, 0, 30, 0), types.OpInsert, row(3, 0, 20, 0)),
		"+ (1, 0, 10, 0)", "+ (3, 0, 20, 0)")
	step(chunk(types.OpInsert, row(4, 0, 5, 0)), "- (3, 0, 20, 0)", "+ (4, 0, 5, 0)")
	step(chunk(types.OpDelete, row(1, 0, 10, 0)), "- (1, 0, 10, 0)", "+ (3, 0, 20, 0)")
	step(chunk(types.OpUpdateDelete, row(3, 0, 20, 0), types.OpUpdateInsert, row(3, 0, 20, 9)), "U- (3, 0, 20, 0)", "U+ (3, 0, 20, 9)")
	step(chunk(types.OpInsert, row(9, 0, 99, 0)))
}

// topNFromScratch sorts each group's rows by (order, pk) and keeps the
// window [offset, offset+limit).
func topNFromScratch(rows []types.Row, group []int, order []ColumnOrder, limit, offset int64, rank bool) []types.Row {
	groups := map[string][]types.Row{}
	for _, r := range rows {
		k := project(r, group).String()
		groups[k] = append(groups[k], r)
	}
	var out []types.Row
	for _, rs := range groups {
		slices.SortFunc(rs, func(a, b types.Row) int {
			for _, o := range order {
				x, y := a[o.Col], b[o.Col]
				if x.IsNull() || y.IsNull() {
					if x.IsNull() && y.IsNull() {
						continue
					}
					if x.IsNull() == o.NullsFirst {
						return -1
					}
					return 1
				}
				c := types.Compare(x, y)
				if o.Desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return types.Compare(a[0], b[0])
		})
		for i, r := range rs {
			if int64(i) < offset || (limit >= 0 && int64(i) >= offset+limit) {
				continue
			}
			if rank {
				r = append(r.Copy(), types.DInt64(int64(i)+1))
			}
			out = append(out, r)
		}
	}
	return out
}

func TestTopNRandomized(t *testing.T) {
	cases := []struct {
		name          string
		group         []int
		order         []ColumnOrder
		limit, offset int64
		rank          bool
	}{
		{"topn", nil, []ColumnOrder{{Col: 2}}, 5, 0, false},
		{"topn-desc-nullsfirst-offset", nil, []ColumnOrder{{Col: 2, Desc: true, NullsFirst: true}}, 4, 3, false},
		{"topn-asc-nullsfirst", nil, []ColumnOrder{{Col: 2, NullsFirst: true}, {Col: 3, Desc: true}}, 6, 1, false},
		{"group-topn-rank", []int{1}, []ColumnOrder{{Col: 2, Desc: true}}, 3, 0, true},
		{"distinct-on", []int{1}, []ColumnOrder{{Col: 2}}, 1, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seed := testSeed(t)
			rng := rand.New(rand.NewSource(seed))
			if tc.rank {
				// Emit whenever 2 groups are dirty: exact at any flush point.
				defer func(old int) { maxDirtyGroups = old }(maxDirtyGroups)
				maxDirtyGroups = 2
			}
			h := newHarness(t)
			ctx := context.Background()
			src := newSource("t", topnTypes...)
			st := h.table(TopNStateSchema("topn", topnTypes, tc.group, tc.order, []int{0}))
			var tn *TopN
			var err error
			switch {
			case tc.name == "distinct-on":
				tn, err = NewDistinctOn(src, tc.group, tc.order, []int{0}, st)
			case tc.group == nil:
				tn, err = NewTopN(src, tc.order, []int{0}, tc.limit, tc.offset, st)
			default:
				tn, err = NewGroupTopN(src, tc.group, tc.order, []int{0}, tc.limit, tc.offset, tc.rank, st)
			}
			if err != nil {
				t.Fatal(err)
			}
			tbl := &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 40, gen: func(pk int64) types.Row {
				var o any = rng.Intn(10)
				if rng.Intn(6) == 0 {
					o = nil
				}
				return row(int(pk), rng.Intn(3), o, rng.Intn(3))
			}}
			v := newView()
			for step := 0; step < randomSteps(40); step++ {
				for i := rng.Intn(3); i >= 0; i-- {
					src.push(tbl.step(1 + rng.Intn(8)))
				}
				b := h.barrier()
				src.pushBarrier(b)
				drain(t, ctx, tn, v)
				if rng.Intn(2) == 0 {
					h.commit(b.Prev)
				}
				want := rowsSorted(topNFromScratch(tbl.current(), tc.group, tc.order, tc.limit, tc.offset, tc.rank))
				if got := v.sorted(); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: %s", seed, step, diffRows(got, want))
				}
			}
		})
	}
}
