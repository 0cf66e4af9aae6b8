package exec

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// intervalJoin is a join shaped like Nexmark q4's: both sides are
// (pk, k, t, e), joined on k with r.t BETWEEN l.t AND l.e + 2; both sides
// carry watermarks on t. Its bounds: a right row closes once the left
// watermark passes its t; a left row once the right watermark passes
// l.e + 2, which needs the left side to be append-only (e has no
// watermark).
type intervalJoin struct {
	j      *HashJoin
	l, r   *source
	v      *view
	cancel context.CancelFunc
	ctx    context.Context
}

var intervalSideTypes = []types.Type{types.Int64, types.Int64, types.Int64, types.Int64}

func newIntervalJoin(t *testing.T, h *harness, fresh, index bool) *intervalJoin {
	t.Helper()
	col := func(i int) expr.Expr { return &expr.ColumnRef{Index: i, Typ: types.Int64} }
	bin := func(op string, a, b expr.Expr) expr.Expr {
		e, err := expr.NewBinaryOp(op, a, b)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	lePlus2 := bin("+", col(3), &expr.Const{Value: types.DInt64(2), Typ: types.Int64})
	cond := bin("AND", bin(">=", col(6), col(2)), bin("<=", col(6), lePlus2))
	l, r := newSource("l", intervalSideTypes...), newSource("r", intervalSideTypes...)
	ls := h.table(HashJoinStateSchema("left", intervalSideTypes, []int{1}, []int{0}, false))
	rs := h.table(HashJoinStateSchema("right", intervalSideTypes, []int{1}, []int{0}, false))
	j, err := NewHashJoin(7, JoinInner, JoinSide{Input: l, Keys: []int{1}, PK: []int{0}, State: ls},
		JoinSide{Input: r, Keys: []int{1}, PK: []int{0}, State: rs}, nil, cond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fresh {
		j.SetFresh()
	}
	j.SetIntervalBounds([]JoinIntervalBound{
		{Side: 1, ACol: 2, BCol: 2, A: col(6), B: col(2), AIdx: 6, BIdx: 2, Width: 8, AppendOnly: true},
		{Side: 0, ACol: 3, BCol: 2, A: lePlus2, B: col(6), AIdx: 3, BIdx: 6, Width: 8, AppendOnly: true},
	})
	if !index {
		j.wm.index = [2]*cleanIndex{}
	} else if j.wm.index[0] == nil || j.wm.index[1] == nil {
		t.Fatal("an append-only side with one interval bound got no clean index")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // ends the join's input pumps
	return &intervalJoin{j: j, l: l, r: r, v: newView(), ctx: ctx, cancel: cancel}
}

// stored returns each side's stored rows, sorted.
func (ij *intervalJoin) stored(t *testing.T) [2][]string {
	t.Helper()
	var out [2][]string
	for i, s := range ij.j.sides {
		it, err := s.State.Iter(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			out[i] = append(out[i], it.Row().String())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		slices.Sort(out[i])
	}
	return out
}

// checkCache fails unless every cached join key of each side holds
// exactly the side's stored rows with that key (a cleaned row left in the
// cache would be matched by nothing, so outputs alone cannot tell).
func (ij *intervalJoin) checkCache(t *testing.T, what string) {
	t.Helper()
	checkJoinCache(t, ij.j, what)
}

// TestHashJoinIntervalCleanIndex: a join whose append-only sides are
// cleaned from their clean indexes (fresh, or built by the first
// cleanup's scan of a rebuilt job's state) keeps exactly the rows and
// emits exactly the output of the same join cleaning by scans, at every
// barrier; with the index capped low it falls back to scans mid-run and
// still agrees. Both sides' state stays bounded: the left side (whose
// bound's column has no watermark) is cleaned only because it is
// append-only. Seeded (RUNNEL_TEST_SEED replays).
func TestHashJoinIntervalCleanIndex(t *testing.T) {
	for _, capRows := range []int{maxCleanIndexRows, 40} {
		old := maxCleanIndexRows
		maxCleanIndexRows = capRows
		seed := testSeed(t)
		rng := rand.New(rand.NewSource(seed))
		h := newHarness(t)
		joins := []*intervalJoin{
			newIntervalJoin(t, h, true, false), // the reference: scans
			newIntervalJoin(t, h, true, true),  // fresh: index ready at once
			newIntervalJoin(t, h, false, true), // rebuilt: index built by a scan
		}
		pk := 0
		const steps = 60
		maxStored := 0
		for step := 0; step < steps; step++ {
			side := func() *types.Chunk {
				c := &types.Chunk{}
				for i := 0; i < 20; i++ {
					pk++
					tm := step*10 + rng.Intn(15) // above the watermark (step*10 - 5)
					c.Append(types.OpInsert, row(pk, rng.Intn(8), tm, tm+rng.Intn(30)))
				}
				return c
			}
			lc, rc := side(), side()
			b := h.barrier()
			for _, ij := range joins {
				ij.l.push(lc)
				ij.r.push(rc)
				if step >= 3 {
					ij.l.pushWatermark(2, types.DInt64(int64(step*10-5)))
					ij.r.pushWatermark(2, types.DInt64(int64(step*10-5)))
				}
				ij.l.pushBarrier(b)
				ij.r.pushBarrier(b)
				chunks, _ := drainWMCtx(t, ij.ctx, ij.j)
				for _, c := range chunks {
					if err := ij.v.apply(c); err != nil {
						t.Fatal(err)
					}
				}
			}
			h.commit(b.Prev)
			want := joins[0].stored(t)
			maxStored = max(maxStored, len(want[0])+len(want[1]))
			for i, ij := range joins[1:] {
				ij.checkCache(t, fmt.Sprintf("seed %d, cap %d, step %d, join %d", seed, capRows, step, i+1))
				got := ij.stored(t)
				for s := range got {
					if !slices.Equal(got[s], want[s]) {
						t.Fatalf("seed %d, cap %d, step %d: join %d side %d stores\n%s", seed, capRows, step, i+1, s, diffRows(got[s], want[s]))
					}
				}
				if g, w := ij.v.sorted(), joins[0].v.sorted(); !slices.Equal(g, w) {
					t.Fatalf("seed %d, cap %d, step %d: join %d output\n%s", seed, capRows, step, i+1, diffRows(g, w))
				}
			}
		}
		if len(joins[0].v.sorted()) == 0 {
			t.Fatal("the join matched nothing: the test data is wrong")
		}
		for i, ij := range joins {
			if ij.j.CleanedRows() == 0 {
				t.Fatalf("join %d cleaned nothing", i)
			}
			if capRows == old && i > 0 && (ij.j.wm.index[0] == nil || !ij.j.wm.index[0].ready || ij.j.wm.index[1] == nil || !ij.j.wm.index[1].ready) {
				t.Fatalf("join %d lost its clean indexes", i)
			}
			if capRows != old && (ij.j.wm.index[0] != nil || ij.j.wm.index[1] != nil) {
				t.Fatalf("join %d kept a clean index past the cap", i)
			}
		}
		// The rows still open: about 5 steps of each side (t within the
		// watermark's 5 below the step's 10, e up to 30 later).
		if maxStored > 8*40 {
			t.Fatalf("the state held up to %d rows; want it bounded by the open rows", maxStored)
		}
		maxCleanIndexRows = old
	}
}
