package exec

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// over-window test input: (pk int8, p int8, o int8 nullable, v int8
// nullable, f bool, k int4 = 2)
var owTypes = []types.Type{types.Int64, types.Int64, types.Int64, types.Int64, types.Bool, types.Int32}

func owRowOf(pk, p int64, o, v any) types.Row {
	r := row(int(pk), int(p), o, v)
	f := false
	if !r[3].IsNull() {
		f = r[3].Int()%2 == 0
	}
	return append(r, types.DBool(f), types.DInt32(2))
}

// owCallSpec is a window call in test notation.
type owCallSpec struct {
	name   string
	args   []int
	filter int
	frame  expr.Frame
	konst  bool // lag/lead offset is the constant column k (= 2)
}

func rowsFrame(s, e expr.FrameBound) expr.Frame {
	return expr.Frame{Mode: expr.FrameRows, Start: s, End: e}
}

func prec(n int64) expr.FrameBound {
	return expr.FrameBound{Kind: expr.OffsetPreceding, Offset: types.DInt64(n)}
}
func foll(n int64) expr.FrameBound {
	return expr.FrameBound{Kind: expr.OffsetFollowing, Offset: types.DInt64(n)}
}

var (
	cur    = expr.FrameBound{Kind: expr.CurrentRow}
	unbPre = expr.FrameBound{Kind: expr.UnboundedPreceding}
	unbFol = expr.FrameBound{Kind: expr.UnboundedFollowing}
)

func (s owCallSpec) build(t testing.TB) OverWindowCall {
	t.Helper()
	ts := make([]types.Type, len(s.args))
	for i, a := range s.args {
		ts[i] = owTypes[a]
	}
	fn, err := expr.LookupWindowFunc(s.name, ts)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	c := OverWindowCall{Func: fn, Args: s.args, Filter: NoColumn, Frame: s.frame}
	if s.filter != 0 {
		c.Filter = s.filter
	}
	if s.name == "lag" || s.name == "lead" {
		c.ConstOffset, c.OffsetConst = 1, true
		if len(s.args) >= 2 {
			c.ConstOffset, c.OffsetConst = 2, s.konst
		}
	}
	return c
}

// Bounded calls only: the recent policy loads ranges for these.
var owBoundedCalls = []owCallSpec{
	{name: "sum", args: []int{3}, frame: rowsFrame(prec(2), cur)},
	{name: "max", args: []int{3}, frame: rowsFrame(prec(1), foll(1))},
	{name: "avg", args: []int{3}, frame: rowsFrame(cur, foll(2))},
	{name: "count", frame: expr.Frame{Mode: expr.FrameGroups, Start: prec(1), End: foll(1), Exclude: expr.ExcludeCurrentRow}},
	{name: "sum", args: []int{3}, frame: rowsFrame(foll(3), foll(5))},
	{name: "count", args: []int{3}, frame: expr.Frame{Mode: expr.FrameRows, Start: prec(2), End: prec(1), Exclude: expr.ExcludeGroup}},
	{name: "first_value", args: []int{3}, frame: rowsFrame(prec(2), prec(1))},
	{name: "nth_value", args: []int{3, 5}, frame: expr.Frame{Mode: expr.FrameRows, Start: prec(3), End: foll(1), Exclude: expr.ExcludeTies}},
	{name: "lag", args: []int{3}},
	{name: "lead", args: []int{3, 5}, konst: true},
	{name: "sum", args: []int{3}, filter: 4, frame: rowsFrame(prec(1), foll(1))},
	{name: "min", args: []int{3}, frame: expr.Frame{Mode: expr.FrameRange, Start: cur, End: cur}},
	{name: "bool_or", args: []int{4}, frame: expr.Frame{Mode: expr.FrameGroups, Start: prec(2), End: cur, Exclude: expr.ExcludeTies}},
}

