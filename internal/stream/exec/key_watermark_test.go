package exec

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// pushGenerated feeds c through the watermark generator g, as a source
// or table with WATERMARK FOR does: late rows are dropped, the kept rows
// pushed, then the watermark if it moved.
func (s *source) pushGenerated(t *testing.T, g *WatermarkGen, c *types.Chunk) {
	t.Helper()
	kept, w, err := g.Filter(c)
	if err != nil {
		t.Fatal(err)
	}
	if kept.Len() > 0 {
		s.push(kept)
	}
	if w != nil {
		s.ch <- stream.Message{Watermark: w}
	}
}

// windowRows returns 5 inserts of rows (pk, w, pk % 3), numbering them
// from *pk + 1.
func windowRows(pk *int, w int) *types.Chunk {
	c := &types.Chunk{}
	for i := 0; i < 5; i++ {
		*pk++
		c.Append(types.OpInsert, row(*pk, w, *pk%3))
	}
	return c
}

// epochWM ends an epoch: it pushes a barrier into src, applies what e
// emits up to it to v, checks the watermarks e forwarded, and commits.
func epochWM(t *testing.T, h *harness, src *source, e stream.Executor, v *view, wantMarks ...string) {
	t.Helper()
	b := h.barrier()
	src.pushBarrier(b)
	chunks, marks := drainWM(t, e)
	for _, c := range chunks {
		if err := v.apply(c); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(marks, wantMarks) {
		t.Fatalf("watermarks %v, want %v", marks, wantMarks)
	}
	h.commit(b.Prev)
}

// tableRows returns every row of tb (its uncommitted writes included).
func tableRows(t *testing.T, tb *state.Table) []types.Row {
	t.Helper()
	it, err := tb.Iter(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []types.Row
	for it.Next() {
		out = append(out, it.Row())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// DISTINCT over a watermark column deletes the stored tuples below each
// watermark at the barrier, emits nothing for them (the view keeps its
// rows), forwards the watermark on its output column, and keeps counting
// the open tuples right; a late row is dropped by the generator and
// re-creates nothing.
func TestDistinctCleansTuplesBelowWatermark(t *testing.T) {
	h := newHarness(t)
	ts := []types.Type{types.Int64, types.Int64, types.Int64}
	src := newSource("in", ts...)
	cols := []int{1, 2}
	tb := h.table(DistinctStateSchema("test", ts, cols))
	d, err := NewDistinct(src, cols, tb)
	if err != nil {
		t.Fatal(err)
	}
	gen := NewWatermarkGen(t.Name(), 1, &expr.ColumnRef{Index: 1, Typ: types.Int64}, nil)
	v := newView()
	epoch := func(wantMarks ...string) { t.Helper(); epochWM(t, h, src, d, v, wantMarks...) }
	pk := 0
	for w := 0; w < 20; w++ {
		// Window w gets 5 rows over 3 tuples; the watermark then closes
		// every window before w.
		src.pushGenerated(t, gen, windowRows(&pk, w))
		src.pushWatermark(0, types.DInt64(int64(pk))) // not a distinct column: ignored
		epoch(fmt.Sprintf("$0 %d", w))
		rows := tableRows(t, tb)
		if len(rows) != 3 {
			t.Fatalf("window %d: state holds %v; want window %d's 3 tuples", w, rows, w)
		}
		for _, r := range rows {
			if r[0].Int() != int64(w) {
				t.Fatalf("window %d: state holds %v below the watermark", w, r)
			}
		}
	}
	if got := len(v.sorted()); got != 60 {
		t.Fatalf("view has %d tuples; want all 60 (cleanup emits nothing)", got)
	}
	if got := d.CleanedKeys(); got != 57 {
		t.Fatalf("cleaned %d tuples, want 57", got)
	}

	// A late row of window 3 is dropped before it reaches the operator;
	// on-time rows keep counting.
	src.pushGenerated(t, gen, chunk(
		types.OpInsert, row(1000, 3, 7),
		types.OpInsert, row(1001, 19, 7),
		types.OpInsert, row(1002, 19, 7),
		types.OpDelete, row(100, 19, 1), // (19, 1) keeps another row
	))
	epoch()
	src.pushGenerated(t, gen, chunk(types.OpDelete, row(1001, 19, 7)))
	epoch()
	if got, want := len(v.sorted()), 61; got != want {
		t.Fatalf("view has %d tuples; want %d: %v", got, want, v.sorted())
	}
	src.pushGenerated(t, gen, chunk(types.OpDelete, row(1002, 19, 7)))
	epoch()
	if got := v.sorted(); len(got) != 60 || slices.Contains(got, fmt.Sprint(row(3, 7))) {
		t.Fatalf("view after late row and deletes: %v", got)
	}
	for _, r := range tableRows(t, tb) {
		if r[0].Int() != 19 {
			t.Fatalf("state holds %v after a late row", r)
		}
	}
}

// An OverWindow partitioned by a watermark column deletes the partitions
// below each watermark at the barrier (state rows and cache entries),
// emits nothing for them, and forwards the watermark on the partition
// column; a watermark on the ORDER BY column cleans nothing and is not
// forwarded. Later rows of the open partition recompute right, and a late
// row (dropped by the generator) does not re-create a closed partition.
func TestOverWindowCleansPartitionsBelowWatermark(t *testing.T) {
	for _, policy := range []OverWindowCachePolicy{CacheFull, CacheRecent} {
		t.Run(policy.String(), func(t *testing.T) {
			h := newHarness(t)
			src := newSource("in", owTypes...)
			calls := []OverWindowCall{
				owCallSpec{name: "row_number"}.build(t),
				owCallSpec{name: "count", frame: expr.DefaultFrame()}.build(t),
			}
			order := []ColumnOrder{{Col: 2}}
			tb := h.table(OverWindowStateSchema("ow", owTypes, []int{1}, order, []int{0}, calls))
			ow, err := NewOverWindow(src, []int{1}, order, []int{0}, calls, tb, OverWindowOptions{Strict: true, Cache: policy})
			if err != nil {
				t.Fatal(err)
			}
			gen := NewWatermarkGen(t.Name(), 1, &expr.ColumnRef{Index: 1, Typ: types.Int64}, nil)
			v := newView()
			// accepted holds the rows the operator received, by partition.
			accepted := map[int64][]types.Row{}
			push := func(c *types.Chunk) {
				t.Helper()
				for i, r := range c.Rows {
					if gen.Late(r) {
						continue
					}
					if c.Ops[i].IsInsert() {
						accepted[r[1].Int()] = append(accepted[r[1].Int()], r)
					} else {
						accepted[r[1].Int()] = slices.DeleteFunc(accepted[r[1].Int()], func(x types.Row) bool { return x[0].Int() == r[0].Int() })
					}
				}
				src.pushGenerated(t, gen, c)
			}
			// want: every accepted row with its row_number and count (the
			// order keys are distinct, so both are its position).
			want := func() []string {
				var out []string
				for _, rows := range accepted {
					rows = slices.Clone(rows)
					slices.SortFunc(rows, func(a, b types.Row) int { return int(a[2].Int() - b[2].Int()) })
					for i, r := range rows {
						out = append(out, append(slices.Clone(r), types.DInt64(int64(i+1)), types.DInt64(int64(i+1))).String())
					}
				}
				slices.Sort(out)
				return out
			}
			for w := int64(0); w < 20; w++ {
				c := &types.Chunk{}
				for i := int64(0); i < 5; i++ {
					c.Append(types.OpInsert, owRowOf(w*10+i, w, int(10-i), 1))
				}
				push(c)
				src.pushWatermark(2, types.DInt64(100)) // an ORDER BY column: ignored
				epochWM(t, h, src, ow, v, fmt.Sprintf("$1 %d", w))
				rows := tableRows(t, tb)
				if len(rows) != 5 {
					t.Fatalf("partition %d: state holds %d rows; want the open partition's 5", w, len(rows))
				}
				for _, r := range rows {
					if r[1].Int() != w {
						t.Fatalf("partition %d: state holds %v below the watermark", w, r)
					}
				}
				if len(ow.cache) > 1 {
					t.Fatalf("partition %d: cache holds %d partitions", w, len(ow.cache))
				}
			}
			if got := ow.CleanedPartitions(); got != 19 {
				t.Fatalf("cleaned %d partitions, want 19", got)
			}
			if got, w := v.sorted(), want(); !slices.Equal(got, w) {
				t.Fatal(diffRows(got, w))
			}

			// A late row of partition 3, a row moving partition 19's
			// numbering, a delete there.
			push(chunk(
				types.OpInsert, owRowOf(1000, 3, 0, 1),
				types.OpInsert, owRowOf(1001, 19, 0, 1),
				types.OpDelete, owRowOf(192, 19, 8, 1),
			))
			epochWM(t, h, src, ow, v)
			if got, w := v.sorted(), want(); !slices.Equal(got, w) {
				t.Fatal(diffRows(got, w))
			}
			for _, r := range tableRows(t, tb) {
				if r[1].Int() != 19 {
					t.Fatalf("state holds %v after a late row", r)
				}
			}
		})
	}
}
