package exec

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// OverWindow maintains window functions (f(...) OVER (PARTITION BY p ORDER
// BY o frame)) incrementally. One executor serves one (PARTITION BY, ORDER
// BY) pair; the planner stacks several for several window specs.
//
// State: one table keyed by partition | order key | input stream key; the
// stored row is the input row, the NULLS FIRST flags of the order key (see
// sortKey) and the current output of every call. Storing the outputs lets
// the executor emit only rows whose outputs changed, without recomputing
// the old values.
//
// Changes are buffered per partition during an epoch and applied at the
// barrier (or when too many are buffered). For one partition:
//
//  1. Load the rows the changes need (the cache policy decides: the whole
//     partition, kept in an LRU cache across epochs; or a bounded range
//     around each change when every call's reach is bounded).
//
//  2. Apply the net effect of the buffered changes (I6: a delete of a row
//     the partition does not hold, or an insert of a key it holds, is an
//     error naming the state table, the partition and the row key).
//
//  3. Per call, find the positions whose outputs can change, from the
//     positions of the changes and the frame:
//
//     change at position c, frame ROWS BETWEEN 2 PRECEDING AND CURRENT ROW
//     rows whose frame holds c: c .. c+2      (plus one row of slack each
//     side, for the shift a deletion causes)
//     RANGE UNBOUNDED PRECEDING (the default): the peers of c .. the end
//     RANGE with offsets: the rows whose key range holds c's key (found
//     by key with binary searches, deleted rows' keys included)
//     row_number / rank / dense_rank: the peers of c .. the end
//     percent_rank / cume_dist / ntile: the whole partition when its size
//     changed, else the first change's peers .. the last change's peers
//     lag / lead with a constant offset k: c-k-1 .. c+k+1
//
//  4. Recompute those positions with expr.ComputeWindow over the smallest
//     slice of the partition that holds their frames (row_number, rank
//     and dense_rank start the slice at the change and add what precedes
//     it: its position, or the unchanged dense rank of the row before
//     it; rows before the change are never handed to the kernel), and
//     emit: deletes
//     for removed rows, inserts for added ones, update pairs for rows
//     whose input or outputs changed. Rows are keyed downstream by
//     partition | input key, so a row moving between partitions is a
//     delete in one and an insert in the other.
//
// An update touching no partition, order or argument column changes no
// window input: it only replaces the stored input and is emitted as an
// update of the output row.
//
// Without PARTITION BY, the whole input is one partition in one actor:
// every change recomputes its affected range there (with the default frame
// that is every row after it), and the full cache policy holds the whole
// input in memory.
//
// Cancellation (I5): every loop over rows checks ctx every ctxCheckEvery
// rows (the kernels in expr do the same), and nothing between two checks
// allocates in proportion to the partition: a segment's rows and every
// per-position array of a flush are expr.Blocks, grown a block at a time,
// and the kernel reads the rows through accessors (owWindowRows) and
// hands its results back one by one (expr.ComputeWindowEach). A single
// allocation of a million-element array first-touches megabytes, which on
// the VMs we measure on costs 60–200 ms that no check can interrupt.
type OverWindow struct {
	input     stream.Executor
	partition []int // deduplicated PARTITION BY columns
	order     []ColumnOrder
	sort      sortKey
	pk        []int
	calls     []overWindowCall
	table     *state.Table
	inTypes   []types.Type
	nIn       int
	nStored   int // input columns + NULLS FIRST flags
	schema    []types.Type
	opts      OverWindowOptions
	log       *slog.Logger
	ec        *expr.EvalContext

	pending   map[string]*owPending
	porder    []string
	nPending  int
	cache     map[string]*list.Element // full policy: partition -> *owCached
	lru       *list.List
	cacheRows int
	bounded   bool // every call's reach is bounded (recent policy can load ranges)
	hasRange  bool // some call has a RANGE offset frame (reachRange)
	reach     int  // bound on rows/peer groups to load each side of a change

	// Watermark cleanup (overwindow_watermark.go).
	wm keyWatermarks

	dels    output
	out     output
	q       queue
	buf     []byte
	scratch types.Row     // a stored row being written
	slab    []types.Datum // free space for output rows (outRow)
}

// OverWindowCall is one window function call over input columns.
type OverWindowCall struct {
	Func *expr.WindowFunc
	// Args are input columns holding the arguments (of Func.ArgTypes).
	Args []int
	// Filter is a boolean input column (FILTER (WHERE ...)), or NoColumn.
	Filter int
	// Frame has its offsets evaluated; for RANGE offsets of the type
	// expr.RangeOffsetType gives for the ORDER BY column.
	Frame expr.Frame
	// ConstOffset is the offset of lag/lead when it is the same for every
	// row (1 when omitted); OffsetConst reports whether it is. A varying
	// offset makes every change recompute the whole partition.
	ConstOffset int64
	OffsetConst bool
}

// OverWindowCachePolicy chooses what the executor loads and keeps of a
// partition.
type OverWindowCachePolicy uint8

const (
	// CacheFull loads whole partitions and keeps them in an LRU cache
	// bounded by OverWindowOptions.CacheRows.
	CacheFull OverWindowCachePolicy = iota
	// CacheRecent loads only a bounded range of rows around each change
	// (when every call's reach is bounded; otherwise the whole partition)
	// and keeps nothing between flushes: memory stays bounded by the
	// changes, at the price of reading state for every flush.
	CacheRecent
)

// ParseOverWindowCachePolicy parses the over_window_cache_policy setting
// ("full" or "recent").
func ParseOverWindowCachePolicy(s string) (OverWindowCachePolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "full":
		return CacheFull, nil
	case "recent":
		return CacheRecent, nil
	}
	return 0, fmt.Errorf("invalid over_window_cache_policy %q (want full or recent)", s)
}

func (p OverWindowCachePolicy) String() string {
	if p == CacheRecent {
		return "recent"
	}
	return "full"
}

// OverWindowStats counts the executor's work (read concurrently by tests
// and metrics).
type OverWindowStats struct {
	// RowsRecomputed counts positions whose outputs were recomputed (a row
	// recomputed for several calls in one flush counts once).
	RowsRecomputed atomic.Int64
	// RowsLoaded counts rows read from the state table.
	RowsLoaded atomic.Int64
	// RowsEmitted counts output changes (an update pair counts once).
	RowsEmitted atomic.Int64
	// Inconsistencies counts tolerated I6 violations (non-strict mode).
	Inconsistencies atomic.Int64
}

// OverWindowOptions configures NewOverWindow.
type OverWindowOptions struct {
	Cache OverWindowCachePolicy
	// CacheRows bounds the rows the full policy keeps cached (default
	// 1<<20); partitions are evicted least recently used first.
	CacheRows int
	// Strict fails the actor on input that contradicts state (I6);
	// otherwise the violation is logged and the input repaired (a
	// duplicate insert replaces, a delete of a missing row is ignored).
	Strict bool
	Log    *slog.Logger
	// Stats, when set, receives the executor's counters.
	Stats *OverWindowStats
	// Location is the session time zone for RANGE offsets over timestamptz.
	Location *time.Location
	// TestHook, when set, is called at named points: "load" every
	// ctxCheckEvery*64 rows loaded, "compute" before each kernel call
	// (with the rows of the slice), "commit" before the state table is
	// committed at a barrier.
	TestHook func(point string, rows int)
}

// maxPendingChanges bounds the changes buffered in an epoch before the
// executor applies them early (still exact, just less coalesced).
var maxPendingChanges = 1 << 16