// Calls whose reach is the partition's end or the whole partition.
var owUnboundedCalls = []owCallSpec{
	{name: "sum", args: []int{3}, frame: expr.DefaultFrame()},
	{name: "max", args: []int{3}, frame: expr.DefaultFrame()},
	{name: "avg", args: []int{3}, frame: expr.DefaultFrame()},
	{name: "row_number"},
	{name: "rank"},
	{name: "dense_rank"},
	{name: "percent_rank"},
	{name: "cume_dist"},
	{name: "ntile", args: []int{5}},
	{name: "lag", args: []int{3, 5, 3}},
	{name: "min", args: []int{3}, frame: expr.Frame{Mode: expr.FrameRange, Start: prec(2), End: cur}},
	{name: "last_value", args: []int{3}, frame: expr.Frame{Mode: expr.FrameRange, Start: cur, End: unbFol}},
	{name: "bool_and", args: []int{4}, frame: rowsFrame(unbPre, foll(1))},
	{name: "count", frame: expr.Frame{Mode: expr.FrameRows, Start: prec(1), End: unbFol, Exclude: expr.ExcludeTies}},
	// RANGE offsets: the affected rows are found by key (affectedRange)
	{name: "sum", args: []int{3}, frame: expr.Frame{Mode: expr.FrameRange, Start: prec(3), End: foll(2)}},
	{name: "count", frame: expr.Frame{Mode: expr.FrameRange, Start: foll(1), End: foll(3), Exclude: expr.ExcludeCurrentRow}},
	{name: "max", args: []int{3}, frame: expr.Frame{Mode: expr.FrameRange, Start: unbPre, End: prec(2)}},
	{name: "avg", args: []int{3}, frame: expr.Frame{Mode: expr.FrameRange, Start: foll(2), End: unbFol, Exclude: expr.ExcludeGroup}},
	{name: "first_value", args: []int{3}, frame: expr.Frame{Mode: expr.FrameRange, Start: prec(5), End: prec(1)}},
	{name: "nth_value", args: []int{3, 5}, frame: expr.Frame{Mode: expr.FrameRange, Start: prec(4), End: cur, Exclude: expr.ExcludeTies}},
	{name: "bool_or", args: []int{4}, frame: expr.Frame{Mode: expr.FrameRange, Start: cur, End: foll(4)}},
}

func owCompare(order []ColumnOrder) func(a, b types.Row) int {
	return func(a, b types.Row) int {
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
	}
}

// owFromScratch computes every call over whole sorted partitions.
func owFromScratch(t testing.TB, rows []types.Row, partition []int, order []ColumnOrder, calls []OverWindowCall) []types.Row {
	t.Helper()
	parts := map[string][]types.Row{}
	for _, r := range rows {
		k := project(r, partition).String()
		parts[k] = append(parts[k], r)
	}
	var out []types.Row
	for _, rs := range parts {
		slices.SortFunc(rs, owCompare(order))
		n := len(rs)
		res := make([][]types.Datum, len(calls))
		for ci, c := range calls {
			in := &expr.WindowInput{Args: make([][]types.Datum, n)}
			if c.Filter != NoColumn {
				in.Filter = make([]bool, n)
			}
			for i, r := range rs {
				in.Args[i] = project(r, c.Args)
				if in.Filter != nil {
					in.Filter[i] = !r[c.Filter].IsNull() && r[c.Filter].Bool()
				}
			}
			if len(order) > 0 {
				in.Peers = func(i, j int) bool {
					for _, o := range order {
						x, y := rs[i][o.Col], rs[j][o.Col]
						if x.IsNull() != y.IsNull() || (!x.IsNull() && types.Compare(x, y) != 0) {
							return false
						}
					}
					return true
				}
				if len(order) == 1 {
					in.OrderKey = make([]types.Datum, n)
					for i, r := range rs {
						in.OrderKey[i] = r[order[0].Col]
					}
					in.OrderType, in.Desc, in.NullsFirst = owTypes[order[0].Col], order[0].Desc, order[0].NullsFirst
				}
			}
			res[ci] = make([]types.Datum, n)
			if err := expr.ComputeWindow(&expr.EvalContext{Ctx: context.Background()}, c.Func, c.Frame, in, 0, n, res[ci]); err != nil {
				t.Fatalf("from scratch %s: %v", c.Func.Name, err)
			}
		}
		for i, r := range rs {
			o := append(types.Row(nil), r...)
			for ci := range calls {
				o = append(o, res[ci][i])
			}
			out = append(out, o)
		}
	}
	return out
}

func owSeed(t *testing.T) int64 {
	seed := rand.Int63()
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (rerun with RUNNEL_TEST_SEED=%d)", seed, seed)
	return seed
}

