package exec

import (
	"context"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// After every barrier a dynamic filter's output is exactly the left rows
// whose key compares true with the right input's value at that barrier;
// and a move of the bound emits only the rows that cross it: the changes
// of an epoch are at most its left changes plus the rows whose answer
// differs between the old and the new bound (a join with the bound would
// retract and re-emit every passing row). Randomized: left inserts,
// deletes and updates, the bound updated, deleted, set NULL, several times
// in one epoch, and recoveries that reopen the state tables.
func TestDynamicFilterRandomized(t *testing.T) {
	for _, op := range []string{">", ">=", "<", "<="} {
		t.Run(op, func(t *testing.T) {
			seed := testSeed(t)
			rng := rand.New(rand.NewSource(seed))
			h := newHarness(t)
			ctx := context.Background()
			lt := []types.Type{types.Int64, types.Int64}
			key := &expr.ColumnRef{Index: 1, Typ: types.Int64, Name: "k"}
			cmp, err := expr.NewBinaryOp(op, &expr.ColumnRef{Index: 0, Typ: types.Int64}, &expr.ColumnRef{Index: 1, Typ: types.Int64})
			if err != nil {
				t.Fatal(err)
			}
			less := op[0] == '<'
			ls, rs := DynamicFilterStateSchemas("dyn", types.Int64, types.Int64, lt, []int{0})
			lTbl, rTbl := h.table(ls), h.table(rs)
			var left, right *source
			var f *DynamicFilter
			open := func() {
				if f != nil {
					f.align.close() // the old actor's pumps end
				}
				left, right = newSource("left", lt...), newSource("right", types.Int64)
				if f, err = NewDynamicFilter(1, left, right, key, cmp, less, lTbl, rTbl); err != nil {
					t.Fatal(err)
				}
				f.SetStrict(true, nil)
			}
			open()
			t.Cleanup(func() { f.align.close() })
			passes := func(k, bound types.Datum) bool {
				if k.IsNull() || bound.IsNull() {
					return false
				}
				d, err := cmp.Eval(&expr.EvalContext{}, types.Row{k, bound})
				if err != nil {
					t.Fatal(err)
				}
				return d.Bool()
			}
			expected := func(rows map[int64]types.Row, bound types.Datum) []string {
				var want []types.Row
				for _, r := range rows {
					if passes(r[1], bound) {
						want = append(want, r)
					}
				}
				return rowsSorted(want)
			}
			v := newView()
			rows := map[int64]types.Row{}
			var bound types.Datum = types.NullDatum
			var boundRow types.Row // the right input's row, nil: none
			reopened := 0
			for step := 0; step < randomSteps(80); step++ {
				if step > 0 && rng.Intn(8) == 0 {
					// A recovery from the last committed epoch.
					lTbl = state.New(lTbl.ID(), *lTbl.Schema(), h.engine, h.epoch)
					rTbl = state.New(rTbl.ID(), *rTbl.Schema(), h.engine, h.epoch)
					open()
					reopened++
				}
				before := expected(rows, bound)
				leftChanges := 0
				c := &types.Chunk{}
				for i := rng.Intn(4); i > 0; i-- {
					pk := int64(rng.Intn(60))
					gen := func() types.Row {
						if rng.Intn(10) == 0 {
							return row(int(pk), nil)
						}
						return row(int(pk), rng.Intn(40))
					}
					old, ok := rows[pk]
					switch {
					case !ok:
						r := gen()
						rows[pk] = r
						c.Append(types.OpInsert, r)
						leftChanges++
					case rng.Intn(3) == 0:
						delete(rows, pk)
						c.Append(types.OpDelete, old)
						leftChanges++
					default:
						r := gen()
						rows[pk] = r
						c.Append(types.OpUpdateDelete, old)
						c.Append(types.OpUpdateInsert, r)
						leftChanges += 2
					}
				}
				if c.Len() > 0 {
					left.push(c)
				}
				for i := rng.Intn(3); i > 0; i-- {
					rc := &types.Chunk{}
					next := row(rng.Intn(40))
					if rng.Intn(8) == 0 {
						next = row(nil)
					}
					switch {
					case boundRow == nil:
						rc.Append(types.OpInsert, next)
						boundRow = next
					case rng.Intn(5) == 0:
						rc.Append(types.OpDelete, boundRow)
						boundRow = nil
					default:
						rc.Append(types.OpUpdateDelete, boundRow)
						rc.Append(types.OpUpdateInsert, next)
						boundRow = next
					}
					right.push(rc)
				}
				b := h.barrier()
				left.pushBarrier(b)
				right.pushBarrier(b)
				chunks, _ := drain(t, ctx, f, v)
				h.commit(b.Prev)
				bound = types.NullDatum
				if boundRow != nil {
					bound = boundRow[0]
				}
				after := expected(rows, bound)
				if got := v.sorted(); !slices.Equal(got, after) {
					t.Fatalf("seed %d step %d (bound %s): %s", seed, step, bound, diffRows(got, after))
				}
				crossing := 0
				for _, r := range before {
					if !slices.Contains(after, r) {
						crossing++
					}
				}
				for _, r := range after {
					if !slices.Contains(before, r) {
						crossing++
					}
				}
				// A left change is emitted at most once when it comes and
				// once when the bound moves past it.
				n := len(changes(chunks))
				if n > 2*leftChanges+crossing || (leftChanges == 0 && n != crossing) {
					t.Fatalf("seed %d step %d: %d changes for %d left changes and %d rows crossing the bound", seed, step, n, leftChanges, crossing)
				}
			}
			t.Logf("%d recoveries", reopened)
		})
	}
}