type overWindowCall struct {
	OverWindowCall
	kind owReach
	// frame reach in rows (ROWS) or peer groups (RANGE without offset,
	// GROUPS): the frame of row j is [j+fs, j+fe]; unbounded ends are
	// flagged.
	fs, fe       int64
	unbS, unbE   bool
	groupsFrame  bool
	usesPeerEdge bool // frame edges or exclusion depend on peer groups
	sizeOnly     bool // percent_rank, cume_dist, ntile: reachAll only when the size changes
}

type owReach uint8

const (
	reachFrame   owReach = iota // aggregates, first/last/nth_value
	reachToEnd                  // row_number, rank, dense_rank
	reachAll                    // percent_rank, cume_dist, ntile, varying lag/lead
	reachLagLead                // lag/lead with a constant offset
	reachRange                  // aggregates and values over RANGE frames with an offset
)

type owRow struct {
	key  string        // state key
	okey string        // ORDER BY key encoding (equal: peers)
	in   types.Row     // input row
	out  []types.Datum // outputs, one per call
}

type owOp struct {
	insert bool
	row    types.Row
	key    string
}

type owPending struct {
	prefix types.Row // deduplicated partition values (PK prefix)
	// ops in arrival order: up to maxPendingChanges, in blocks so that
	// buffering never copies megabytes in one step (I5)
	ops expr.Blocks[owOp]
}

// owSegment is a contiguous run of a partition's rows in key order;
// atStart/atEnd: it reaches the partition's first/last row.
type owSegment struct {
	rows           owRows
	atStart, atEnd bool
}

// owRows holds a segment's rows in blocks: a partition of a million rows
// is never one slice, so loading or rebuilding it never allocates (and
// first touches) megabytes in one uncancellable step (I5; see
// expr.Blocks).
type owRows = expr.Blocks[*owRow]

type owCached struct {
	pkey string
	seg  *owSegment
}

// OverWindowStateSchema returns the state table schema of an OverWindow.
func OverWindowStateSchema(name string, inTypes []types.Type, partition []int, order []ColumnOrder, pk []int, calls []OverWindowCall) state.Schema {
	s := TopNStateSchema(name, inTypes, dedup(partition), order, pk)
	for _, c := range calls {
		if c.Func != nil {
			s.Types = append(s.Types, c.Func.ResultType)
		}
	}
	return s
}

func dedup(cols []int) []int {
	var out []int
	for _, c := range cols {
		dup := false
		for _, o := range out {
			if o == c {
				dup = true
			}
		}
		if !dup {
			out = append(out, c)
		}
	}
	return out
}

// NewOverWindow returns the executor computing calls over windows
// PARTITION BY partition ORDER BY order of input, whose stream key is pk.
// Output rows are the input row followed by one column per call. table
// comes from OverWindowStateSchema.
func NewOverWindow(input stream.Executor, partition []int, order []ColumnOrder, pk []int, calls []OverWindowCall, table *state.Table, opts OverWindowOptions) (*OverWindow, error) {
	ts := input.Schema()
	if err := checkCols("OverWindow partition", partition, len(ts)); err != nil {
		return nil, err
	}
	if err := checkCols("OverWindow pk", pk, len(ts)); err != nil {
		return nil, err
	}
	if len(pk) == 0 {
		return nil, fmt.Errorf("OverWindow: the input has no stream key")
	}
	for _, o := range order {
		if err := checkCols("OverWindow order", []int{o.Col}, len(ts)); err != nil {
			return nil, err
		}
	}
	sk := sortKey{orders: order}
	w := &OverWindow{input: input, partition: dedup(partition), order: order, sort: sk, pk: pk, table: table,
		inTypes: ts, nIn: len(ts), nStored: len(ts) + sk.width() - len(order), opts: opts,
		pending: map[string]*owPending{}, cache: map[string]*list.Element{}, lru: list.New(), bounded: true}
	if w.opts.CacheRows <= 0 {
		w.opts.CacheRows = 1 << 20
	}
	w.log = opts.Log
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.opts.Stats == nil {
		w.opts.Stats = &OverWindowStats{}
	}
	w.schema = append([]types.Type(nil), ts...)
	var orderTypes []types.Type
	for _, o := range order {
		orderTypes = append(orderTypes, ts[o.Col])
	}
	for i, c := range calls {
		if c.Func == nil {
			return nil, fmt.Errorf("OverWindow: call %d has no resolved window function", i)
		}
		if err := checkCols("window function arguments", c.Args, len(ts)); err != nil {
			return nil, err
		}
		if len(c.Args) != len(c.Func.ArgTypes) {
			return nil, fmt.Errorf("OverWindow: %s takes %d arguments, got %d columns", c.Func.Name, len(c.Func.ArgTypes), len(c.Args))
		}
		if c.Filter != NoColumn {
			if c.Filter < 0 || c.Filter >= len(ts) || ts[c.Filter].Kind != types.KindBool {
				return nil, fmt.Errorf("OverWindow: FILTER column %d of %s is not a boolean input column", c.Filter, c.Func.Name)
			}
		}
		if c.Func.UsesFrame() {
			if err := expr.ValidateFrame(c.Frame, orderTypes); err != nil {
				return nil, err
			}
		} else {
			c.Frame = expr.DefaultFrame() // not read by ranking functions and lag/lead
		}
		rt, err := classifyWindowCall(c, len(order))
		if err != nil {
			return nil, err
		}
		w.calls = append(w.calls, rt)
		w.schema = append(w.schema, c.Func.ResultType)
		switch rt.kind {
		case reachAll, reachToEnd, reachRange:
			w.bounded = false
			w.hasRange = w.hasRange || rt.kind == reachRange
		case reachLagLead:
			w.reach = max(w.reach, int(2*abs64(rt.ConstOffset)+2))
		case reachFrame:
			if rt.unbS || rt.unbE {
				w.bounded = false
			} else {
				// the affected rows' frames reach at most this far from a
				// change (rows, or peer groups)
				w.reach = max(w.reach, int(2*max(abs64(rt.fs), abs64(rt.fe))+2))
			}
		}
	}
	if want := w.nStored + len(calls); len(table.Schema().Types) != want {
		return nil, fmt.Errorf("OverWindow: state table %d has %d columns; want %d (see OverWindowStateSchema)", table.ID(), len(table.Schema().Types), want)
	}
	w.ec = &expr.EvalContext{Location: opts.Location}
	if w.ec.Location == nil {
		w.ec.Location = time.UTC
	}
	return w, nil
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// frameOffset returns a ROWS/GROUPS bound as a signed offset from the
// current row (preceding negative).
func frameOffset(b expr.FrameBound) (int64, bool, error) {
	switch b.Kind {
	case expr.UnboundedPreceding, expr.UnboundedFollowing:
		return 0, true, nil
	case expr.CurrentRow:
		return 0, false, nil
	}
	if b.Offset.IsNull() {
		return 0, false, fmt.Errorf("frame offset must not be null")
	}
	v := b.Offset.Int()
	if v < 0 {
		return 0, false, fmt.Errorf("frame offset must not be negative")
	}
	if v > 1<<40 {
		v = 1 << 40 // beyond any partition: keep arithmetic from overflowing
	}
	if b.Kind == expr.OffsetPreceding {
		v = -v
	}
	return v, false, nil
}

func classifyWindowCall(c OverWindowCall, nOrder int) (overWindowCall, error) {
	rt := overWindowCall{OverWindowCall: c}
	switch c.Func.Name {
	case "row_number", "rank", "dense_rank":
		rt.kind = reachToEnd
		return rt, nil
	case "percent_rank", "cume_dist", "ntile":
		rt.kind, rt.sizeOnly = reachAll, true
		return rt, nil
	case "lag", "lead":
		rt.kind = reachAll
		if c.OffsetConst {
			rt.kind = reachLagLead
		}
		return rt, nil
	}
	rt.kind = reachFrame
	f := c.Frame
	hasOffset := f.Start.Kind == expr.OffsetPreceding || f.Start.Kind == expr.OffsetFollowing ||
		f.End.Kind == expr.OffsetPreceding || f.End.Kind == expr.OffsetFollowing
	if f.Mode == expr.FrameRange && hasOffset {
		// The reach of a RANGE offset depends on the key values: the rows
		// it affects are found by key (affectedRange).
		rt.kind = reachRange
		return rt, nil
	}
	var err error
	if rt.fs, rt.unbS, err = frameOffset(f.Start); err != nil {
		return rt, err
	}
	if rt.fe, rt.unbE, err = frameOffset(f.End); err != nil {
		return rt, err
	}
	if f.Start.Kind == expr.UnboundedFollowing || f.End.Kind == expr.UnboundedPreceding {
		return rt, fmt.Errorf("invalid frame")
	}
	rt.groupsFrame = f.Mode != expr.FrameRows
	rt.usesPeerEdge = rt.groupsFrame || f.Exclude == expr.ExcludeGroup || f.Exclude == expr.ExcludeTies
	return rt, nil
}

func (w *OverWindow) Schema() []types.Type { return w.schema }

func (w *OverWindow) Identity() string {
	names := make([]string, len(w.calls))
	for i, c := range w.calls {
		names[i] = fmt.Sprintf("%s(%s)", c.Func.Name, colList(c.Args))
	}
	ord := make([]string, len(w.order))
	for i, o := range w.order {
		ord[i] = fmt.Sprintf("$%d", o.Col)
		if o.Desc {
			ord[i] += " DESC"
		}
	}
	return fmt.Sprintf("OverWindow(partition [%s], order [%s], %s; state table %d)", colList(w.partition), strings.Join(ord, ", "), strings.Join(names, ", "), w.table.ID())
}

// Stats returns the executor's counters.
func (w *OverWindow) Stats() *OverWindowStats { return w.opts.Stats }

func (w *OverWindow) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := w.q.pop(); ok {
			return msg, nil
		}
		msg, err := w.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if m := msg.Watermark; m != nil {
			w.wm.observe(w.partition, m)
			continue
		}
		if b := msg.Barrier; b != nil {
			if err := w.flush(ctx); err != nil {
				return stream.Message{}, err
			}
			if err := w.cleanup(ctx); err != nil {
				return stream.Message{}, err
			}
			if err := ctx.Err(); err != nil {
				// aborted: skip handing this epoch's writes to storage
				return stream.Message{}, err
			}
			if w.opts.TestHook != nil {
				w.opts.TestHook("commit", 0)
			}
			w.processHook(ctx, "commit", 0) // testhooks.go
			if err := commitAll(ctx, w.Identity(), b.Curr, w.table); err != nil {
				return stream.Message{}, err
			}
			w.wm.emit(&w.q, w.partitionCol)
			w.q.push(msg)
			continue
		}
		if err := w.buffer(ctx, w.inputHook(msg.Chunk)); err != nil {
			return stream.Message{}, err
		}
		if w.nPending >= maxPendingChanges {
			if err := w.flush(ctx); err != nil {
				return stream.Message{}, err
			}
		}
	}
}