func owSteps(def int) int {
	if s := os.Getenv("RUNNEL_STREAM_RANDOM_STEPS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return def
}

// owModel is the input table under random DML: many tiny partitions and
// one huge one (p = 100); updates move rows between partitions, change
// order keys or only values; deletes prefer partition edges.
type owModel struct {
	rng    *rand.Rand
	rows   map[int64]types.Row
	nextPK int64
	order  []ColumnOrder
}

func (m *owModel) gen(pk int64) types.Row {
	p := int64(m.rng.Intn(12))
	if m.rng.Intn(2) == 0 {
		p = 100
	}
	var o any = m.rng.Intn(40)
	if m.rng.Intn(10) == 0 {
		o = nil
	}
	var v any = m.rng.Intn(9) - 3
	if m.rng.Intn(10) == 0 {
		v = nil
	}
	return owRowOf(pk, p, o, v)
}

// edge returns a row at the start or end of a random partition.
func (m *owModel) edge() (types.Row, bool) {
	if len(m.rows) == 0 {
		return nil, false
	}
	var any types.Row
	for _, r := range m.rows {
		any = r
		break
	}
	var part []types.Row
	for _, r := range m.rows {
		if types.Compare(r[1], any[1]) == 0 {
			part = append(part, r)
		}
	}
	slices.SortFunc(part, owCompare(m.order))
	if m.rng.Intn(2) == 0 {
		return part[0], true
	}
	return part[len(part)-1], true
}

func (m *owModel) randomRow() (types.Row, bool) {
	if len(m.rows) == 0 {
		return nil, false
	}
	i := m.rng.Intn(len(m.rows))
	for _, r := range m.rows {
		if i == 0 {
			return r, true
		}
		i--
	}
	return nil, false
}

func (m *owModel) step(n int) *types.Chunk {
	c := &types.Chunk{}
	for i := 0; i < n; i++ {
		switch op := m.rng.Intn(10); {
		case op < 4 || len(m.rows) < 5:
			m.nextPK++
			r := m.gen(m.nextPK)
			m.rows[m.nextPK] = r
			c.Append(types.OpInsert, r)
		case op < 6:
			var r types.Row
			var ok bool
			if m.rng.Intn(2) == 0 {
				r, ok = m.edge()
			} else {
				r, ok = m.randomRow()
			}
			if ok {
				delete(m.rows, r[0].Int())
				c.Append(types.OpDelete, r)
			}
		default:
			old, ok := m.randomRow()
			if !ok {
				continue
			}
			pk := old[0].Int()
			var o, v any = old[2], old[3]
			p := old[1].Int()
			switch m.rng.Intn(4) {
			case 0: // value only
				v = m.rng.Intn(9) - 3
			case 1: // order key
				o = m.rng.Intn(40)
			case 2: // move between partitions
				if p == 100 {
					p = int64(m.rng.Intn(12))
				} else {
					p = 100
				}
				v = 0
			case 3: // nothing a window reads (same values)
			}
			nr := owRowOf(pk, p, o, v)
			m.rows[pk] = nr
			c.Append(types.OpUpdateDelete, old)
			c.Append(types.OpUpdateInsert, nr)
		}
	}
	return c
}

func (m *owModel) current() []types.Row {
	out := make([]types.Row, 0, len(m.rows))
	for _, r := range m.rows {
		out = append(out, r)
	}
	return out
}

func TestOverWindowRandomized(t *testing.T) {
	type tc struct {
		name      string
		partition []int
		order     []ColumnOrder
		calls     []owCallSpec
		opts      OverWindowOptions
		pending   int // maxPendingChanges override (0: default)
	}
	asc := []ColumnOrder{{Col: 2}}
	descNF := []ColumnOrder{{Col: 2, Desc: true, NullsFirst: true}}
	var cases []tc
	for _, pol := range []OverWindowCachePolicy{CacheFull, CacheRecent} {
		cases = append(cases,
			tc{name: "bounded-asc-" + pol.String(), partition: []int{1}, order: asc, calls: owBoundedCalls, opts: OverWindowOptions{Cache: pol, Strict: true}},
			tc{name: "bounded-desc-nullsfirst-" + pol.String(), partition: []int{1}, order: descNF, calls: owBoundedCalls, opts: OverWindowOptions{Cache: pol, Strict: true}},
			tc{name: "unbounded-asc-" + pol.String(), partition: []int{1}, order: asc, calls: owUnboundedCalls, opts: OverWindowOptions{Cache: pol, Strict: true}},
			tc{name: "unbounded-desc-nullsfirst-" + pol.String(), partition: []int{1}, order: descNF, calls: owUnboundedCalls, opts: OverWindowOptions{Cache: pol, Strict: true}},
		)
	}
	cases = append(cases,
		tc{name: "tiny-cache-early-flush", partition: []int{1}, order: asc, calls: append(slices.Clone(owBoundedCalls), owUnboundedCalls...),
			opts: OverWindowOptions{Cache: CacheFull, CacheRows: 8, Strict: true}, pending: 3},
		tc{name: "no-partition", order: asc, calls: append(slices.Clone(owBoundedCalls), owUnboundedCalls[:6]...), opts: OverWindowOptions{Cache: CacheRecent, Strict: true}},
		tc{name: "no-order", partition: []int{1}, calls: []owCallSpec{
			{name: "sum", args: []int{3}, frame: expr.DefaultFrame()},
			{name: "row_number"},
			{name: "count", frame: rowsFrame(prec(1), cur)},
		}, opts: OverWindowOptions{Cache: CacheFull, Strict: true}},
		tc{name: "two-order-columns", partition: []int{1}, order: []ColumnOrder{{Col: 4, Desc: true}, {Col: 2, NullsFirst: true}}, calls: []owCallSpec{
			{name: "sum", args: []int{3}, frame: expr.DefaultFrame()},
			{name: "rank"},
			{name: "sum", args: []int{3}, frame: expr.Frame{Mode: expr.FrameGroups, Start: prec(1), End: foll(2)}},
			{name: "lead", args: []int{3}},
		}, opts: OverWindowOptions{Cache: CacheRecent, Strict: true}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.pending > 0 {
				defer func(old int) { maxPendingChanges = old }(maxPendingChanges)
				maxPendingChanges = c.pending
			}
			seed := owSeed(t)
			rng := rand.New(rand.NewSource(seed))
			h := newHarness(t)
			ctx := context.Background()
			src := newSource("t", owTypes...)
			calls := make([]OverWindowCall, len(c.calls))
			for i, s := range c.calls {
				calls[i] = s.build(t)
			}
			st := h.table(OverWindowStateSchema("ow", owTypes, c.partition, c.order, []int{0}, calls))
			ow, err := NewOverWindow(src, c.partition, c.order, []int{0}, calls, st, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			m := &owModel{rng: rng, rows: map[int64]types.Row{}, order: c.order}
			v := newView()
			for step := 0; step < owSteps(40); step++ {
				for i := rng.Intn(3); i >= 0; i-- {
					n := 1 + rng.Intn(8)
					if step == 0 {
						n = 60
					}
					src.push(m.step(n))
				}
				b := h.barrier()
				src.pushBarrier(b)
				drain(t, ctx, ow, v)
				if rng.Intn(4) == 0 {
					// reads then see committed data as well as the
					// uncommitted epochs (commits cost the most here)
					h.commit(b.Prev)
				}
				want := rowsSorted(owFromScratch(t, m.current(), c.partition, c.order, calls))
				if got := v.sorted(); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: %s", seed, step, diffRows(got, want))
				}
			}
		})
	}
}

