package exec

import (
	"cmp"
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

// groupFeed feeds rows (pk int8 first, the group column int8 second)
// through a watermark generator on the group column (the watermark is
// the largest group seen) and keeps the rows that pass, by group.
type groupFeed struct {
	t    *testing.T
	src  *source
	gen  *WatermarkGen
	rows map[int64][]types.Row
}

func newGroupFeed(t *testing.T, src *source) *groupFeed {
	return &groupFeed{t: t, src: src, rows: map[int64][]types.Row{},
		gen: NewWatermarkGen(t.Name(), 1, &expr.ColumnRef{Index: 1, Typ: types.Int64}, nil)}
}

func (f *groupFeed) push(c *types.Chunk) {
	f.t.Helper()
	for i, r := range c.Rows {
		if f.gen.Late(r) {
			continue
		}
		g := r[1].Int()
		if c.Ops[i].IsInsert() {
			f.rows[g] = append(f.rows[g], r)
		} else {
			f.rows[g] = slices.DeleteFunc(f.rows[g], func(x types.Row) bool { return x[0].Int() == r[0].Int() })
		}
	}
	f.src.pushGenerated(f.t, f.gen, c)
}

// ranked returns, sorted, the first limit rows of each group (every row
// if limit < 0) in order, as out makes them from each row and its
// 1-based rank.
func (f *groupFeed) ranked(order func(a, b types.Row) int, limit int, out func(r types.Row, rank int) types.Row) []string {
	var res []string
	for _, rows := range f.rows {
		rows = slices.Clone(rows)
		slices.SortFunc(rows, order)
		for i, r := range rows {
			if limit >= 0 && i >= limit {
				break
			}
			res = append(res, out(slices.Clone(r), i+1).String())
		}
	}
	slices.Sort(res)
	return res
}

// onlyGroup checks that every row of tb is of group g (in column col),
// and that there are n of them (unless n < 0).
func onlyGroup(t *testing.T, tb *state.Table, col int, g int64, n int) {
	t.Helper()
	rows := tableRows(t, tb)
	if n >= 0 && len(rows) != n {
		t.Fatalf("group %d: state holds %d rows; want the open group's %d", g, len(rows), n)
	}
	for _, r := range rows {
		if r[col].Int() != g {
			t.Fatalf("group %d: state holds %v below the watermark", g, r)
		}
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
	// The watermark column first (the scan of a vnode stops at its first
	// open tuple) and second (every tuple is read).
	for _, cols := range [][]int{{1, 2}, {2, 1}} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) { testDistinctCleanup(t, cols) })
	}
}