// stored extends an input row with its NULLS FIRST flags.
func (w *OverWindow) stored(row types.Row) types.Row {
	return w.appendStored(make(types.Row, 0, w.nStored+len(w.calls)), row)
}

// appendStored appends row's stored form (input and NULLS FIRST flags) to
// dst.
func (w *OverWindow) appendStored(dst, row types.Row) types.Row {
	out := append(dst, row[:w.nIn]...)
	for _, o := range w.order {
		if o.NullsFirst {
			out = append(out, types.DBool(row[o.Col].IsNull()))
		}
	}
	return out
}

func (w *OverWindow) orderKey(row types.Row) string {
	w.buf = w.buf[:0]
	for _, o := range w.order {
		w.buf = types.AppendKey(w.buf, row[o.Col], w.inTypes[o.Col], false, false)
	}
	return string(w.buf)
}

// buffer records a chunk's changes per partition.
func (w *OverWindow) buffer(ctx context.Context, c *types.Chunk) error {
	var tk ticker
	for i, row := range c.Rows {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		if len(row) < w.nIn {
			return fmt.Errorf("%s: input row has %d columns; want %d", w.Identity(), len(row), w.nIn)
		}
		w.buf = appendKeyCols(w.buf[:0], row, w.partition, w.inTypes)
		p := w.pending[string(w.buf)]
		if p == nil {
			ks := string(w.buf)
			p = &owPending{prefix: project(row, w.partition)}
			w.pending[ks] = p
			w.porder = append(w.porder, ks)
		}
		w.scratch = w.appendStored(w.scratch[:0], row)
		w.buf = w.table.EncodeKey(w.buf[:0], w.scratch)
		key := string(w.buf)
		p.ops.Append(owOp{insert: c.Ops[i].IsInsert(), row: row[:w.nIn:w.nIn], key: key})
		w.nPending++
	}
	return nil
}

// flush applies every buffered change. Deletes are emitted before inserts
// and updates, so that a downstream keyed by the input key never sees a
// key twice.
func (w *OverWindow) flush(ctx context.Context) error {
	if len(w.porder) > 0 {
		stream.ReportState(ctx, &stream.StateRecomputing) // rw_actors
	}
	for _, pk := range w.porder {
		if err := w.flushPartition(ctx, pk, w.pending[pk]); err != nil {
			return err
		}
	}
	clear(w.pending)
	w.porder = w.porder[:0]
	w.nPending = 0
	w.q.pushChunks(&w.dels)
	w.q.pushChunks(&w.out)
	w.evict()
	return nil
}

// owKeys holds the distinct state keys a flush changes, in blocks.
type owKeys = expr.Blocks[string]

// sortKeys sorts keys, checking ctx as it goes: sort.Strings over the
// 65,536 keys a flush can hold takes 40–110 ms on a loaded machine, all
// of it uncancellable (I5). Bottom-up merge sort: runs of owSortRun keys
// by insertion sort, then merge passes into fresh blocks.
func sortKeys(ctx context.Context, keys *owKeys) error {
	n := keys.Len()
	var tk ticker
	for lo := 0; lo < n; lo += owSortRun {
		hi := min(lo+owSortRun, n)
		for i := lo + 1; i < hi; i++ {
			if err := tk.tick(ctx); err != nil {
				return err
			}
			for j := i; j > lo && keys.At(j) < keys.At(j-1); j-- {
				a, b := keys.Ptr(j), keys.Ptr(j-1)
				*a, *b = *b, *a
			}
		}
	}
	for width := owSortRun; width < n; width *= 2 {
		var next owKeys
		for lo := 0; lo < n; lo += 2 * width {
			mid, hi := min(lo+width, n), min(lo+2*width, n)
			i, j := lo, mid
			for i < mid || j < hi {
				if err := tk.tick(ctx); err != nil {
					return err
				}
				if j == hi || (i < mid && keys.At(i) <= keys.At(j)) {
					next.Append(keys.At(i))
					i++
				} else {
					next.Append(keys.At(j))
					j++
				}
			}
		}
		*keys = next
	}
	return nil
}

// owSortRun is the run length sortKeys starts from: insertion sort is
// fastest on short runs.
const owSortRun = 32

// effect is the net change of one key in a flush.
type owEffect struct {
	key    string
	old    *owRow    // the stored row before; nil if absent
	newIn  types.Row // the input row after; nil if absent
	seg    int       // index of the segment holding key's position
	oldPos int       // position of old in its segment, or of the key's insertion point
}