func TestOverWindowScripted(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	src := newSource("t", owTypes...)
	calls := []OverWindowCall{
		owCallSpec{name: "sum", args: []int{3}, frame: expr.DefaultFrame()}.build(t),
		owCallSpec{name: "row_number"}.build(t),
	}
	order := []ColumnOrder{{Col: 2}}
	st := h.table(OverWindowStateSchema("ow", owTypes, []int{1}, order, []int{0}, calls))
	ow, err := NewOverWindow(src, []int{1}, order, []int{0}, calls, st, OverWindowOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	v := newView()
	step := func(c *types.Chunk, want ...string) {
		t.Helper()
		src.push(c)
		src.pushBarrier(h.barrier())
		got, _ := drain(t, ctx, ow, v)
		if !slices.Equal(changes(got), want) {
			t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(changes(got), "\n  "), strings.Join(want, "\n  "))
		}
	}
	step(chunk(types.OpInsert, owRowOf(1, 0, 10, 1), types.OpInsert, owRowOf(2, 0, 20, 2), types.OpInsert, owRowOf(3, 1, 5, 7)),
		"+ (1, 0, 10, 1, f, 2, 1, 1)", "+ (2, 0, 20, 2, t, 2, 3, 2)", "+ (3, 1, 5, 7, f, 2, 7, 1)")
	// insert before both rows of p0: every row after it changes
	step(chunk(types.OpInsert, owRowOf(4, 0, 5, 4)),
		"+ (4, 0, 5, 4, t, 2, 4, 1)",
		"U- (1, 0, 10, 1, f, 2, 1, 1)", "U+ (1, 0, 10, 1, f, 2, 5, 2)",
		"U- (2, 0, 20, 2, t, 2, 3, 2)", "U+ (2, 0, 20, 2, t, 2, 7, 3)")
	// a value change of the last row touches only that row
	step(chunk(types.OpUpdateDelete, owRowOf(2, 0, 20, 2), types.OpUpdateInsert, owRowOf(2, 0, 20, 4)),
		"U- (2, 0, 20, 2, t, 2, 7, 3)", "U+ (2, 0, 20, 4, t, 2, 9, 3)")
	// a move between partitions: delete in p1, insert in p0, p0's later rows change
	step(chunk(types.OpUpdateDelete, owRowOf(3, 1, 5, 7), types.OpUpdateInsert, owRowOf(3, 0, 15, 0)),
		"- (3, 1, 5, 7, f, 2, 7, 1)",
		"+ (3, 0, 15, 0, t, 2, 5, 3)",
		"U- (2, 0, 20, 4, t, 2, 9, 3)", "U+ (2, 0, 20, 4, t, 2, 9, 4)")
	// delete at the partition start
	step(chunk(types.OpDelete, owRowOf(4, 0, 5, 4)),
		"- (4, 0, 5, 4, t, 2, 4, 1)",
		"U- (1, 0, 10, 1, f, 2, 5, 2)", "U+ (1, 0, 10, 1, f, 2, 1, 1)",
		"U- (3, 0, 15, 0, t, 2, 5, 3)", "U+ (3, 0, 15, 0, t, 2, 1, 2)",
		"U- (2, 0, 20, 4, t, 2, 9, 4)", "U+ (2, 0, 20, 4, t, 2, 5, 3)")
	// an update touching no window input passes through as an update
	// (here: nothing changes at all but the row is re-sent)
	step(chunk(types.OpUpdateDelete, owRowOf(1, 0, 10, 1), types.OpUpdateInsert, owRowOf(1, 0, 10, 1)))
}

