package exec

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

func (s *source) pushWatermark(col int, v types.Datum) {
	s.ch <- stream.Message{Watermark: &stream.Watermark{Col: col, Val: v}}
}

// drainWM pulls from e until a barrier, returning the changes and the
// watermarks ("$col v") in the order they came.
func drainWM(t *testing.T, e stream.Executor) (chunks []*types.Chunk, marks []string) {
	t.Helper()
	return drainWMCtx(t, context.Background(), e)
}

func drainWMCtx(t *testing.T, ctx context.Context, e stream.Executor) (chunks []*types.Chunk, marks []string) {
	t.Helper()
	for {
		m, err := e.Next(ctx)
		if err != nil {
			t.Fatalf("%s: %v", e.Identity(), err)
		}
		switch {
		case m.Barrier != nil:
			return chunks, marks
		case m.Watermark != nil:
			marks = append(marks, fmt.Sprintf("$%d %s", m.Watermark.Col, m.Watermark.Val))
		default:
			chunks = append(chunks, m.Chunk)
		}
	}
}

func minus(t *testing.T, e expr.Expr, us int64) expr.Expr {
	t.Helper()
	x, err := expr.NewBinaryOp("-", e, &expr.Const{Value: types.DInterval(types.IntervalValue{Micros: us}), Typ: types.Interval})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// The generator drops rows below the watermark of the rows before them
// (an update pair with a late half entirely), counts them, and advances
// the watermark over the rows kept.
func TestWatermarkGenDropsLateRows(t *testing.T) {
	at := &expr.ColumnRef{Index: 1, Typ: types.Timestamp}
	lateBefore := LateRows(t.Name()) // the counter is per process (go test -count=N)
	g := NewWatermarkGen(t.Name(), 1, minus(t, at, 2*sec), nil)
	c, w, err := g.Filter(chunk(
		types.OpInsert, row(1, ts(10*sec)),
		types.OpInsert, row(2, ts(12*sec)),
		types.OpInsert, row(3, ts(9*sec)), // late: 12s - 2s came before
		types.OpInsert, row(3, ts(10*sec)), // on time
	))
	if err != nil || c.Len() != 3 || w == nil || w.Val.Int() != 10*sec {
		t.Fatalf("first chunk: %d rows, watermark %v, err %v", c.Len(), w, err)
	}
	c, w, err = g.Filter(chunk(
		types.OpInsert, row(4, ts(9*sec)), // late
		types.OpInsert, row(5, ts(11*sec)),
		types.OpUpdateDelete, row(1, ts(8*sec)), // late half: pair dropped
		types.OpUpdateInsert, row(1, ts(20*sec)),
		types.OpInsert, row(6, nil), // NULL is never late
		types.OpDelete, row(2, ts(12*sec)),
	))
	if err != nil {
		t.Fatal(err)
	}
	if got := changes([]*types.Chunk{c}); len(got) != 3 || w != nil {
		t.Fatalf("second chunk kept %v, watermark %v; want rows 5, 6, 2 and no advance", got, w)
	}
	if got := LateRows(t.Name()) - lateBefore; got != 4 {
		t.Fatalf("late rows %d, want 4", got)
	}
	if cur, ok := g.Current(); !ok || cur.Int() != 10*sec {
		t.Fatalf("watermark %v", cur)
	}
}

// Project carries a watermark to every output monotone in its column:
// the column itself, col - interval, and TUMBLE's window bounds.
func TestProjectDerivesWatermarks(t *testing.T) {
	src := newSource("in", types.Int64, types.Timestamp)
	at := &expr.ColumnRef{Index: 1, Typ: types.Timestamp}
	id := &expr.ColumnRef{Index: 0, Typ: types.Int64}
	p := NewProject(src, []expr.Expr{
		id,
		at,
		minus(t, at, 5*sec),
		&expr.TimeWindowBound{Arg: at, Slide: 10 * sec, Shift: 10 * sec, Name: "window_end"},
	}, nil)
	h := newHarness(t)
	src.pushWatermark(1, ts(23*sec))
	src.pushWatermark(0, types.DInt64(7))
	src.pushBarrier(h.barrier())
	_, marks := drainWM(t, p)
	want := []string{"$1 " + ts(23*sec).String(), "$2 " + ts(18*sec).String(), "$3 " + ts(30*sec).String(), "$0 7"}
	if !slices.Equal(marks, want) {
		t.Fatalf("watermarks %v, want %v", marks, want)
	}
}

// HOP gives window_start the first window start of a row at the
// watermark's time, and window_end that plus the size.
func TestHopWindowDerivesWatermarks(t *testing.T) {
	src := newSource("in", types.Int64, types.Timestamp)
	hw, err := NewHopWindow(src, 1, 2*sec, 10*sec, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	src.pushWatermark(1, ts(23*sec)) // windows of 23s start at 14, 16, ..., 22
	src.pushBarrier(h.barrier())
	_, marks := drainWM(t, hw)
	want := []string{"$1 " + ts(23*sec).String(), "$2 " + ts(14*sec).String(), "$3 " + ts(24*sec).String()}
	if !slices.Equal(marks, want) {
		t.Fatalf("watermarks %v, want %v", marks, want)
	}
}

// HashAgg grouped by a watermark column deletes the groups below each
// watermark at the barrier (result rows, kept min/max inputs, distinct
// values and cache entries), emits nothing for them (the view keeps its
// rows), and forwards the watermark on its output after the changes.
func TestHashAggCleansGroupsBelowWatermark(t *testing.T) {
	h := newHarness(t)
	src := newSource("in", types.Int64, types.Int64, types.Int64)
	calls := []AggCall{
		{Agg: mustAgg(t, "count", false), Filter: NoColumn},
		{Agg: mustAgg(t, "max", false, types.Int64), Args: []int{2}, Filter: NoColumn},
		{Agg: mustAgg(t, "count", true, types.Int64), Args: []int{2}, Filter: NoColumn},
	}
	res, per, err := HashAggStateSchemas("test", src.Schema(), []int{1}, calls, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	tables := h.tables(per)
	a, err := NewHashAgg(src, []int{1}, calls, []int{0}, h.table(res), tables)
	if err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		for _, tb := range append(tables, a.result) {
			if tb == nil {
				continue
			}
			it, err := tb.Iter(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				n++
			}
			it.Close()
		}
		return n
	}
	v := newView()
	pk := 0
	for w := 0; w < 20; w++ {
		// Window w gets 5 rows; the watermark then closes every window
		// before w.
		src.push(windowRows(&pk, w))
		src.pushWatermark(1, types.DInt64(int64(w)))
		src.pushWatermark(0, types.DInt64(int64(pk))) // not a group key: ignored
		epochWM(t, h, src, a, v, fmt.Sprintf("$0 %d", w))
		// Only window w is open: its result row, 5 max inputs, and its
		// distinct values (0, 1, 2).
		if n := count(); n > 1+5+3 {
			t.Fatalf("window %d: %d state rows", w, n)
		}
	}
	if got := len(v.sorted()); got != 20 {
		t.Fatalf("view has %d groups; want all 20 (cleanup emits nothing)", got)
	}
	if a.CleanedGroups() != 19 {
		t.Fatalf("cleaned %d groups, want 19", a.CleanedGroups())
	}
	if n := a.cache.len(); n > 1 {
		t.Fatalf("cache holds %d groups after cleanup", n)
	}
}

// A join whose key carries watermarks on both sides deletes the stored
// rows of both sides below the smaller one at the barrier; a watermark on
// one side alone cleans nothing. The output keeps every pair.
func TestHashJoinCleansKeysBelowBothWatermarks(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the join's input pumps
	j, l, r := newTestJoin(t, h, JoinLeftOuter, nil)
	stored := func() (n int) {
		for _, s := range j.sides {
			it, err := s.State.Iter(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				n++
			}
			it.Close()
		}
		return n
	}
	v := newView()
	step := func(lc, rc *types.Chunk, lw, rw int64) {
		t.Helper()
		if lc != nil {
			l.push(lc)
		}
		if lw >= 0 {
			l.pushWatermark(1, types.DInt64(lw))
		}
		b := h.barrier()
		l.pushBarrier(b)
		if rc != nil {
			r.push(rc)
		}
		if rw >= 0 {
			r.pushWatermark(1, types.DInt64(rw))
		}
		r.pushBarrier(b)
		chunks, marks := drainWMCtx(t, ctx, j)
		if len(marks) > 0 {
			t.Fatalf("join forwarded watermarks %v", marks)
		}
		for _, c := range chunks {
			if err := v.apply(c); err != nil {
				t.Fatal(err)
			}
		}
		h.commit(b.Prev)
	}
	lc, rc := &types.Chunk{}, &types.Chunk{}
	for k := 0; k < 10; k++ {
		lc.Append(types.OpInsert, row(k, k, 0))
		if k%2 == 0 {
			rc.Append(types.OpInsert, row(100+k, k, 1))
		}
	}
	step(lc, rc, -1, -1)
	if n := stored(); n != 15 {
		t.Fatalf("stored %d rows, want 15", n)
	}
	step(nil, nil, 6, -1) // left side only: nothing closes
	if n := stored(); n != 15 || j.CleanedRows() != 0 {
		t.Fatalf("one-sided watermark: stored %d, cleaned %d", n, j.CleanedRows())
	}
	step(nil, nil, -1, 4) // keys below min(6, 4) = 4 close: 0..3 left, 0 and 2 right
	if n := stored(); n != 9 || j.CleanedRows() != 6 {
		t.Fatalf("after watermarks 6/4: stored %d, cleaned %d; want 9, 6", n, j.CleanedRows())
	}
	if got := len(v.sorted()); got != 10 {
		t.Fatalf("output has %d rows, want 10 (cleanup emits nothing)", got)
	}
	// New rows above the watermarks still join.
	step(chunk(types.OpInsert, row(20, 8, 0)), nil, -1, -1)
	if got := len(v.sorted()); got != 11 {
		t.Fatalf("output has %d rows after a new match, want 11", got)
	}
}