// flushPartition applies a partition's buffered changes. Up to
// maxPendingChanges of them: every loop over them checks ctx, and the
// maps and arrays sized by them grow a little at a time (no size hints),
// so that a big batch of changes has no uncancellable step either (I5).
func (w *OverWindow) flushPartition(ctx context.Context, pkey string, p *owPending) error {
	var tk ticker
	var keys owKeys
	seen := map[string]bool{}
	for i := 0; i < p.ops.Len(); i++ {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		op := p.ops.Ptr(i)
		if !seen[op.key] {
			seen[op.key] = true
			keys.Append(op.key)
		}
	}
	if err := sortKeys(ctx, &keys); err != nil {
		return err
	}
	segs, err := w.load(ctx, pkey, p, &keys)
	if err != nil {
		return err
	}
	// Locate every key in its segment.
	effects := map[string]*owEffect{}
	for ki := 0; ki < keys.Len(); ki++ {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		k := keys.At(ki)
		e := &owEffect{key: k, seg: -1}
		for si, s := range segs {
			sn := s.rows.Len()
			pos := sort.Search(sn, func(i int) bool { return s.rows.At(i).key >= k })
			inside := (pos < sn || s.atEnd) && (pos > 0 || s.atStart || (sn > 0 && s.rows.At(0).key == k))
			if pos < sn && s.rows.At(pos).key == k {
				e.old, inside = s.rows.At(pos), true
			}
			if inside {
				e.seg, e.oldPos = si, pos
				break
			}
		}
		if e.seg < 0 {
			return fmt.Errorf("%s: internal error: key of partition %s not covered by the loaded rows", w.Identity(), p.prefix)
		}
		effects[k] = e
	}
	// Net effect of the ops, in arrival order (I6 checks).
	present := map[string]types.Row{}
	for ki := 0; ki < keys.Len(); ki++ {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		k := keys.At(ki)
		if e := effects[k]; e.old != nil {
			present[k] = e.old.in
		}
	}
	for i := 0; i < p.ops.Len(); i++ {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		op := p.ops.Ptr(i)
		_, ok := present[op.key]
		if op.insert {
			if ok {
				if err := w.violation(ctx, p.prefix, op.row, "insert of a row key the partition already holds"); err != nil {
					return err
				}
				// non-strict: the new row replaces the old one
			}
			present[op.key] = op.row
			continue
		}
		if !ok {
			if err := w.violation(ctx, p.prefix, op.row, "delete of a row the partition does not hold"); err != nil {
				return err
			}
			continue
		}
		delete(present, op.key)
	}
	bySeg := make([][]*owEffect, len(segs))
	for ki := 0; ki < keys.Len(); ki++ {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		e := effects[keys.At(ki)]
		k := e.key
		e.newIn = present[k]
		if e.old == nil && e.newIn == nil {
			continue
		}
		bySeg[e.seg] = append(bySeg[e.seg], e)
	}
	for si, s := range segs {
		if len(bySeg[si]) == 0 {
			continue
		}
		ns, err := w.applySegment(ctx, p, s, bySeg[si])
		if err != nil {
			return err
		}
		segs[si] = ns
	}
	if w.opts.Cache == CacheFull && len(segs) == 1 && segs[0].atStart && segs[0].atEnd {
		if segs[0].rows.Len() == 0 {
			w.cacheDrop(pkey) // a vanished partition takes no cache entry
		} else {
			w.cachePut(pkey, segs[0])
		}
	}
	return nil
}

func (w *OverWindow) violation(ctx context.Context, partition, row types.Row, what string) error {
	key := project(w.stored(row), w.table.Schema().PK)
	err := inconsistent(w.Identity(), w.table, key, "partition %s: %s", partition.String(), what)
	if w.opts.Strict {
		return err
	}
	w.opts.Stats.Inconsistencies.Add(1)
	recordJobError(ctx, "", w.log, true, w.Identity(), err) // counted per view, rate-limited log
	return nil
}

// applySegment merges the effects (sorted by key) into the segment,
// recomputes what they affect, emits the changes and writes the state.
func (w *OverWindow) applySegment(ctx context.Context, p *owPending, s *owSegment, effs []*owEffect) (*owSegment, error) {
	var tk ticker
	sn := s.rows.Len()
	ns := &owSegment{atStart: s.atStart, atEnd: s.atEnd}
	rows := &ns.rows
	type change struct {
		pos int
		old *owRow // nil: inserted
	}
	// changed: positions of inserted/replaced rows, ascending; in blocks,
	// as okeys (up to maxPendingChanges of them: I5)
	var changed expr.Blocks[change]
	var marks []int // positions whose window inputs changed (gaps: both neighbours)
	// okeys are the ORDER BY values of the changed rows, deleted ones
	// included (RANGE offset frames find their affected rows by key).
	var okeys expr.Blocks[types.Datum]
	okeyOf := func(in types.Row) {
		if w.hasRange {
			okeys.Append(in[w.order[0].Col])
		}
	}
	ei := 0
	for i := 0; i <= sn; i++ {
		// effects whose key sorts before s.rows[i]
		for ei < len(effs) && (i == sn || effs[ei].key <= s.rows.At(i).key) {
			if err := tk.tick(ctx); err != nil {
				return nil, err
			}
			e := effs[ei]
			ei++
			if e.old != nil {
				// e.old is s.rows[i]
				if e.newIn == nil {
					w.dels.emit(types.OpDelete, w.outRow(e.old.in, e.old.out))
					w.opts.Stats.RowsEmitted.Add(1)
					w.table.DeleteKey(e.key)
					marks = append(marks, rows.Len()-1, rows.Len())
					okeyOf(e.old.in)
				} else {
					nr := &owRow{key: e.key, okey: w.orderKey(e.newIn), in: e.newIn, out: e.old.out}
					changed.Append(change{pos: rows.Len(), old: e.old})
					if w.windowInputsDiffer(e.old.in, e.newIn) {
						marks = append(marks, rows.Len())
						okeyOf(e.newIn)
					}
					rows.Append(nr)
				}
				i++ // s.rows[i] consumed
				continue
			}
			nr := &owRow{key: e.key, okey: w.orderKey(e.newIn), in: e.newIn}
			changed.Append(change{pos: rows.Len()})
			marks = append(marks, rows.Len())
			okeyOf(e.newIn)
			rows.Append(nr)
		}
		if i < sn {
			if err := tk.tick(ctx); err != nil {
				return nil, err
			}
			rows.Append(s.rows.At(i))
		}
	}
	n := rows.Len()
	// Normalize marks to valid positions.
	cm := marks[:0]
	for _, m := range marks {
		if m >= 0 && m < n {
			cm = append(cm, m)
		}
	}
	// marks were appended in nondecreasing order (positions only grow)
	marks = compactInts(cm)
	if n == 0 {
		return ns, nil
	}
	pg := &owPeers{rows: rows}
	for _, c := range w.calls {
		if c.kind == reachFrame && c.groupsFrame {
			if err := pg.build(ctx); err != nil {
				return nil, err
			}
			break
		}
	}
	// Per call: the intervals to recompute.
	perCall := make([][]owInterval, len(w.calls))
	var union, recomputed []owInterval // sorted and disjoint
	for k := 0; k < changed.Len(); k++ {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		c := changed.At(k)
		union = append(union, owInterval{c.pos, c.pos + 1})
	}
	for ci := range w.calls {
		iv, err := w.affected(ns, pg, &w.calls[ci], marks, &okeys, n == sn)
		if err != nil {
			return nil, err
		}
		perCall[ci] = iv
		if union, err = unionIntervals(ctx, union, iv); err != nil {
			return nil, err
		}
		if recomputed, err = unionIntervals(ctx, recomputed, iv); err != nil {
			return nil, err
		}
	}
	// New outputs of every position in union, starting from the stored
	// ones: newOut holds them for the intervals one after another, those
	// of union[ui] from newOut position ubase[ui] on.
	var newOut expr.Blocks[[]types.Datum]
	var ubase expr.Blocks[int]
	nc := len(w.calls)
	var slab []types.Datum
	for _, u := range union {
		ubase.Append(newOut.Len())
		for j := u.lo; j < u.hi; j++ {
			if err := tk.tick(ctx); err != nil {
				return nil, err
			}
			// the new outputs become the cached row's: slabs of
			// owSlabRows rows, as outRow
			if len(slab) < nc {
				slab = make([]types.Datum, nc*min(owSlabRows, u.hi-j))
			}
			o := slab[:nc:nc]
			slab = slab[nc:]
			copy(o, rows.At(j).out)
			newOut.Append(o)
		}
	}
	for ci := range w.calls {
		for _, iv := range perCall[ci] {
			// the kernel hands over results in position order
			ui := sort.Search(len(union), func(k int) bool { return union[k].hi > iv.lo })
			err := w.compute(ctx, ns, pg, ci, iv, func(j int, v types.Datum) {
				for union[ui].hi <= j {
					ui++
				}
				newOut.At(ubase.At(ui) + j - union[ui].lo)[ci] = v
			})
			if err != nil {
				return nil, err
			}
		}
	}
	// Count distinct recomputed positions.
	var distinct int64
	for _, iv := range recomputed {
		distinct += int64(iv.hi - iv.lo)
	}
	w.opts.Stats.RowsRecomputed.Add(distinct)
	// Emit and write.
	ci := 0
	for ui, u := range union {
		for j := u.lo; j < u.hi; j++ {
			if err := tk.tick(ctx); err != nil {
				return nil, err
			}
			r := rows.At(j)
			no := newOut.At(ubase.At(ui) + j - u.lo)
			var old *owRow
			isChanged := false
			for ci < changed.Len() && changed.At(ci).pos < j {
				ci++
			}
			if ci < changed.Len() && changed.At(ci).pos == j {
				isChanged, old = true, changed.At(ci).old
			}
			switch {
			case isChanged && old == nil:
				r.out = no
				w.out.emit(types.OpInsert, w.outRow(r.in, no))
			default:
				prevIn, prevOut := r.in, r.out
				if old != nil {
					prevIn, prevOut = old.in, old.out
				}
				if owSame(prevIn, r.in) && owSame(prevOut, no) {
					continue
				}
				r.out = no
				w.out.update(w.outRow(prevIn, prevOut), w.outRow(r.in, no))
			}
			w.opts.Stats.RowsEmitted.Add(1)
			// InsertKey encodes the row at once: one scratch row serves
			// every write.
			w.scratch = append(w.appendStored(w.scratch[:0], r.in), no...)
			w.table.InsertKey(r.key, w.scratch)
		}
	}
	return ns, nil
}

