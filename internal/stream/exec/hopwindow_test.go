package exec

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

const sec = int64(1_000_000)

func ts(us int64) types.Datum { return types.DTimestamp(us) }

// TestHopWindowExpandsEveryChange pins the output of one chunk: every
// change becomes one change per window in ascending order, an update pair
// becomes deletes of the old windows then inserts of the new ones, and a
// NULL time disappears.
func TestHopWindowExpandsEveryChange(t *testing.T) {
	src := newSource("in", types.Int64, types.Timestamp)
	h, err := NewHopWindow(src, 1, 2*sec, 4*sec, 0)
	if err != nil {
		t.Fatal(err)
	}
	src.push(chunk(
		types.OpInsert, row(1, ts(5*sec)),
		types.OpUpdateDelete, row(1, ts(5*sec)),
		types.OpUpdateInsert, row(1, ts(6*sec)),
		types.OpInsert, row(2, nil),
		types.OpDelete, row(3, ts(-1)),
	))
	msg, err := h.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, r := range msg.Chunk.Rows {
		got = append(got, fmt.Sprintf("%s %d %d %d", msg.Chunk.Ops[i], r[1].Int()/sec, r[2].Int()/sec, r[3].Int()/sec))
	}
	want := []string{
		fmt.Sprintf("%s 5 2 6", types.OpInsert), fmt.Sprintf("%s 5 4 8", types.OpInsert),
		fmt.Sprintf("%s 5 2 6", types.OpDelete), fmt.Sprintf("%s 5 4 8", types.OpDelete),
		fmt.Sprintf("%s 6 4 8", types.OpInsert), fmt.Sprintf("%s 6 6 10", types.OpInsert),
		// -1us lies in [-4s, 0s) and [-2s, 2s).
		fmt.Sprintf("%s 0 -4 0", types.OpDelete), fmt.Sprintf("%s 0 -2 2", types.OpDelete),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n  %v\nwant\n  %v", got, want)
	}
	if r := msg.Chunk.Rows[0]; r[2].Kind() != types.KindTimestamp || len(r) != 4 {
		t.Fatalf("row %v: want 4 columns, timestamp bounds", r)
	}
}

func TestHopWindowRejectsBadWindows(t *testing.T) {
	src := newSource("in", types.Int64, types.Timestamp)
	for _, c := range []struct{ slide, size int64 }{{0, 4}, {3, 4}, {-2, 4}, {2, 0}, {1, expr.MaxWindowSpan + 1}} {
		if _, err := NewHopWindow(src, 1, c.slide, c.size, 0); err == nil {
			t.Errorf("slide %d size %d: want an error", c.slide, c.size)
		}
	}
	if _, err := NewHopWindow(src, 0, 1, 2, 0); err == nil {
		t.Error("an integer time column: want an error")
	}
}

// TestHopWindowRandomChanges applies random inserts, updates (moving rows
// between windows, to and from NULL) and deletes to a keyed table, feeds
// the changes through HopWindow, and checks after every chunk that the
// output, applied as a changelog keyed by (id, window_start), never
// inserts a key twice nor deletes a missing row, and equals the
// expansion of the table: so a delete retracts every window.
func TestHopWindowRandomChanges(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	for _, tz := range []bool{false, true} {
		typ := types.Timestamp
		mk := types.DTimestamp
		if tz {
			typ, mk = types.Timestamptz, types.DTimestamptz
		}
		slide := int64(1+r.Intn(3)) * sec
		size := slide * int64(1+r.Intn(4))
		offset := int64(r.Intn(5)-2) * sec / 2
		src := newSource("in", types.Int64, typ, types.Int64)
		h, err := NewHopWindow(src, 1, slide, size, offset)
		if err != nil {
			t.Fatal(err)
		}
		table := map[int64]types.Row{}
		out := map[string]types.Row{} // key: id, window_start
		randTime := func() types.Datum {
			if r.Intn(8) == 0 {
				return types.NullDatum
			}
			return mk(int64(r.Intn(40)-20) * sec / 4)
		}
		for step := 0; step < 200; step++ {
			c := &types.Chunk{}
			for n := r.Intn(6); n >= 0; n-- {
				id := int64(r.Intn(12))
				old, ok := table[id]
				switch {
				case !ok:
					nr := types.Row{types.DInt64(id), randTime(), types.DInt64(int64(step))}
					table[id] = nr
					c.Append(types.OpInsert, nr)
				case r.Intn(3) == 0:
					delete(table, id)
					c.Append(types.OpDelete, old)
				default:
					nr := types.Row{types.DInt64(id), randTime(), types.DInt64(int64(step))}
					table[id] = nr
					c.Append(types.OpUpdateDelete, old)
					c.Append(types.OpUpdateInsert, nr)
				}
			}
			src.push(c)
			src.pushBarrier(&stream.Barrier{Prev: uint64(step), Curr: uint64(step + 1)})
			var got types.Chunk
			for {
				msg, err := h.Next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if msg.Barrier != nil {
					break
				}
				got.Ops = append(got.Ops, msg.Chunk.Ops...)
				got.Rows = append(got.Rows, msg.Chunk.Rows...)
			}
			msg := stream.Message{Chunk: &got}
			for i, row := range msg.Chunk.Rows {
				key := fmt.Sprintf("%d@%d", row[0].Int(), row[3].Int())
				switch msg.Chunk.Ops[i] {
				case types.OpInsert:
					if prev, dup := out[key]; dup {
						t.Fatalf("seed %d step %d: insert of key %s already holding %v", seed, step, key, prev)
					}
					out[key] = row
				case types.OpDelete:
					if prev, ok := out[key]; !ok || prev.String() != row.String() {
						t.Fatalf("seed %d step %d: delete of %v, output holds %v", seed, step, row, prev)
					}
					delete(out, key)
				default:
					t.Fatalf("seed %d: unexpected op %s (updates become deletes and inserts)", seed, msg.Chunk.Ops[i])
				}
			}
			// The expected expansion, from the definition: every window
			// [s, s+size) with s = offset + k*slide containing the time.
			want := map[string]string{}
			for id, row := range table {
				if row[1].IsNull() {
					continue
				}
				tt := row[1].Int()
				// Times and offsets are multiples of sec/4 and sec/2, so
				// every window start is a multiple of sec/4.
				for s := tt - size - 2*slide; s <= tt+slide; s += sec / 4 {
					if ((s-offset)%slide+slide)%slide != 0 || s > tt || tt >= s+size {
						continue
					}
					w := append(slices.Clone(row), mk(s), mk(s+size))
					want[fmt.Sprintf("%d@%d", id, s)] = w.String()
				}
			}
			if len(want) != len(out) {
				t.Fatalf("seed %d step %d: %d output rows, want %d", seed, step, len(out), len(want))
			}
			for k, w := range want {
				if g, ok := out[k]; !ok || g.String() != w {
					t.Fatalf("seed %d step %d: key %s: got %v want %s", seed, step, k, g, w)
				}
			}
		}
	}
}

