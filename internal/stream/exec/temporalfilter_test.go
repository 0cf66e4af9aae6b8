package exec

import (
	"context"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// temporalCond builds ts op now() + offset (ms) over column 1.
func temporalCond(t *testing.T, op string, offsetMs int64) (cond, key expr.Expr) {
	t.Helper()
	now, err := expr.NewFuncCall("now", nil)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := expr.NewBinaryOp("+", now, &expr.Const{Value: types.DInterval(types.IntervalValue{Micros: offsetMs * 1000}), Typ: types.Interval})
	if err != nil {
		t.Fatal(err)
	}
	key = &expr.ColumnRef{Index: 1, Typ: types.Timestamptz, Name: "ts"}
	cond, err = expr.NewBinaryOp(op, key, bound)
	if err != nil {
		t.Fatal(err)
	}
	return cond, key
}

// The view behind a temporal filter is, after every barrier, exactly the
// input rows for which the comparison holds at now() of the epoch the
// barrier closed; and the state holds only the rows that can still change
// their answer (expiring: the live ones; delaying: the waiting ones).
// Randomized: inserts, deletes and updates of rows around now(), with now()
// jumping forward by random steps.
func TestTemporalFilterRandomized(t *testing.T) {
	for _, op := range []string{">", ">=", "<", "<="} {
		t.Run(op, func(t *testing.T) {
			seed := testSeed(t)
			rng := rand.New(rand.NewSource(seed))
			h := newHarness(t)
			ctx := context.Background()
			ts := []types.Type{types.Int64, types.Timestamptz}
			src := newSource("t", ts...)
			cond, key := temporalCond(t, op, -5000)
			expiring := op[0] == '>'
			startMs := int64(1_700_000_000_000)
			h.epoch = uint64(startMs) << 16
			tbl := h.table(TemporalFilterStateSchema("temporal", types.Timestamptz, ts, []int{0}, []int{0}))
			f, err := NewTemporalFilter(src, cond, key, expiring, tbl, nil)
			if err != nil {
				t.Fatal(err)
			}
			nowMs := startMs
			rows := map[int64]types.Row{}
			gen := func(pk int64) types.Row {
				if rng.Intn(8) == 0 {
					return row(int(pk), nil)
				}
				at := nowMs + int64(rng.Intn(20_000)) - 10_000
				return row(int(pk), types.DTimestamptz(at*1000))
			}
			v := newView()
			applied := startMs // now() of the rows processed so far
			prevEpoch := h.epoch
			reopened := 0
			for step := 0; step < randomSteps(60); step++ {
				if step > 0 && rng.Intn(6) == 0 {
					// A recovery: the committed state reopens at a later
					// epoch (the crash came after the last barrier, before
					// its now() was applied); the new filter catches up
					// before its first row.
					nowMs += int64(rng.Intn(4000))
					prevEpoch = uint64(nowMs)<<16 | uint64(step)
					tbl = state.New(tbl.ID(), *tbl.Schema(), h.engine, prevEpoch)
					if f, err = NewTemporalFilter(src, cond, key, expiring, tbl, nil); err != nil {
						t.Fatal(err)
					}
					applied = nowMs
					reopened++
				}
				c := &types.Chunk{}
				for i := rng.Intn(6); i >= 0; i-- {
					pk := int64(rng.Intn(40))
					old, ok := rows[pk]
					switch {
					case !ok:
						r := gen(pk)
						rows[pk] = r
						c.Append(types.OpInsert, r)
					case rng.Intn(3) == 0:
						delete(rows, pk)
						c.Append(types.OpDelete, old)
					default:
						r := gen(pk)
						rows[pk] = r
						c.Append(types.OpUpdateDelete, old)
						c.Append(types.OpUpdateInsert, r)
					}
				}
				src.push(c)
				nowMs += int64(rng.Intn(4000))
				b := &stream.Barrier{Prev: prevEpoch, Curr: uint64(nowMs)<<16 | uint64(step+1)}
				prevEpoch = b.Curr
				src.pushBarrier(b)
				drain(t, ctx, f, v)
				h.commit(b.Prev)

				// The rows of this epoch were filtered at now() of the
				// previous barrier (the start for the first).
				ec := &expr.EvalContext{Location: time.UTC, StatementTime: time.UnixMilli(applied)}
				var want []types.Row
				waiting := 0
				for _, r := range rows {
					d, err := cond.Eval(ec, r)
					if err != nil {
						t.Fatal(err)
					}
					pass := !d.IsNull() && d.Bool()
					if pass {
						want = append(want, r)
					}
					if !r[1].IsNull() && pass == expiring {
						waiting++
					}
				}
				if got := v.sorted(); !slices.Equal(got, rowsSorted(want)) {
					t.Fatalf("seed %d step %d (now %d): %s", seed, step, applied, diffRows(got, rowsSorted(want)))
				}
				stored := 0
				it, err := tbl.Iter(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				for it.Next() {
					stored++
				}
				it.Close()
				if stored != waiting {
					t.Fatalf("seed %d step %d: state holds %d rows; want %d (only rows that can still change)", seed, step, stored, waiting)
				}
				applied = nowMs
			}
			t.Logf("%d recoveries", reopened)
		})
	}
}