// windowInputsDiffer reports whether a replaced row changes anything a
// window call reads (order key and pk are equal: same state key).
func (w *OverWindow) windowInputsDiffer(a, b types.Row) bool {
	for _, c := range w.calls {
		for _, col := range c.Args {
			if !sameRow(a[col:col+1], b[col:col+1], w.inTypes[col:col+1]) {
				return true
			}
		}
		if c.Filter != NoColumn && !sameRow(a[c.Filter:c.Filter+1], b[c.Filter:c.Filter+1], w.inTypes[c.Filter:c.Filter+1]) {
			return true
		}
	}
	for _, o := range w.order {
		// equal keys, but a RANGE offset or lag over the key may see the
		// representation
		if !sameRow(a[o.Col:o.Col+1], b[o.Col:o.Col+1], w.inTypes[o.Col:o.Col+1]) {
			return true
		}
	}
	return false
}

// outRow builds an output row (input ++ outputs). Rows are carved from
// a shared slab: one allocation serves owSlabRows rows, each capped so
// that appending to one cannot reach the next.
func (w *OverWindow) outRow(in types.Row, out []types.Datum) types.Row {
	n := len(in) + len(out)
	if len(w.slab) < n {
		w.slab = make([]types.Datum, n*owSlabRows)
	}
	r := w.slab[:0:n]
	w.slab = w.slab[n:]
	r = append(r, in...)
	return append(r, out...)
}

// owSlabRows is how many output rows (or rows of outputs) one allocation
// holds: large enough to amortise the allocation, small enough that a
// slab kept alive by one row wastes little.
const owSlabRows = 256

// owSame is sameRow without its per-value String: only a numeric's
// representation (scale) can differ between equal values.
func owSame(a, b types.Row) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Kind() != y.Kind() {
			return false
		}
		if x.IsNull() {
			continue
		}
		if types.Compare(x, y) != 0 {
			return false
		}
		if x.Kind() == types.KindNumeric && x.String() != y.String() {
			return false
		}
	}
	return true
}

