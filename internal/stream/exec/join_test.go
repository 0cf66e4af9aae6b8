package exec

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
	"go.uber.org/goleak"
)

var joinSideTypes = []types.Type{types.Int64, types.Int64, types.Int64} // pk, k, v

// leCond is left.v <= right.v over the joined row (l: 0..2, r: 3..5).
func leCond(t testing.TB) expr.Expr {
	e, err := expr.NewBinaryOp("<=", &expr.ColumnRef{Index: 2, Typ: types.Int64}, &expr.ColumnRef{Index: 5, Typ: types.Int64})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func newTestJoin(t testing.TB, h *harness, kind JoinType, cond expr.Expr) (*HashJoin, *source, *source) {
	t.Helper()
	l, r := newSource("l", joinSideTypes...), newSource("r", joinSideTypes...)
	lo, ro := kind.OuterSides()
	ls := h.table(HashJoinStateSchema("left", joinSideTypes, []int{1}, []int{0}, lo))
	rs := h.table(HashJoinStateSchema("right", joinSideTypes, []int{1}, []int{0}, ro))
	j, err := NewHashJoin(7, kind, JoinSide{Input: l, Keys: []int{1}, PK: []int{0}, State: ls},
		JoinSide{Input: r, Keys: []int{1}, PK: []int{0}, State: rs}, nil, cond, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j, l, r
}

func TestHashJoinLeftOuterDegrees(t *testing.T) {
	h := newHarness(t)
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, l, r := newTestJoin(t, h, JoinLeftOuter, nil)
	v := newView()
	step := func(name string, lc, rc *types.Chunk, want ...string) {
		t.Helper()
		if lc != nil {
			l.push(lc)
		}
		b := h.barrier()
		l.pushBarrier(b)
		if rc != nil {
			r.push(rc)
		}
		r.pushBarrier(b)
		got, gb := drain(t, ctx, j, v)
		if gb.Curr != b.Curr {
			t.Fatalf("%s: barrier %v; want %v", name, gb, b)
		}
		if !slices.Equal(changes(got), want) {
			t.Fatalf("%s: got %v; want %v", name, changes(got), want)
		}
	}
	step("left row alone", chunk(types.OpInsert, row(1, 10, 0)), nil, "+ (1, 10, 0, NULL, NULL, NULL)")
	step("first match", nil, chunk(types.OpInsert, row(5, 10, 1)), "- (1, 10, 0, NULL, NULL, NULL)", "+ (1, 10, 0, 5, 10, 1)")
	step("second match", nil, chunk(types.OpInsert, row(6, 10, 2)), "+ (1, 10, 0, 6, 10, 2)")
	step("null key", chunk(types.OpInsert, row(2, nil, 0)), chunk(types.OpInsert, row(7, nil, 0)), "+ (2, NULL, 0, NULL, NULL, NULL)")
	step("lose one match", nil, chunk(types.OpDelete, row(5, 10, 1)), "- (1, 10, 0, 5, 10, 1)")
	step("lose last match", nil, chunk(types.OpDelete, row(6, 10, 2)), "- (1, 10, 0, 6, 10, 2)", "+ (1, 10, 0, NULL, NULL, NULL)")
	step("delete left", chunk(types.OpDelete, row(1, 10, 0)), nil, "- (1, 10, 0, NULL, NULL, NULL)")

	// Stop barrier: the join forwards it, then reports ErrStopped, and its
	// pumps exit (goleak).
	b := h.barrier()
	b.Mutation = &stream.Mutation{Stop: map[stream.ActorID]bool{7: true}}
	l.pushBarrier(b)
	r.pushBarrier(b)
	if _, gb := drain(t, ctx, j, v); gb != b {
		t.Fatalf("stop barrier: got %v", gb)
	}
	if _, err := j.Next(ctx); err != stream.ErrStopped {
		t.Fatalf("after stop: got %v; want ErrStopped", err)
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("pumps still running after the stop barrier: %v", err)
	}

	// A delete of an unknown row is an error, not a panic.
	j2, l2, _ := newTestJoin(t, h, JoinInner, nil)
	l2.push(chunk(types.OpDelete, row(1, 1, 1)))
	if _, err := j2.Next(ctx); err == nil {
		t.Fatal("delete of unknown row: no error")
	} else {
		t.Logf("error: %v", err)
	}
	cancel()
}

// joinFromScratch is a nested-loop join with SQL outer-join semantics.
func joinFromScratch(left, right []types.Row, kind JoinType, cond func(l, r types.Row) bool) []types.Row {
	lo, ro := kind.OuterSides()
	var out []types.Row
	if kind.semi() {
		for _, l := range left {
			n := 0
			for _, r := range right {
				if !l[1].IsNull() && !r[1].IsNull() && types.Equal(l[1], r[1]) && (cond == nil || cond(l, r)) {
					n++
				}
			}
			if (n > 0) == (kind == JoinLeftSemi) {
				out = append(out, l)
			}
		}
		return out
	}
	rMatched := make([]bool, len(right))
	for _, l := range left {
		matched := false
		for ri, r := range right {
			if l[1].IsNull() || r[1].IsNull() || !types.Equal(l[1], r[1]) || (cond != nil && !cond(l, r)) {
				continue
			}
			matched = true
			rMatched[ri] = true
			out = append(out, append(l.Copy(), r...))
		}
		if !matched && lo {
			out = append(out, append(l.Copy(), make(types.Row, 3)...))
		}
	}
	if ro {
		for ri, r := range right {
			if !rMatched[ri] {
				out = append(out, append(make(types.Row, 3), r...))
			}
		}
	}
	return out
}

// checkJoinCache fails unless every cached join key of each side of j
// holds exactly the side's stored rows with that key (int64 join keys).
func checkJoinCache(t *testing.T, j *HashJoin, what string) {
	t.Helper()
	for i, s := range j.sides {
		for ck, it := range s.cache.lru.items {
			var want []string
			k, _, err := types.DecodeKey([]byte(ck), types.Int64, false, false)
			if err != nil {
				t.Fatal(err)
			}
			iter, err := s.State.Iter(context.Background(), types.Row{k})
			if err != nil {
				t.Fatal(err)
			}
			for iter.Next() {
				want = append(want, iter.Row().String())
			}
			iter.Close()
			var got []string
			for _, r := range it.val.rows {
				got = append(got, r.String())
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: side %d caches for key %s\n%s", what, i, k, diffRows(got, want))
			}
		}
	}
}

func TestHashJoinRandomized(t *testing.T) {
	for _, kind := range []JoinType{JoinInner, JoinLeftOuter, JoinRightOuter, JoinFullOuter, JoinLeftSemi, JoinLeftAnti} {
		// fresh-cached: SetFresh with the default budget, so the caches
		// the join fills from its own writes (writeKey) are kept.
		for _, variant := range []string{"", "cond", "fresh", "fresh-cached"} {
			withCond, fresh := variant == "cond", variant == "fresh" || variant == "fresh-cached"
			name := kind.String()
			if variant != "" {
				name += "/" + variant
			}
			// The tiny cache bound exercises eviction and uncached hot
			// keys; the default one mostly hits. Fresh: the join knows
			// its tables started empty and skips reads of keys it never
			// wrote (SetFresh); with the tiny bound most probes ask it.
			var budget *CacheBudget
			if withCond || variant == "fresh" {
				budget = NewCacheBudget(4096)
			}
			t.Run(name, func(t *testing.T) {
				defer func(old *CacheBudget) { joinCacheBudget = old }(joinCacheBudget)
				joinCacheBudget = budget
				seed := testSeed(t)
				rng := rand.New(rand.NewSource(seed))
				h := newHarness(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var cond expr.Expr
				var condFn func(l, r types.Row) bool
				if withCond {
					cond = leCond(t)
					condFn = func(l, r types.Row) bool { return !l[2].IsNull() && !r[2].IsNull() && l[2].Int() <= r[2].Int() }
				}
				j, ls, rs := newTestJoin(t, h, kind, cond)
				keys := 6
				if fresh {
					j.SetFresh()
					keys = 30 // unseen keys keep appearing
				}
				gen := func(pk int64) types.Row {
					var k any = rng.Intn(keys)
					if rng.Intn(8) == 0 {
						k = nil
					}
					var v any = rng.Intn(5)
					if rng.Intn(8) == 0 {
						v = nil
					}
					return row(int(pk), k, v)
				}
				lt := &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 40, gen: gen}
				rt := &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 40, gen: gen}
				v := newView()
				for step := 0; step < randomSteps(30); step++ {
					for i := rng.Intn(4); i >= 0; i-- {
						if rng.Intn(2) == 0 {
							ls.push(lt.step(1 + rng.Intn(10)))
						} else {
							rs.push(rt.step(1 + rng.Intn(10)))
						}
					}
					b := h.barrier()
					ls.pushBarrier(b)
					rs.pushBarrier(b)
					drain(t, ctx, j, v)
					if rng.Intn(2) == 0 {
						h.commit(b.Prev)
					}
					want := rowsSorted(joinFromScratch(lt.current(), rt.current(), kind, condFn))
					if got := v.sorted(); !slices.Equal(got, want) {
						t.Fatalf("seed %d step %d: %s", seed, step, diffRows(got, want))
					}
					checkJoinCache(t, j, fmt.Sprintf("seed %d step %d", seed, step))
				}
			})
		}
	}
}

// A self-join reads one upstream through two channels: reading only one
// side until its barrier would deadlock once the other side's buffer is
// full. The aligner reads both.
func TestHashJoinSelfJoinNoDeadlock(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, r := newSource("l", joinSideTypes...), newSource("r", joinSideTypes...)
	l.ch, r.ch = make(chan stream.Message, 2), make(chan stream.Message, 2)
	ls := h.table(HashJoinStateSchema("left", joinSideTypes, []int{1}, []int{0}, false))
	rs := h.table(HashJoinStateSchema("right", joinSideTypes, []int{1}, []int{0}, false))
	j, err := NewHashJoin(1, JoinInner, JoinSide{Input: l, Keys: []int{1}, PK: []int{0}, State: ls},
		JoinSide{Input: r, Keys: []int{1}, PK: []int{0}, State: rs}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The "upstream" broadcasts each message to both channels in order,
	// blocking like a BroadcastDispatcher.
	b := h.barrier()
	go func() {
		for i := 0; i < 20; i++ {
			m := stream.Message{Chunk: chunk(types.OpInsert, row(i, 1, 0))}
			for _, ch := range []chan stream.Message{l.ch, r.ch} {
				select {
				case ch <- m:
				case <-ctx.Done():
					return
				}
			}
		}
		for _, ch := range []chan stream.Message{l.ch, r.ch} {
			select {
			case ch <- stream.Message{Barrier: b}:
			case <-ctx.Done():
				return
			}
		}
	}()
	v := newView()
	drain(t, ctx, j, v)
	if n := len(v.sorted()); n != 400 {
		t.Fatalf("self join of 20 rows with one key: %d rows; want 400", n)
	}
}

// I5: a probe over a hot key (3000 x 1000 matches) stops within a few
// hundred rows of cancellation. The hook cancels at the 1000th match.
func TestHashJoinProbeCancellation(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, l, r := newTestJoin(t, h, JoinInner, nil)
	rc := &types.Chunk{}
	for i := 0; i < 3000; i++ {
		rc.Append(types.OpInsert, row(i, 1, 0))
	}
	r.push(rc)
	b := h.barrier()
	l.pushBarrier(b)
	r.pushBarrier(b)
	drain(t, ctx, j, nil)

	matches := 0
	joinProbeHook = func() {
		matches++
		if matches == 1000 {
			cancel()
		}
	}
	defer func() { joinProbeHook = nil }()
	lc := &types.Chunk{}
	for i := 0; i < 1000; i++ {
		lc.Append(types.OpInsert, row(i, 1, 0))
	}
	l.push(lc)
	_, err := j.Next(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v; want context.Canceled", err)
	}
	if matches > 1000+ctxCheckEvery {
		t.Fatalf("%d matches processed after cancellation at 1000; want at most %d", matches-1000, ctxCheckEvery)
	}
}