func TestOverWindowPassThroughUpdate(t *testing.T) {
	// input (pk, p, o, v, w): the calls read v only; updating w passes
	// through without recomputation.
	ts := []types.Type{types.Int64, types.Int64, types.Int64, types.Int64, types.Int64}
	h := newHarness(t)
	ctx := context.Background()
	src := newSource("t", ts...)
	fn, err := expr.LookupWindowFunc("sum", []types.Type{types.Int64})
	if err != nil {
		t.Fatal(err)
	}
	calls := []OverWindowCall{{Func: fn, Args: []int{3}, Filter: NoColumn, Frame: expr.DefaultFrame()}}
	order := []ColumnOrder{{Col: 2}}
	st := h.table(OverWindowStateSchema("ow", ts, []int{1}, order, []int{0}, calls))
	stats := &OverWindowStats{}
	ow, err := NewOverWindow(src, []int{1}, order, []int{0}, calls, st, OverWindowOptions{Strict: true, Stats: stats})
	if err != nil {
		t.Fatal(err)
	}
	var c types.Chunk
	for i := 0; i < 100; i++ {
		c.Append(types.OpInsert, row(i, 0, i, 1, 0))
	}
	src.push(&c)
	src.pushBarrier(h.barrier())
	drain(t, ctx, ow, nil)
	before := stats.RowsRecomputed.Load()
	src.push(chunk(types.OpUpdateDelete, row(3, 0, 3, 1, 0), types.OpUpdateInsert, row(3, 0, 3, 1, 42)))
	src.pushBarrier(h.barrier())
	got, _ := drain(t, ctx, ow, nil)
	want := []string{"U- (3, 0, 3, 1, 0, 4)", "U+ (3, 0, 3, 1, 42, 4)"}
	if !slices.Equal(changes(got), want) {
		t.Fatalf("got %v; want %v", changes(got), want)
	}
	if n := stats.RowsRecomputed.Load() - before; n != 0 {
		t.Fatalf("a pass-through update recomputed %d rows; want 0", n)
	}
}

