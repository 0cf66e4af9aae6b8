package exec

import (
	"context"
	"io"
	"log/slog"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// UNION ALL of three randomly changing inputs equals the concatenation of
// their current rows (tagged with the input index) after every barrier.
func TestUnionAllRandomized(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var srcs []*source
	var ins []stream.Executor
	var tbls []*randomTable
	for i := 0; i < 3; i++ {
		s := newSource("in", types.Int64, types.Int64)
		srcs = append(srcs, s)
		ins = append(ins, s)
		tbls = append(tbls, &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 20, gen: func(pk int64) types.Row { return row(int(pk), rng.Intn(3)) }})
	}
	u, err := NewUnionAll(1, ins, true)
	if err != nil {
		t.Fatal(err)
	}
	v := newView()
	for step := 0; step < randomSteps(40); step++ {
		for i := rng.Intn(5); i >= 0; i-- {
			k := rng.Intn(3)
			srcs[k].push(tbls[k].step(1 + rng.Intn(6)))
		}
		b := h.barrier()
		for _, s := range srcs {
			s.pushBarrier(b)
		}
		drain(t, ctx, u, v)
		var want []types.Row
		for k, tb := range tbls {
			for _, r := range tb.current() {
				want = append(want, append(r.Copy(), types.DInt32(int32(k))))
			}
		}
		if got := v.sorted(); !slices.Equal(got, rowsSorted(want)) {
			t.Fatalf("seed %d step %d: %s", seed, step, diffRows(got, rowsSorted(want)))
		}
	}
}

// Non-strict Materialize fed random changes, a fifth of them contradicting
// the table (deletes of absent keys, inserts of present ones, stale
// deleted values): the table must follow the input's intent (last write
// wins, deletes remove the key) and the forwarded changes must describe
// the table exactly (a strict downstream view of them never breaks).
// Fresh: the executor knows its table started empty (SetFresh) and skips
// the reads its key filter proves useless; the outcome must not change.
func TestMaterializeLenientRandomized(t *testing.T) {
	t.Run("existing", func(t *testing.T) { testMaterializeLenient(t, false) })
	t.Run("fresh", func(t *testing.T) { testMaterializeLenient(t, true) })
}

func testMaterializeLenient(t *testing.T, fresh bool) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t)
	ctx := context.Background()
	ts := []types.Type{types.Int64, types.Int64}
	src := newSource("t", ts...)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := NewMaterialize(src, h.table(state.Schema{Name: "mv", Types: ts, PK: []int{0}, DistKey: []int{0}}), false, quiet)
	if fresh {
		m.SetFresh()
	}
	model := map[int64]int64{}
	v := newView()
	for step := 0; step < randomSteps(40); step++ {
		c := &types.Chunk{}
		for i := rng.Intn(20); i >= 0; i-- {
			k, val := int64(rng.Intn(15)), int64(rng.Intn(100))
			old, present := model[k]
			switch rng.Intn(4) {
			case 0: // delete, possibly of an absent key or a stale value
				if present && rng.Intn(5) != 0 {
					c.Append(types.OpDelete, row(int(k), int(old)))
				} else {
					c.Append(types.OpDelete, row(int(k), int(val)))
				}
				delete(model, k)
			case 1: // update pair, possibly moving the key
				if !present {
					continue
				}
				k2 := k
				if rng.Intn(3) == 0 {
					k2 = int64(rng.Intn(15))
				}
				c.Append(types.OpUpdateDelete, row(int(k), int(old)))
				c.Append(types.OpUpdateInsert, row(int(k2), int(val)))
				delete(model, k)
				model[k2] = val
			default: // insert, possibly over a present key
				if present && rng.Intn(5) != 0 {
					continue
				}
				c.Append(types.OpInsert, row(int(k), int(val)))
				model[k] = val
			}
		}
		src.push(c)
		b := h.barrier()
		src.pushBarrier(b)
		drain(t, ctx, m, v)
		if rng.Intn(2) == 0 {
			h.commit(b.Prev)
		}
		var want []types.Row
		for k, val := range model {
			want = append(want, row(int(k), int(val)))
		}
		it, err := m.table.Iter(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var stored []types.Row
		for it.Next() {
			stored = append(stored, it.Row())
		}
		it.Close()
		if got := rowsSorted(stored); !slices.Equal(got, rowsSorted(want)) {
			t.Fatalf("seed %d step %d: table %s", seed, step, diffRows(got, rowsSorted(want)))
		}
		if got := v.sorted(); !slices.Equal(got, rowsSorted(want)) {
			t.Fatalf("seed %d step %d: forwarded changes %s", seed, step, diffRows(got, rowsSorted(want)))
		}
	}
}