func testDistinctCleanup(t *testing.T, cols []int) {
	h := newHarness(t)
	ts := []types.Type{types.Int64, types.Int64, types.Int64}
	src := newSource("in", ts...)
	tb := h.table(DistinctStateSchema("test", ts, cols))
	d, err := NewDistinct(src, cols, tb)
	if err != nil {
		t.Fatal(err)
	}
	wcol := slices.Index(cols, 1) // the watermark column's output position
	gen := NewWatermarkGen(t.Name(), 1, &expr.ColumnRef{Index: 1, Typ: types.Int64}, nil)
	v := newView()
	epoch := func(wantMarks ...string) { t.Helper(); epochWM(t, h, src, d, v, wantMarks...) }
	pk := 0
	for w := 0; w < 20; w++ {
		// Window w gets 5 rows over 3 tuples; the watermark then closes
		// every window before w.
		src.pushGenerated(t, gen, windowRows(&pk, w))
		src.pushWatermark(0, types.DInt64(int64(pk))) // not a distinct column: ignored
		epoch(fmt.Sprintf("$%d %d", wcol, w))
		onlyGroup(t, tb, wcol, int64(w), 3)
	}
	if got := len(v.sorted()); got != 60 {
		t.Fatalf("view has %d tuples; want all 60 (cleanup emits nothing)", got)
	}
	if got := d.CleanedKeys(); got != 57 {
		t.Fatalf("cleaned %d tuples, want 57", got)
	}
	// The cleanup scans read no more than the closed tuples and each
	// scan's open ones (3 a window, each in its own vnode or not).
	if got, most := d.wm.scanned, int64(57+20*3); got > most {
		t.Fatalf("cleanup scans read %d rows; want at most %d", got, most)
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
	if got := len(v.sorted()); got != 60 {
		t.Fatalf("view after late row and deletes: %v", v.sorted())
	}
	onlyGroup(t, tb, wcol, 19, -1)
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
			feed := newGroupFeed(t, src)
			push := feed.push
			v := newView()
			// want: every accepted row with its row_number and count (the
			// order keys are distinct, so both are its position).
			want := func() []string {
				return feed.ranked(func(a, b types.Row) int { return int(a[2].Int() - b[2].Int()) }, -1,
					func(r types.Row, rank int) types.Row {
						return append(r, types.DInt64(int64(rank)), types.DInt64(int64(rank)))
					})
			}
			for w := int64(0); w < 20; w++ {
				c := &types.Chunk{}
				for i := int64(0); i < 5; i++ {
					c.Append(types.OpInsert, owRowOf(w*10+i, w, int(10-i), 1))
				}
				push(c)
				src.pushWatermark(2, types.DInt64(100)) // an ORDER BY column: ignored
				epochWM(t, h, src, ow, v, fmt.Sprintf("$1 %d", w))
				onlyGroup(t, tb, 1, w, 5)
				if len(ow.cache) > 1 {
					t.Fatalf("partition %d: cache holds %d partitions", w, len(ow.cache))
				}
			}
			if got := ow.CleanedPartitions(); got != 19 {
				t.Fatalf("cleaned %d partitions, want 19", got)
			}
			// A partition's rows share a vnode, sorted by the partition
			// column first: each cleanup scan reads the closed partition's
			// rows and stops at the open partition's first.
			if got, want := ow.wm.scanned, int64(19*5+20); got != want {
				t.Fatalf("cleanup scans read %d rows; want %d", got, want)
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
			onlyGroup(t, tb, 1, 19, -1)
		})
	}
}

// A group top-N by a watermark column deletes the groups below each
// watermark at the barrier, emits nothing for them, and forwards the
// watermark on the group column; later rows of the open group re-rank
// right, and a late row (dropped by the generator) re-creates nothing.
func TestGroupTopNCleansGroupsBelowWatermark(t *testing.T) {
	h := newHarness(t)
	ts := []types.Type{types.Int64, types.Int64, types.Int64}
	src := newSource("in", ts...)
	order := []ColumnOrder{{Col: 2, Desc: true}}
	tb := h.table(TopNStateSchema("topn", ts, []int{1}, order, []int{0}))
	top, err := NewGroupTopN(src, []int{1}, order, []int{0}, 2, 0, true, tb)
	if err != nil {
		t.Fatal(err)
	}
	feed := newGroupFeed(t, src)
	v := newView()
	want := func() []string {
		// o descending, then pk (the state's order).
		return feed.ranked(func(a, b types.Row) int {
			return cmp.Or(cmp.Compare(b[2].Int(), a[2].Int()), cmp.Compare(a[0].Int(), b[0].Int()))
		}, 2,
			func(r types.Row, rank int) types.Row { return append(r, types.DInt64(int64(rank))) })
	}
	pk := 0
	for w := 0; w < 20; w++ {
		feed.push(windowRows(&pk, w))
		src.pushWatermark(2, types.DInt64(100)) // the ORDER BY column: ignored
		epochWM(t, h, src, top, v, fmt.Sprintf("$1 %d", w))
		onlyGroup(t, tb, 1, int64(w), 5)
	}
	if got := top.CleanedGroups(); got != 19 {
		t.Fatalf("cleaned %d groups, want 19", got)
	}
	if got, w := v.sorted(), want(); !slices.Equal(got, w) {
		t.Fatal(diffRows(got, w))
	}
	// A late row topping group 3; a row topping group 19; a delete of
	// group 19's second.
	feed.push(chunk(
		types.OpInsert, row(1000, 3, 9),
		types.OpInsert, row(1001, 19, 9),
		types.OpDelete, row(98, 19, 2),
	))
	epochWM(t, h, src, top, v)
	if got, w := v.sorted(), want(); !slices.Equal(got, w) {
		t.Fatal(diffRows(got, w))
	}
	onlyGroup(t, tb, 1, 19, -1)
}