// TestOverWindowRecomputeBounds is the design's story: t(p, o, v) with
// 10,000 rows in p = 0 (o = 100001..110000, v = 0) and 100 in p = 1 (o =
// v = 1..100); UPDATE t SET p = 0, v = 0 WHERE o = 50 moves a row from p1
// to p0 (to p0's first position). The rows recomputed are bounded by the
// frames.
func TestOverWindowRecomputeBounds(t *testing.T) {
	ts := []types.Type{types.Int32, types.Int32, types.Int32} // (p, o, v), pk o
	cases := []struct {
		name  string
		frame expr.Frame
		// bounds on the rows recomputed by the move
		max int64
	}{
		// p1 loses position 49: rows 48..51 of p1 (with slack); p0 gains
		// position 0: rows 0..3.
		{"rows-2-preceding", rowsFrame(prec(2), cur), 12},
		// default frame: every row from the change to the partition end:
		// p0: all 10,001 rows; p1: rows 49..99 (+ one row of slack).
		{"range-unbounded-preceding", expr.DefaultFrame(), 10001 + 52},
	}
	for _, pol := range []OverWindowCachePolicy{CacheFull, CacheRecent} {
		for _, tc := range cases {
			t.Run(tc.name+"-"+pol.String(), func(t *testing.T) {
				h := newHarness(t)
				ctx := context.Background()
				src := newSource("t", ts...)
				var calls []OverWindowCall
				for _, name := range []string{"sum", "max", "avg"} {
					fn, err := expr.LookupWindowFunc(name, []types.Type{types.Int32})
					if err != nil {
						t.Fatal(err)
					}
					calls = append(calls, OverWindowCall{Func: fn, Args: []int{2}, Filter: NoColumn, Frame: tc.frame})
				}
				order := []ColumnOrder{{Col: 1}}
				st := h.table(OverWindowStateSchema("ow", ts, []int{0}, order, []int{1}, calls))
				stats := &OverWindowStats{}
				ow, err := NewOverWindow(src, []int{0}, order, []int{1}, calls, st, OverWindowOptions{Strict: true, Stats: stats, Cache: pol})
				if err != nil {
					t.Fatal(err)
				}
				r := func(p, o, v int32) types.Row {
					return types.Row{types.DInt32(p), types.DInt32(o), types.DInt32(v)}
				}
				c := &types.Chunk{}
				for i := int32(100001); i <= 110000; i++ {
					c.Append(types.OpInsert, r(0, i, 0))
				}
				for i := int32(1); i <= 100; i++ {
					c.Append(types.OpInsert, r(1, i, i))
				}
				src.push(c)
				b := h.barrier()
				src.pushBarrier(b)
				drain(t, ctx, ow, nil)
				h.commit(b.Prev)
				before, loaded := stats.RowsRecomputed.Load(), stats.RowsLoaded.Load()
				emitted := stats.RowsEmitted.Load()
				src.push(chunk(types.OpUpdateDelete, r(1, 50, 50), types.OpUpdateInsert, r(0, 50, 0)))
				src.pushBarrier(h.barrier())
				got, _ := drain(t, ctx, ow, nil)
				n := stats.RowsRecomputed.Load() - before
				t.Logf("%s, cache %s: %d rows recomputed, %d rows loaded, %d changes emitted", tc.name, pol, n, stats.RowsLoaded.Load()-loaded, stats.RowsEmitted.Load()-emitted)
				if n > tc.max {
					t.Fatalf("recomputed %d rows; want at most %d", n, tc.max)
				}
				// Rows read from state: none with the full policy (both
				// partitions stay cached); with the recent policy a range
				// around each change when the frame is bounded (its reach
				// plus margin, on both sides of both changes).
				loadedNow := stats.RowsLoaded.Load() - loaded
				switch {
				case pol == CacheFull && loadedNow != 0:
					t.Fatalf("the full policy read %d rows from state; want 0 (cached)", loadedNow)
				case pol == CacheRecent && tc.frame.Mode == expr.FrameRows && loadedNow > 40:
					t.Fatalf("the recent policy read %d rows from state for a ROWS 2 PRECEDING frame; want at most 40", loadedNow)
				}
				if n < 2 {
					t.Fatalf("recomputed %d rows; the moved row alone needs 2", n)
				}
				// p0's existing rows have v = 0, so their outputs do not
				// change: the output is the delete, the insert and p1's
				// updates only.
				var ins, del, upd int
				for _, ch := range got {
					for i, op := range ch.Ops {
						switch op {
						case types.OpInsert:
							ins++
							if ch.Rows[i][0].Int() != 0 {
								t.Fatalf("insert into partition %v", ch.Rows[i][0])
							}
						case types.OpDelete:
							del++
						case types.OpUpdateInsert:
							if ch.Rows[i][0].Int() == 1 {
								upd++
								continue
							}
							// p0: values are equal; only a numeric's
							// display scale may change (avg over 9,999
							// vs 10,000 rows), as in PostgreSQL.
							for j := range ch.Rows[i] {
								if types.Compare(ch.Rows[i-1][j], ch.Rows[i][j]) != 0 {
									t.Fatalf("update %v -> %v: p0's outputs do not change", ch.Rows[i-1], ch.Rows[i])
								}
							}
						}
					}
				}
				if ins != 1 || del != 1 {
					t.Fatalf("got %d inserts and %d deletes; want 1 and 1", ins, del)
				}
				wantUpd := 50 // p1 rows o = 51..100 change sum and avg
				if tc.frame.Mode == expr.FrameRows {
					wantUpd = 2 // o = 51, 52
				}
				if upd != wantUpd {
					t.Fatalf("got %d updates; want %d", upd, wantUpd)
				}
			})
		}
	}
}

func TestOverWindowInconsistency(t *testing.T) {
	for _, strict := range []bool{true, false} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			src := newSource("t", owTypes...)
			calls := []OverWindowCall{owCallSpec{name: "sum", args: []int{3}, frame: expr.DefaultFrame()}.build(t)}
			order := []ColumnOrder{{Col: 2}}
			st := h.table(OverWindowStateSchema("ow state", owTypes, []int{1}, order, []int{0}, calls))
			stats := &OverWindowStats{}
			ow, err := NewOverWindow(src, []int{1}, order, []int{0}, calls, st, OverWindowOptions{Strict: strict, Stats: stats})
			if err != nil {
				t.Fatal(err)
			}
			v := newView()
			src.push(chunk(types.OpInsert, owRowOf(1, 7, 10, 1), types.OpInsert, owRowOf(2, 7, 20, 2)))
			src.pushBarrier(h.barrier())
			drain(t, ctx, ow, v)
			bad := []*types.Chunk{
				chunk(types.OpDelete, owRowOf(3, 7, 30, 3)), // never inserted
				chunk(types.OpInsert, owRowOf(2, 7, 20, 5)), // duplicate key
			}
			for i, c := range bad {
				src.push(c)
				src.pushBarrier(h.barrier())
				if strict {
					_, err := ow.Next(ctx)
					if err == nil {
						t.Fatalf("case %d: no error", i)
					}
					var se *sqlerr.Error
					if !errors.As(err, &se) || se.Code != sqlerr.DataCorrupted {
						t.Fatalf("case %d: error %v is not a data-corrupted SQL error", i, err)
					}
					for _, want := range []string{"ow state", fmt.Sprintf("state table %d", st.ID()), "partition (7)"} {
						if !strings.Contains(err.Error(), want) {
							t.Fatalf("case %d: error %q does not name %q", i, err, want)
						}
					}
					// the row key: (p, o, pk)
					if !strings.Contains(err.Error(), "key (7, ") {
						t.Fatalf("case %d: error %q does not name the row key", i, err)
					}
					// the executor is dead after a strict failure: new one
					ow, err = NewOverWindow(src, []int{1}, order, []int{0}, calls, st, OverWindowOptions{Strict: strict, Stats: stats})
					if err != nil {
						t.Fatal(err)
					}
					for len(src.ch) > 0 {
						<-src.ch
					}
					continue
				}
				drain(t, ctx, ow, v)
			}
			if strict {
				return
			}
			if n := stats.Inconsistencies.Load(); n != 2 {
				t.Fatalf("%d inconsistencies counted; want 2", n)
			}
			// non-strict: the duplicate replaced the row; output is right
			want := []string{"(1, 7, 10, 1, f, 2, 1)", "(2, 7, 20, 5, f, 2, 6)"}
			if got := v.sorted(); !slices.Equal(got, want) {
				t.Fatal(diffRows(got, want))
			}
		})
	}
}