func compactInts(s []int) []int {
	if len(s) == 0 {
		return s
	}
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

type owInterval struct{ lo, hi int }

// unionIntervals merges two sorted lists of intervals into one sorted
// list of disjoint intervals (touching ones joined), checking ctx: a
// flush's changes can make tens of thousands of them.
func unionIntervals(ctx context.Context, a, b []owInterval) ([]owInterval, error) {
	var tk ticker
	out := make([]owInterval, 0, len(a)+len(b))
	for i, j := 0, 0; i < len(a) || j < len(b); {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		var x owInterval
		if j == len(b) || (i < len(a) && a[i].lo <= b[j].lo) {
			x, i = a[i], i+1
		} else {
			x, j = b[j], j+1
		}
		if x.lo >= x.hi {
			continue
		}
		if k := len(out) - 1; k >= 0 && x.lo <= out[k].hi {
			out[k].hi = max(out[k].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out, nil
}

func mergeIntervals(iv []owInterval) []owInterval {
	sort.Slice(iv, func(i, j int) bool { return iv[i].lo < iv[j].lo })
	var out []owInterval
	for _, x := range iv {
		if x.lo >= x.hi {
			continue
		}
		if len(out) > 0 && x.lo <= out[len(out)-1].hi {
			if x.hi > out[len(out)-1].hi {
				out[len(out)-1].hi = x.hi
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

// owPeers answers peer-group questions over a segment, computing group
// numbers lazily (one pass) when a call needs them.
type owPeers struct {
	rows     *owRows
	built    bool
	group    expr.Blocks[int] // group number of each position
	groupPos expr.Blocks[int] // first position of each group, plus rows.Len()
}

func (p *owPeers) build(ctx context.Context) error {
	if p.built {
		return nil
	}
	n := p.rows.Len()
	var tk ticker
	g := -1
	for i := 0; i < n; i++ {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		if i == 0 || p.rows.At(i).okey != p.rows.At(i-1).okey {
			g++
			p.groupPos.Append(i)
		}
		p.group.Append(g)
	}
	p.groupPos.Append(n)
	p.built = true
	return nil
}

// groupStart returns the first position of group g (clamped).
func (p *owPeers) groupStart(g int64) int {
	ng := int64(p.groupPos.Len() - 1)
	if g < 0 {
		return 0
	}
	if g >= ng {
		return p.rows.Len()
	}
	return p.groupPos.At(int(g))
}

// groupEnd returns one past the last position of group g (clamped).
func (p *owPeers) groupEnd(g int64) int {
	ng := int64(p.groupPos.Len() - 1)
	if g < 0 {
		return 0
	}
	if g >= ng {
		return p.rows.Len()
	}
	return p.groupPos.At(int(g) + 1)
}

// peerStart / peerEnd find a position's peer group by scanning (no group
// numbers needed).
func (p *owPeers) peerStart(i int) int {
	for i > 0 && p.rows.At(i-1).okey == p.rows.At(i).okey {
		i--
	}
	return i
}

func (p *owPeers) peerEnd(i int) int {
	for i+1 < p.rows.Len() && p.rows.At(i+1).okey == p.rows.At(i).okey {
		i++
	}
	return i + 1
}

func clampInt(x int64, lo, hi int) int {
	if x < int64(lo) {
		return lo
	}
	if x > int64(hi) {
		return hi
	}
	return int(x)
}

// affected returns the positions of the segment whose outputs of call c
// can change, given the positions marks whose window inputs changed. For
// a frame call in group mode the peer groups are built (applySegment).
func (w *OverWindow) affected(s *owSegment, pg *owPeers, c *overWindowCall, marks []int, okeys *expr.Blocks[types.Datum], sameSize bool) ([]owInterval, error) {
	n := s.rows.Len()
	if len(marks) == 0 && okeys.Len() == 0 {
		return nil, nil
	}
	switch c.kind {
	case reachAll:
		if c.sizeOnly && sameSize && len(marks) > 0 {
			// percent_rank, cume_dist and ntile read the partition's size
			// and a row's position (or its peer group's): with the size
			// unchanged (rows moved, or as many inserted as deleted) the
			// rows before the first change and after the last keep both.
			return []owInterval{{pg.peerStart(marks[0]), pg.peerEnd(marks[len(marks)-1])}}, nil
		}
		return []owInterval{{0, n}}, nil
	case reachToEnd:
		if len(marks) == 0 {
			return nil, nil
		}
		return []owInterval{{pg.peerStart(marks[0]), n}}, nil
	case reachLagLead:
		k := abs64(c.ConstOffset)
		var out []owInterval
		for _, m := range marks {
			out = append(out, owInterval{clampInt(int64(m)-k-1, 0, n), clampInt(int64(m)+k+2, 0, n)})
		}
		return mergeIntervals(out), nil
	case reachRange:
		return w.affectedRange(s, c, marks, okeys)
	}
	var out []owInterval
	for _, m := range marks {
		var lo, hi int
		if c.groupsFrame {
			g := int64(pg.group.At(m))
			if c.unbE {
				lo = 0
			} else {
				lo = pg.groupStart(g - c.fe - 1)
			}
			if c.unbS {
				hi = n
			} else {
				hi = pg.groupEnd(g - c.fs + 1)
			}
		} else {
			if c.unbE {
				lo = 0
			} else {
				lo = clampInt(int64(m)-c.fe-1, 0, n)
			}
			if c.unbS {
				hi = n
			} else {
				hi = clampInt(int64(m)-c.fs+2, 0, n)
			}
			if c.usesPeerEdge {
				lo = min(lo, pg.peerStart(m))
				hi = max(hi, pg.peerEnd(m))
			}
		}
		lo, hi = min(lo, m), max(hi, m+1)
		out = append(out, owInterval{lo, hi})
		if hi == n && lo == 0 {
			break
		}
	}
	return mergeIntervals(out), nil
}

// rangeFrameEdge returns the start (first row) or end (one past the last
// row) of row j's RANGE offset frame, by key, as expr computes it.
func (w *OverWindow) rangeFrameEdge(s *owSegment, pg *owPeers, c *overWindowCall, j int, start bool) (int, error) {
	b := c.Frame.End
	if start {
		b = c.Frame.Start
	}
	switch {
	case b.Kind == expr.UnboundedPreceding:
		return 0, nil
	case b.Kind == expr.UnboundedFollowing:
		return s.rows.Len(), nil
	}
	x := s.rows.At(j).in[w.order[0].Col]
	if b.Kind == expr.CurrentRow || x.IsNull() {
		// a NULL key's frame is its peer group
		if start {
			return pg.peerStart(j), nil
		}
		return pg.peerEnd(j), nil
	}
	t, err := w.rangeMove(x, b.Offset, b.Kind == expr.OffsetFollowing)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", w.Identity(), c.Func.Name, err)
	}
	return w.rangeSearch(&s.rows, t, false, !start), nil
}

// rangeMove returns x moved by off toward the end of the sort order
// (towardEnd) or toward its start.
func (w *OverWindow) rangeMove(x, off types.Datum, towardEnd bool) (types.Datum, error) {
	return expr.RangeFrameTarget(w.ec, x, off, towardEnd != w.order[0].Desc)
}

// rangeNonNull returns the positions [lo, hi) of the rows whose (single)
// ORDER BY key is not NULL.
func (w *OverWindow) rangeNonNull(rows *owRows) (int, int) {
	o := w.order[0]
	n := rows.Len()
	if o.NullsFirst {
		return sort.Search(n, func(j int) bool { return !rows.At(j).in[o.Col].IsNull() }), n
	}
	return 0, sort.Search(n, func(j int) bool { return rows.At(j).in[o.Col].IsNull() })
}

// rangeSearch returns the first row with a non-NULL key at or after
// target in sort order (strict: after); raw: target is a key itself,
// not a RangeFrameTarget result.
func (w *OverWindow) rangeSearch(rows *owRows, target types.Datum, raw, strict bool) int {
	o := w.order[0]
	nlo, nhi := w.rangeNonNull(rows)
	return nlo + sort.Search(nhi-nlo, func(k int) bool {
		key := rows.At(nlo + k).in[o.Col]
		var cmp int
		if raw {
			cmp = types.Compare(key, target)
		} else {
			cmp = expr.CompareRangeFrameKey(key, target)
		}
		if o.Desc {
			cmp = -cmp
		}
		if strict {
			return cmp > 0
		}
		return cmp >= 0
	})
}

// affectedRange finds the rows whose RANGE offset frame holds one of the
// changed keys (x). In sort order a row's frame is the keys between
// start(key) and end(key), both monotone in the row's key, so the rows
// holding x are those whose key lies between x moved back by the end
// offset and x moved forward by the start offset:
//
//	RANGE BETWEEN 3 PRECEDING AND 2 FOLLOWING, x = 10 (ASC):
//	rows with keys 8 .. 13 (the frame of 8 is 5..10, of 13 is 10..16)
//
// A NULL key's frame is its peer group (the NULLs), widened by an
// unbounded side to the partition's edge; a changed NULL key or a frame
// with an unbounded side adds the NULL rows. The changed rows themselves
// (marks) are always recomputed.
func (w *OverWindow) affectedRange(s *owSegment, c *overWindowCall, marks []int, okeys *expr.Blocks[types.Datum]) ([]owInterval, error) {
	rows := &s.rows
	n := rows.Len()
	nlo, nhi := w.rangeNonNull(rows)
	f := c.Frame
	unbounded := f.Start.Kind == expr.UnboundedPreceding || f.End.Kind == expr.UnboundedFollowing
	var out []owInterval
	for _, m := range marks {
		out = append(out, owInterval{m, m + 1})
	}
	nullsAdded := false
	move, first := w.rangeMove, func(t types.Datum, raw, strict bool) int { return w.rangeSearch(rows, t, raw, strict) }
	for k := 0; k < okeys.Len(); k++ {
		x := okeys.At(k)
		if x.IsNull() || (unbounded && !nullsAdded) {
			if x.IsNull() && unbounded {
				return []owInterval{{0, n}}, nil
			}
			if nlo > 0 {
				out = append(out, owInterval{0, nlo})
			}
			if nhi < n {
				out = append(out, owInterval{nhi, n})
			}
			nullsAdded = true
			if x.IsNull() {
				continue
			}
		}
		// a: the first row whose frame end reaches x
		var a int
		switch f.End.Kind {
		case expr.UnboundedFollowing:
			a = nlo
		case expr.CurrentRow:
			a = first(x, true, false)
		default:
			t, err := move(x, f.End.Offset, f.End.Kind == expr.OffsetPreceding)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", w.Identity(), c.Func.Name, err)
			}
			a = first(t, false, false)
		}
		// b: one past the last row whose frame start is at or before x
		var b int
		switch f.Start.Kind {
		case expr.UnboundedPreceding:
			b = nhi
		case expr.CurrentRow:
			b = first(x, true, true)
		default:
			t, err := move(x, f.Start.Offset, f.Start.Kind == expr.OffsetPreceding)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", w.Identity(), c.Func.Name, err)
			}
			b = first(t, false, true)
		}
		if a < b {
			out = append(out, owInterval{a, b})
		}
	}
	return mergeIntervals(out), nil
}

// compute runs the kernel for positions iv of the segment over the
// smallest slice holding their frames.
func (w *OverWindow) compute(ctx context.Context, s *owSegment, pg *owPeers, ci int, iv owInterval, set func(j int, v types.Datum)) error {
	c := &w.calls[ci]
	n := s.rows.Len()
	var lo, hi int
	// base is added to every output of a ranking function computed over a
	// slice starting after the partition's start.
	var base int64
	switch c.kind {
	case reachAll, reachToEnd, reachRange:
		lo, hi = 0, n
		if !s.atStart || !s.atEnd {
			return fmt.Errorf("%s: internal error: %s needs the whole partition", w.Identity(), c.Func.Name)
		}
		if c.kind == reachRange {
			// frames are monotone: those of iv lie between the first
			// row's frame start and the last row's frame end
			var err error
			if lo, err = w.rangeFrameEdge(s, pg, c, iv.lo, true); err != nil {
				return err
			}
			if hi, err = w.rangeFrameEdge(s, pg, c, iv.hi-1, false); err != nil {
				return err
			}
			lo = pg.peerStart(min(lo, iv.lo))
			hi = pg.peerEnd(max(hi, iv.hi) - 1)
		}
		if c.kind == reachToEnd && iv.lo > 0 && iv.hi == n {
			// row_number / rank / dense_rank of the rows from a peer
			// group's start (affected) to the end: the rows before keep
			// their outputs, so the slice starts at iv.lo and the outputs
			// are shifted by what precedes it: its position (row_number,
			// rank) or the dense rank of the row before it (unchanged:
			// it lies before every change).
			switch c.Func.Name {
			case "row_number", "rank":
				lo, base = iv.lo, int64(iv.lo)
			case "dense_rank":
				if prev := s.rows.At(iv.lo - 1).out[ci]; !prev.IsNull() && prev.Kind() == types.KindInt64 {
					lo, base = iv.lo, prev.Int()
				}
			}
		}
	case reachLagLead:
		k := abs64(c.ConstOffset)
		lo, hi = clampInt(int64(iv.lo)-k, 0, n), clampInt(int64(iv.hi)+k, 0, n)
	default:
		if c.groupsFrame {
			if err := pg.build(ctx); err != nil {
				return err
			}
			if c.unbS {
				lo = 0
			} else {
				lo = pg.groupStart(int64(pg.group.At(iv.lo)) + min(c.fs, 0))
			}
			if c.unbE {
				hi = n
			} else {
				hi = pg.groupEnd(int64(pg.group.At(iv.hi-1)) + max(c.fe, 0))
			}
		} else {
			if c.unbS {
				lo = 0
			} else {
				lo = clampInt(int64(iv.lo)+min(c.fs, 0), 0, n)
			}
			if c.unbE {
				hi = n
			} else {
				hi = clampInt(int64(iv.hi)+max(c.fe, 0), 0, n)
			}
		}
		// Peer groups at the slice's edges must be whole.
		lo = pg.peerStart(min(lo, iv.lo))
		hi = pg.peerEnd(max(hi, iv.hi) - 1)
	}
	if w.opts.TestHook != nil {
		w.opts.TestHook("compute", hi-lo)
	}
	w.processHook(ctx, "compute", hi-lo) // testhooks.go
	in, err := w.windowInput(ctx, &s.rows, lo, hi, c)
	if err != nil {
		return err
	}
	ec := *w.ec
	ec.Ctx = ctx
	emit := func(i int, v types.Datum) { set(lo+i, v) }
	if base != 0 {
		emit = func(i int, v types.Datum) { set(lo+i, types.DInt64(v.Int()+base)) }
	}
	if err := expr.ComputeWindowEach(&ec, c.Func, c.Frame, in, iv.lo-lo, iv.hi-lo, emit); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A data error (an overflowing sum, ntile(0)) makes the function's
		// value NULL, as in Project (evalerr.go), for the rows whose own
		// computation fails: the range is computed again in halves down to
		// the failing rows, so the others get their value whatever else
		// was recomputed with them. The value emitted is stored with the
		// row, so its retraction stays consistent.
		var bisect func(from, to int, err error) error
		bisect = func(from, to int, err error) error {
			if err == nil {
				return nil
			}
			if !isDataError(err) || ctx.Err() != nil {
				return fmt.Errorf("%s: %s: %w", w.Identity(), c.Func.Name, err)
			}
			if to-from == 1 {
				set(lo+from, types.NullDatum)
				return exprError(ctx, w.Identity(), exprName(c.Func.Name+"()"), err)
			}
			mid := from + (to-from)/2
			if err := bisect(from, mid, expr.ComputeWindowEach(&ec, c.Func, c.Frame, in, from, mid, emit)); err != nil {
				return err
			}
			return bisect(mid, to, expr.ComputeWindowEach(&ec, c.Func, c.Frame, in, mid, to, emit))
		}
		return bisect(iv.lo-lo, iv.hi-lo, err)
	}
	return nil
}

// owWindowRows serves the rows [lo, lo+n) of a segment to the window
// kernel (expr.WindowRows) without copying them into partition-sized
// arrays: arguments in adjacent input columns are sliced from the row
// itself; others are gathered into argv.
type owWindowRows struct {
	rows     *owRows
	lo, n    int
	a0       int // first argument column when the arguments are adjacent, else -1
	nargs    int
	argv     expr.Blocks[[]types.Datum]
	filter   int
	orderCol int
}

func (r *owWindowRows) Len() int { return r.n }

func (r *owWindowRows) Args(i int) []types.Datum {
	if r.a0 >= 0 {
		return r.rows.At(r.lo + i).in[r.a0 : r.a0+r.nargs]
	}
	return r.argv.At(i)
}

func (r *owWindowRows) Included(i int) bool {
	if r.filter == NoColumn {
		return true
	}
	f := r.rows.At(r.lo + i).in[r.filter]
	return !f.IsNull() && f.Bool()
}

func (r *owWindowRows) OrderKey(i int) types.Datum {
	if r.orderCol < 0 {
		return types.NullDatum
	}
	return r.rows.At(r.lo + i).in[r.orderCol]
}

// windowInput describes the rows [lo, hi) of a segment to the kernel for
// call c.
func (w *OverWindow) windowInput(ctx context.Context, rows *owRows, lo, hi int, c *overWindowCall) (*expr.WindowInput, error) {
	wr := &owWindowRows{rows: rows, lo: lo, n: hi - lo, a0: 0, nargs: len(c.Args), filter: c.Filter, orderCol: -1}
	for k, col := range c.Args {
		if k == 0 {
			wr.a0 = col
		} else if col != c.Args[0]+k {
			wr.a0 = -1
		}
	}
	if wr.a0 < 0 {
		// gather the arguments, owSlabRows rows per allocation
		var tk ticker
		var slab []types.Datum
		for i := lo; i < hi; i++ {
			if err := tk.tick(ctx); err != nil {
				return nil, err
			}
			if len(slab) < wr.nargs {
				slab = make([]types.Datum, wr.nargs*owSlabRows)
			}
			a := slab[:wr.nargs:wr.nargs]
			slab = slab[wr.nargs:]
			r := rows.At(i)
			for k, col := range c.Args {
				a[k] = r.in[col]
			}
			wr.argv.Append(a)
		}
	}
	in := &expr.WindowInput{Rows: wr}
	if len(w.order) > 0 {
		in.Peers = func(i, j int) bool { return rows.At(lo+i).okey == rows.At(lo+j).okey }
		if len(w.order) == 1 {
			o := w.order[0]
			wr.orderCol = o.Col
			in.OrderType, in.Desc, in.NullsFirst = w.inTypes[o.Col], o.Desc, o.NullsFirst
		}
	}
	return in, nil
}

// rowFromStored turns a stored state row into a cached row.
func (w *OverWindow) rowFromStored(st types.Row) *owRow {
	in := st[:w.nIn:w.nIn]
	out := make([]types.Datum, len(w.calls))
	copy(out, st[w.nStored:])
	return &owRow{key: string(w.table.EncodeKey(nil, st)), okey: w.orderKey(in), in: in, out: out}
}

// load returns the segments of the partition that cover keys (sorted).
func (w *OverWindow) load(ctx context.Context, pkey string, p *owPending, keys *owKeys) ([]*owSegment, error) {
	if w.opts.Cache == CacheFull || !w.bounded {
		if w.opts.Cache == CacheFull {
			if el, ok := w.cache[pkey]; ok {
				w.lru.MoveToFront(el)
				return []*owSegment{el.Value.(*owCached).seg}, nil
			}
		}
		seg, err := w.loadAll(ctx, p.prefix)
		if err != nil {
			return nil, err
		}
		return []*owSegment{seg}, nil
	}
	return w.loadRanges(ctx, p, keys)
}

func (w *OverWindow) loadAll(ctx context.Context, prefix types.Row) (*owSegment, error) {
	it, err := w.table.Iter(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Identity(), err)
	}
	defer it.Close()
	seg := &owSegment{atStart: true, atEnd: true}
	var tk ticker
	for it.Next() {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		seg.rows.Append(w.rowFromStored(it.Row()))
		if w.opts.TestHook != nil && tk.n%(ctxCheckEvery*64) == 0 {
			w.opts.TestHook("load", tk.n)
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", w.Identity(), err)
	}
	w.opts.Stats.RowsLoaded.Add(int64(seg.rows.Len()))
	return seg, nil
}

// loadRanges loads, around each key, reach+1 peer groups before it and
// after it (whole groups), and merges overlapping ranges into segments.
func (w *OverWindow) loadRanges(ctx context.Context, p *owPending, keys *owKeys) ([]*owSegment, error) {
	var tk ticker
	rowOf := map[string]types.Row{}
	for i := 0; i < p.ops.Len(); i++ {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		op := p.ops.Ptr(i)
		if _, ok := rowOf[op.key]; !ok {
			rowOf[op.key] = op.row
		}
	}
	groups := w.reach + 1
	var segs []*owSegment
	for ki := 0; ki < keys.Len(); ki++ {
		k := keys.At(ki)
		if len(segs) > 0 {
			last := segs[len(segs)-1]
			// a key inside the previous range: it was loaded with margin
			// only if far enough from the range's end; reload otherwise.
			if n := last.rows.Len(); n > 0 && k < last.rows.At(n-1).key {
				pos := sort.Search(n, func(i int) bool { return last.rows.At(i).key >= k })
				if groupsBetween(&last.rows, pos, n) > groups || last.atEnd {
					continue
				}
			}
		}
		st := w.stored(rowOf[k])
		seg := &owSegment{}
		// backward
		rit, err := w.table.IterBefore(ctx, p.prefix, st)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Identity(), err)
		}
		var back []*owRow
		seen := 0
		var tk ticker
		for rit.Next() {
			if err := tk.tick(ctx); err != nil {
				rit.Close()
				return nil, err
			}
			r := w.rowFromStored(rit.Row())
			if len(back) == 0 || back[len(back)-1].okey != r.okey {
				seen++
				if seen > groups {
					break
				}
			}
			back = append(back, r)
		}
		err = rit.Err()
		rit.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Identity(), err)
		}
		seg.atStart = seen <= groups
		for i := len(back) - 1; i >= 0; i-- {
			seg.rows.Append(back[i])
		}
		// forward, from k inclusive
		fit, err := w.table.IterFrom(ctx, p.prefix, st)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Identity(), err)
		}
		seen = 0
		first := true
		var prevOkey string
		for fit.Next() {
			if err := tk.tick(ctx); err != nil {
				fit.Close()
				return nil, err
			}
			r := w.rowFromStored(fit.Row())
			if first || prevOkey != r.okey {
				seen++
				if seen > groups+1 {
					break
				}
			}
			first, prevOkey = false, r.okey
			seg.rows.Append(r)
		}
		err = fit.Err()
		fit.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Identity(), err)
		}
		seg.atEnd = seen <= groups+1
		w.opts.Stats.RowsLoaded.Add(int64(seg.rows.Len()))
		segs = append(segs, seg)
	}
	// merge overlapping or adjacent segments (sorted by first key already,
	// since keys are sorted and each segment contains its key)
	var out []*owSegment
	for _, s := range segs {
		if len(out) > 0 {
			last := out[len(out)-1]
			if overlaps(last, s) {
				last.rows = mergeRows(&last.rows, &s.rows)
				last.atStart = last.atStart || s.atStart
				last.atEnd = last.atEnd || s.atEnd
				continue
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// groupsBetween counts peer groups among rows[from:to].
func groupsBetween(rows *owRows, from, to int) int {
	g := 0
	for i := from; i < to; i++ {
		if i == from || rows.At(i).okey != rows.At(i-1).okey {
			g++
		}
	}
	return g
}

// overlaps: b's first row is at or before a's last row, or a reaches the
// partition end (then b is inside a), or b reaches the start.
func overlaps(a, b *owSegment) bool {
	if a.atEnd || b.atStart {
		return true
	}
	if a.rows.Len() == 0 || b.rows.Len() == 0 {
		return true
	}
	return b.rows.At(0).key <= a.rows.At(a.rows.Len()-1).key
}

func mergeRows(a, b *owRows) owRows {
	var out owRows
	na, nb := a.Len(), b.Len()
	i, j := 0, 0
	for i < na || j < nb {
		switch {
		case j == nb || (i < na && a.At(i).key < b.At(j).key):
			out.Append(a.At(i))
			i++
		case i == na || b.At(j).key < a.At(i).key:
			out.Append(b.At(j))
			j++
		default:
			out.Append(a.At(i))
			i++
			j++
		}
	}
	return out
}

func (w *OverWindow) cachePut(pkey string, seg *owSegment) {
	if el, ok := w.cache[pkey]; ok {
		c := el.Value.(*owCached)
		w.cacheRows += seg.rows.Len() - c.seg.rows.Len()
		c.seg = seg
		w.lru.MoveToFront(el)
		return
	}
	w.cache[pkey] = w.lru.PushFront(&owCached{pkey: pkey, seg: seg})
	w.cacheRows += seg.rows.Len()
}

func (w *OverWindow) cacheDrop(pkey string) {
	if el, ok := w.cache[pkey]; ok {
		w.lru.Remove(el)
		delete(w.cache, pkey)
		w.cacheRows -= el.Value.(*owCached).seg.rows.Len()
	}
}

// evict drops least recently used partitions while the cache is over its
// row budget (the most recent one stays even if it alone is over).
func (w *OverWindow) evict() {
	for w.cacheRows > w.opts.CacheRows && w.lru.Len() > 1 {
		el := w.lru.Back()
		c := el.Value.(*owCached)
		w.lru.Remove(el)
		delete(w.cache, c.pkey)
		w.cacheRows -= c.seg.rows.Len()
	}
}