func TestHopWindowPassesBarriers(t *testing.T) {
	src := newSource("in", types.Int64, types.Timestamp)
	h, err := NewHopWindow(src, 1, sec, sec, 0)
	if err != nil {
		t.Fatal(err)
	}
	src.push(chunk(types.OpInsert, row(1, nil))) // no output: skipped
	b := &stream.Barrier{Prev: 1, Curr: 2}
	src.pushBarrier(b)
	msg, err := h.Next(context.Background())
	if err != nil || msg.Barrier != b {
		t.Fatalf("got %+v, %v; want the barrier", msg, err)
	}
}

// TestHopWindowProjectMatchesExpansion: the fused projection emits, for
// every change, the projection of what the plain expansion emits.
func TestHopWindowProjectMatchesExpansion(t *testing.T) {
	ch := chunk(
		types.OpInsert, row(1, 0, 0, ts(5*sec)),
		types.OpUpdateDelete, row(1, 0, 0, ts(5*sec)),
		types.OpUpdateInsert, row(1, 0, 0, nil),
		types.OpDelete, row(2, 0, 0, ts(-7*sec/2)),
	)
	in := []types.Type{types.Int64, types.Int64, types.Int64, types.Timestamp}
	plainSrc := newSource("in", in...)
	plain, err := NewHopWindow(plainSrc, 3, sec, 3*sec, sec/2)
	if err != nil {
		t.Fatal(err)
	}
	// Two output columns only, fewer than the time column's index.
	exprs := []expr.Expr{
		&expr.ColumnRef{Index: 5, Typ: types.Timestamp}, // window_end
		&expr.ColumnRef{Index: 0, Typ: types.Int64},
	}
	fusedSrc := newSource("in", in...)
	fused, err := NewHopWindowProject(fusedSrc, 3, sec, 3*sec, sec/2, exprs, nil)
	if err != nil {
		t.Fatal(err)
	}
	plainSrc.push(ch)
	fusedSrc.push(ch)
	pm, err := plain.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fm, err := fused.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pm.Chunk.Rows) != 9 || len(fm.Chunk.Rows) != len(pm.Chunk.Rows) {
		t.Fatalf("got %d fused rows, %d plain rows; want 9", len(fm.Chunk.Rows), len(pm.Chunk.Rows))
	}
	for i, p := range pm.Chunk.Rows {
		want := types.Row{p[5], p[0]}.String()
		if got := fm.Chunk.Rows[i].String(); got != want || fm.Chunk.Ops[i] != pm.Chunk.Ops[i] {
			t.Errorf("row %d: got %s %s, want %s %s", i, fm.Chunk.Ops[i], got, pm.Chunk.Ops[i], want)
		}
	}
	if s := fused.Schema(); len(s) != 2 || s[1] != types.Int64 {
		t.Errorf("fused schema %v", s)
	}
}