// TestOverWindowCacheBound: the full policy's cache stays within its row
// budget, and partitions that vanish leave no entry.
func TestOverWindowCacheBound(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	src := newSource("t", owTypes...)
	calls := []OverWindowCall{owCallSpec{name: "sum", args: []int{3}, frame: expr.DefaultFrame()}.build(t)}
	order := []ColumnOrder{{Col: 2}}
	st := h.table(OverWindowStateSchema("ow", owTypes, []int{1}, order, []int{0}, calls))
	ow, err := NewOverWindow(src, []int{1}, order, []int{0}, calls, st, OverWindowOptions{Strict: true, CacheRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	var rows []types.Row
	c := &types.Chunk{}
	for i := int64(0); i < 200; i++ {
		r := owRowOf(i, i%20, int(i), 1)
		rows = append(rows, r)
		c.Append(types.OpInsert, r)
	}
	src.push(c)
	src.pushBarrier(h.barrier())
	drain(t, ctx, ow, nil)
	if ow.cacheRows > 50 || len(ow.cache) > 5 {
		t.Fatalf("cache holds %d rows in %d partitions; want at most 50 rows", ow.cacheRows, len(ow.cache))
	}
	c = &types.Chunk{}
	for _, r := range rows {
		c.Append(types.OpDelete, r)
	}
	src.push(c)
	src.pushBarrier(h.barrier())
	drain(t, ctx, ow, nil)
	if ow.cacheRows != 0 || len(ow.cache) != 0 || ow.lru.Len() != 0 {
		t.Fatalf("cache holds %d rows in %d partitions after every row was deleted", ow.cacheRows, len(ow.cache))
	}
}

// TestOverWindowRecomputeBoundsByKind checks, per kind of call, how many
// rows a change recomputes in a 4,000-row partition (o = 2, 4, ..., 8000;
// v = 3), and how large a slice the kernel is given: a change at position
// 3,000 (insert o = 6001, delete o = 6002, or an order key update moving
// o = 202 there).
//
//   - row_number / rank / dense_rank: the rows from the change to the end
//     change, the rows before it must not be recomputed (nor handed to
//     the kernel).
//   - percent_rank / cume_dist / ntile: depend on the partition's size;
//     an insert or delete changes every row, an order key move (same
//     size) only the rows between its old and new positions.
//   - RANGE offset frames: only the rows whose key range holds the
//     changed key.
//   - lag with a constant offset: the neighbours.
func TestOverWindowRecomputeBoundsByKind(t *testing.T) {
	const n, at = 4_000, 3_000
	ts := []types.Type{types.Int32, types.Int32, types.Int32} // (p, o, v), pk o
	r := func(o int32) types.Row { return types.Row{types.DInt32(0), types.DInt32(o), types.DInt32(3)} }
	call := func(name string, args []int, frame expr.Frame) OverWindowCall {
		var at []types.Type
		for range args {
			at = append(at, types.Int32)
		}
		fn, err := expr.LookupWindowFunc(name, at)
		if err != nil {
			t.Fatal(err)
		}
		c := OverWindowCall{Func: fn, Args: args, Filter: NoColumn, Frame: frame}
		if name == "lag" || name == "lead" {
			c.ConstOffset, c.OffsetConst = 1, true
		}
		return c
	}
	rangeFrame := func(s, e expr.FrameBound) expr.Frame { return expr.Frame{Mode: expr.FrameRange, Start: s, End: e} }
	changes := []struct {
		name string
		c    *types.Chunk
		// rows from the first change to the end (after the change)
		tail   int64
		points int64 // change positions
		// rows whose position or partition size changes
		moved int64
	}{
		{"insert", chunk(types.OpInsert, r(2*at+1)), n - at + 1, 1, n + 1},
		{"delete", chunk(types.OpDelete, r(2*at+2)), n - at - 1, 1, n - 1},
		{"order-key-update", chunk(types.OpUpdateDelete, r(202), types.OpUpdateInsert, r(2*at+3)), n - 100, 2, at - 100 + 1},
	}
	cases := []struct {
		name string
		call OverWindowCall
		// max rows recomputed and max kernel slice, from the change's tail
		// (rows from the first change to the end), its change points and
		// the rows it moves
		max func(tail, points, moved int64) int64
	}{
		{"row_number", call("row_number", nil, expr.DefaultFrame()), func(tail, _, _ int64) int64 { return tail + 2 }},
		{"rank", call("rank", nil, expr.DefaultFrame()), func(tail, _, _ int64) int64 { return tail + 2 }},
		{"dense_rank", call("dense_rank", nil, expr.DefaultFrame()), func(tail, _, _ int64) int64 { return tail + 2 }},
		{"percent_rank", call("percent_rank", nil, expr.DefaultFrame()), func(_, _, moved int64) int64 { return moved + 2 }},
		{"cume_dist", call("cume_dist", nil, expr.DefaultFrame()), func(_, _, moved int64) int64 { return moved + 2 }},
		{"ntile", call("ntile", []int{2}, expr.DefaultFrame()), func(_, _, moved int64) int64 { return moved + 2 }},
		// keys 2 apart: a key range of 20 holds 11 rows
		{"sum-range-10-preceding-10-following", call("sum", []int{2}, rangeFrame(prec(10), foll(10))), func(_, p, _ int64) int64 { return 12 * p }},
		{"max-range-4-following-20-following", call("max", []int{2}, rangeFrame(foll(4), foll(20))), func(_, p, _ int64) int64 { return 12 * p }},
		{"lag", call("lag", []int{2}, expr.DefaultFrame()), func(_, p, _ int64) int64 { return 6 * p }},
	}
	for _, tc := range cases {
		for _, ch := range changes {
			t.Run(tc.name+"/"+ch.name, func(t *testing.T) {
				h := newHarness(t)
				ctx := context.Background()
				src := newSource("t", ts...)
				calls := []OverWindowCall{tc.call}
				order := []ColumnOrder{{Col: 1}}
				st := h.table(OverWindowStateSchema("ow", ts, []int{0}, order, []int{1}, calls))
				stats := &OverWindowStats{}
				var slice int
				var recording bool
				hook := func(point string, rows int) {
					if point == "compute" && recording {
						slice = max(slice, rows)
					}
				}
				ow, err := NewOverWindow(src, []int{0}, order, []int{1}, calls, st, OverWindowOptions{Strict: true, Stats: stats, TestHook: hook})
				if err != nil {
					t.Fatal(err)
				}
				c := &types.Chunk{}
				for o := int32(1); o <= n; o++ {
					c.Append(types.OpInsert, r(2*o))
				}
				src.push(c)
				src.pushBarrier(h.barrier())
				v := newView()
				drain(t, ctx, ow, v)
				before := stats.RowsRecomputed.Load()
				recording = true
				src.push(ch.c)
				src.pushBarrier(h.barrier())
				drain(t, ctx, ow, v)
				got := stats.RowsRecomputed.Load() - before
				bound := tc.max(ch.tail, ch.points, ch.moved)
				t.Logf("%d rows recomputed, kernel slice of %d rows (bound %d)", got, slice, bound)
				if got > bound {
					t.Fatalf("recomputed %d rows; want at most %d", got, bound)
				}
				// the slice adds the frames of the rows at its edges
				if int64(slice) > 2*bound {
					t.Fatalf("the kernel got a slice of %d rows; want at most %d", slice, 2*bound)
				}
				if got == 0 {
					t.Fatalf("nothing recomputed")
				}
			})
		}
	}
}

// TestOverWindowSortKeys checks the cancellable merge sort of a flush's
// keys against sort.Strings, across run and block boundaries, and that
// a cancelled context stops it.
func TestOverWindowSortKeys(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	for _, n := range []int{0, 1, 2, owSortRun - 1, owSortRun, owSortRun + 1, 1000, expr.BlockLen*3 + 5, 20_000} {
		var keys owKeys
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprintf("%x", rng.Int63n(int64(n)+1)) // duplicates too
			keys.Append(want[i])
		}
		sort.Strings(want)
		if err := sortKeys(context.Background(), &keys); err != nil {
			t.Fatal(err)
		}
		if keys.Len() != n {
			t.Fatalf("seed %d, n=%d: %d keys after sorting", seed, n, keys.Len())
		}
		for i, w := range want {
			if keys.At(i) != w {
				t.Fatalf("seed %d, n=%d: key %d is %q; want %q", seed, n, i, keys.At(i), w)
			}
		}
	}
	var keys owKeys
	for i := 0; i < 10_000; i++ {
		keys.Append(fmt.Sprint(rng.Int()))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sortKeys(ctx, &keys); !errors.Is(err, context.Canceled) {
		t.Fatalf("sortKeys with a cancelled context returned %v; want context.Canceled", err)
	}
}
