package exec

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// HashAgg maintains GROUP BY aggregation incrementally.
//
// State:
//
//	result table   key: group key
//	               row: group key | row count | per call: (state bytea, last output)
//	input table    one per min/max/string_agg call (kept inputs):
//	               key: group key | sort key | input pk    row: key ++ args
//	distinct table one per DISTINCT call:
//	               key: group key | args                   row: key ++ count
//
// Retractable aggregates (count, sum, avg, bool_and/or, stddev...) keep
// their O(1) state encoded in the result row. min/max/string_agg keep every
// input in their input table so that retraction is exact: min is the first
// row of the group's prefix (max is stored descending), string_agg is the
// group's rows in ORDER BY order. A DISTINCT call counts each distinct
// argument tuple; the underlying aggregate sees a tuple when its count goes
// 0 -> 1 and loses it at 1 -> 0.
//
// The row count makes a group disappear when its last row is deleted.
// Changes are collected per group during an epoch and emitted at the
// barrier (or earlier when too many groups are dirty), as the difference
// between the group's output at its first touch and now: an insert for a
// new group, a delete for a vanished one, an update pair for a changed one,
// nothing when the output is unchanged.
//
// SimpleAgg (no GROUP BY) is the same executor with an empty group key
// whose one output row always exists: count 0 and sum NULL on empty input.
// A HashAgg's always groups (SetAlwaysGroups: the empty grouping sets of
// GROUP BY ROLLUP and the like) exist the same way.
//
// Group cache: after a flush, a group's entry (its stored row and decoded
// states) stays in an LRU cache charged to the operator cache budget
// (cache.go), so the next epoch's first touch of a hot group is a map hit
// instead of a storage read and a state decode. The cache is written
// through: an entry always equals the group's row in the result table, and
// an evicted group is reloaded from there. Dirty groups leave the cache
// while they are being changed (they are bounded by maxDirtyGroups).
//
// Over append-only input (SetAppendOnly: a source, an inner join of
// sources) min/max keep no inputs: nothing is ever retracted, so the
// current result stored in the result row is all the state they need, and
// the input table stays empty (Nexmark q4 stored every bid in it).
//
// min/max keep their current result per cached group: an insert that
// beats it (in the input table's key order, the order the scan would use)
// replaces it, a retraction of a value that sorts after it leaves it
// alone; only a retraction of the current extreme (or a tie in a value
// whose text differs, 1.5 vs 1.50) falls back to reading the group's first
// input row from the table at the flush.
type HashAgg struct {
	input    stream.Executor
	groupKey []int
	calls    []aggCallRT
	inTypes  []types.Type
	inputPK  []int
	result   *state.Table
	simple   bool
	schema   []types.Type

	dirty  map[string]*aggGroup
	order  []string
	keyBuf []byte
	extBuf []byte
	argBuf types.Row // scratch: one call's arguments
	rowBuf types.Row // scratch: a row to encode into a call table
	inited bool      // simple agg: the one row was materialized (and the always groups)
	out    output
	q      queue
	cache  *lruCache[*aggGroup]

	// always are group keys whose row exists even when no input row is in
	// the group (SetAlwaysGroups); alwaysKey holds their encodings.
	always    []types.Row
	alwaysKey map[string]bool

	// gate, when set, is the new job's backfill gate: while it is closed
	// barriers do not flush (see deferFlush).
	gate *BackfillGate

	// Watermark cleanup (agg_watermark.go).
	wm keyWatermarks
	consistency
}

// AggCall is one aggregate call over input columns. The planner projects
// arguments and FILTER conditions into columns before the aggregation.
type AggCall struct {
	// Agg is the resolved aggregate (expr.LookupAggregate); Agg.Distinct
	// selects DISTINCT.
	Agg *expr.Aggregate
	// Args are the input columns of the arguments, already of
	// Agg.ArgTypes; empty for count(*).
	Args []int
	// Filter is a boolean input column (FILTER (WHERE ...)), or NoColumn.
	Filter int
	// OrderBy is the aggregate's ORDER BY (string_agg(x, ',' ORDER BY y)).
	OrderBy []ColumnOrder
}

type aggCallKind uint8

const (
	aggValue         aggCallKind = iota // retractable state in the result row
	aggInputs                           // inputs kept in an input table
	aggDistinctValue                    // distinct table + retractable inner state
	aggDistinctScan                     // distinct table scanned for the result
)

type aggCallRT struct {
	AggCall
	kind  aggCallKind
	inner *expr.Aggregate // the state-keeping aggregate (non-distinct)
	table *state.Table    // input or distinct table
	sort  sortKey         // aggInputs: key order of the kept inputs
	first bool            // the result is the first row of the group's prefix (min/max)
	// extOnly: a min/max over append-only input (SetAppendOnly) whose
	// argument type compares equal only for identical values: the known
	// extreme is the whole state, and the input table stays empty.
	extOnly bool
}

// aggGroup is one group: touched in the current epoch (dirty) or cached.
type aggGroup struct {
	key     types.Row
	prev    types.Row // stored result row at first touch; nil: none
	count   int64
	states  []expr.AggState
	touched []bool
	// ext[i] is the current result of min/max call i while extOK[i]
	// (extKey[i] its key encoding); otherwise the flush scans the table.
	ext    []types.Datum
	extKey [][]byte
	extOK  []bool
}

// aggGroupBytes approximates a cached group's memory.
func aggGroupBytes(g *aggGroup) int64 {
	n := int64(160) + rowBytes(g.key) + rowBytes(g.prev)
	for _, st := range g.states {
		if st != nil {
			n += 96
		}
	}
	for i := range g.ext {
		n += 48 + int64(len(g.extKey[i])) + 24
	}
	return n + int64(len(g.touched))
}

// aggCacheBudget, when set by a test, replaces the process budget for new
// aggregation group caches.
var aggCacheBudget *CacheBudget

// maxDirtyGroups bounds the groups buffered in an epoch: past it the
// executor emits early (still exact, just less coalesced). An early flush
// writes and emits every dirty group, and downstream rewrites each: with
// 4,096 a backfill of 1 M rows into 100,000 groups flushed about once per
// input row; 65,536 groups (~20 MiB of dirty state at ~300 bytes a group)
// coalesce a backfill's rows per barrier.
var maxDirtyGroups = 1 << 16 // a var so tests can force early flushes

// HashAggStateSchemas returns the schemas of the state tables a HashAgg
// (or SimpleAgg, with groupKey empty) needs: the result table, and per
// call a table or nil. inputPK is the input's stream key (unique per live
// row). The planner allocates ids, creates the tables and passes them to
// NewHashAgg in the same order.
func HashAggStateSchemas(name string, inTypes []types.Type, groupKey []int, calls []AggCall, inputPK []int) (state.Schema, []*state.Schema, error) {
	if err := checkCols("group key", groupKey, len(inTypes)); err != nil {
		return state.Schema{}, nil, err
	}
	if err := checkCols("input pk", inputPK, len(inTypes)); err != nil {
		return state.Schema{}, nil, err
	}
	gTypes := typesAt(inTypes, groupKey)
	k := len(groupKey)
	res := state.Schema{Name: name + " agg result", Types: append([]types.Type(nil), gTypes...)}
	res.Types = append(res.Types, types.Int64)
	for i := 0; i < k; i++ {
		res.PK = append(res.PK, i)
		res.DistKey = append(res.DistKey, i)
	}
	per := make([]*state.Schema, len(calls))
	for i, c := range calls {
		if c.Agg == nil {
			return state.Schema{}, nil, fmt.Errorf("aggregate call %d has no resolved aggregate", i)
		}
		res.Types = append(res.Types, types.Bytea, c.Agg.ResultType)
		rt, err := classify(c)
		if err != nil {
			return state.Schema{}, nil, err
		}
		argTypes := typesAt(inTypes, c.Args)
		switch rt.kind {
		case aggInputs:
			s := &state.Schema{Name: fmt.Sprintf("%s agg call %d inputs", name, i), Types: append([]types.Type(nil), gTypes...)}
			st, sd := rt.sort.columns(inTypes)
			s.Types = append(s.Types, st...)
			s.Types = append(s.Types, typesAt(inTypes, inputPK)...)
			for j := 0; j < k+len(st)+len(inputPK); j++ {
				s.PK = append(s.PK, j)
			}
			s.Desc = make([]bool, len(s.PK))
			copy(s.Desc[k:], sd)
			s.Types = append(s.Types, argTypes...)
			for j := 0; j < k; j++ {
				s.DistKey = append(s.DistKey, j)
			}
			per[i] = s
		case aggDistinctValue, aggDistinctScan:
			s := &state.Schema{Name: fmt.Sprintf("%s agg call %d distinct", name, i), Types: append([]types.Type(nil), gTypes...)}
			s.Types = append(s.Types, argTypes...)
			for j := 0; j < k+len(argTypes); j++ {
				s.PK = append(s.PK, j)
			}
			s.Desc = make([]bool, len(s.PK))
			if len(argTypes) > 0 && distinctDesc(c) {
				s.Desc[k] = true
			}
			s.Types = append(s.Types, types.Int64)
			for j := 0; j < k; j++ {
				s.DistKey = append(s.DistKey, j)
			}
			per[i] = s
		}
	}
	return res, per, nil
}

// distinctDesc: the distinct table stores the first argument descending
// (max, or string_agg(DISTINCT x ... ORDER BY x DESC)).
func distinctDesc(c AggCall) bool {
	if c.Agg.Name == "max" {
		return true
	}
	return len(c.OrderBy) > 0 && len(c.Args) > 0 && c.OrderBy[0].Col == c.Args[0] && c.OrderBy[0].Desc
}

func classify(c AggCall) (aggCallRT, error) {
	rt := aggCallRT{AggCall: c, inner: c.Agg}
	a := c.Agg
	rt.first = a.Name == "min" || a.Name == "max"
	if a.Distinct {
		inner, err := expr.LookupAggregate(a.Name, a.ArgTypes, false)
		if err != nil {
			return rt, fmt.Errorf("aggregate %s: %w", a.Name, err)
		}
		rt.inner = inner
		if inner.Retractable && !inner.NeedsInputs {
			rt.kind = aggDistinctValue
		} else {
			rt.kind = aggDistinctScan
		}
		return rt, nil
	}
	switch {
	case a.NeedsInputs:
		rt.kind = aggInputs
		switch a.Name {
		case "min":
			rt.sort = sortKey{orders: []ColumnOrder{{Col: c.Args[0]}}}
		case "max":
			rt.sort = sortKey{orders: []ColumnOrder{{Col: c.Args[0], Desc: true}}}
		default:
			rt.sort = sortKey{orders: c.OrderBy}
		}
	case a.Retractable:
		rt.kind = aggValue
	default:
		return rt, fmt.Errorf("aggregate %s cannot be maintained incrementally", a.Name)
	}
	return rt, nil
}

// NewHashAgg returns the executor for GROUP BY groupKey computing calls.
// result and tables come from HashAggStateSchemas (tables[i] nil where the
// schema was nil). Output rows are the group key columns followed by one
// column per call.
func NewHashAgg(input stream.Executor, groupKey []int, calls []AggCall, inputPK []int, result *state.Table, tables []*state.Table) (*HashAgg, error) {
	return newAgg(input, groupKey, calls, inputPK, result, tables, false)
}

// SetAppendOnly tells the aggregation that its input only ever inserts
// (rows with fresh stream keys): min/max calls over arguments whose equal
// values are identical keep no inputs (aggCallRT.extOnly). Call it before
// the first message.
func (h *HashAgg) SetAppendOnly() {
	for i := range h.calls {
		c := &h.calls[i]
		if c.kind == aggInputs && c.first && exactCompare(c.Agg.ArgTypes[0]) {
			c.extOnly = true
		}
	}
}

// exactCompare reports whether values of t that compare equal are
// identical (so a tie between a known extreme and a new value never needs
// the kept inputs to pick between 1.5 and 1.50, or 0 and -0).
func exactCompare(t types.Type) bool {
	switch t.Kind {
	case types.KindBool, types.KindInt16, types.KindInt32, types.KindInt64, types.KindVarchar, types.KindBytea,
		types.KindDate, types.KindTime, types.KindTimestamp, types.KindTimestamptz, types.KindUUID:
		return true
	}
	return false
}

// NewSimpleAgg returns the executor for an aggregation without GROUP BY:
// exactly one output row, present from the first barrier on.
func NewSimpleAgg(input stream.Executor, calls []AggCall, inputPK []int, result *state.Table, tables []*state.Table) (*HashAgg, error) {
	return newAgg(input, nil, calls, inputPK, result, tables, true)
}

func newAgg(input stream.Executor, groupKey []int, calls []AggCall, inputPK []int, result *state.Table, tables []*state.Table, simple bool) (*HashAgg, error) {
	inTypes := input.Schema()
	if err := checkCols("group key", groupKey, len(inTypes)); err != nil {
		return nil, err
	}
	if len(tables) != len(calls) {
		return nil, fmt.Errorf("aggregation: %d calls but %d call tables", len(calls), len(tables))
	}
	if want := len(groupKey) + 1 + 2*len(calls); len(result.Schema().Types) != want {
		return nil, fmt.Errorf("aggregation: result table %d has %d columns; want %d (see HashAggStateSchemas)", result.ID(), len(result.Schema().Types), want)
	}
	h := &HashAgg{input: input, groupKey: groupKey, inTypes: inTypes, inputPK: inputPK, result: result, simple: simple,
		dirty: map[string]*aggGroup{}, cache: newLRUCache[*aggGroup](aggCacheBudget)}
	h.schema = typesAt(inTypes, groupKey)
	for i, c := range calls {
		if err := checkCols("aggregate arguments", c.Args, len(inTypes)); err != nil {
			return nil, err
		}
		if c.Filter != NoColumn {
			if c.Filter < 0 || c.Filter >= len(inTypes) || inTypes[c.Filter].Kind != types.KindBool {
				return nil, fmt.Errorf("aggregate %s: FILTER column %d is not a boolean input column", c.Agg.Name, c.Filter)
			}
		}
		for _, o := range c.OrderBy {
			if err := checkCols("aggregate ORDER BY", []int{o.Col}, len(inTypes)); err != nil {
				return nil, err
			}
		}
		rt, err := classify(c)
		if err != nil {
			return nil, err
		}
		needTable := rt.kind != aggValue
		if needTable != (tables[i] != nil) {
			return nil, fmt.Errorf("aggregate call %d (%s): state table presence does not match HashAggStateSchemas", i, c.Agg.Name)
		}
		rt.table = tables[i]
		h.calls = append(h.calls, rt)
		h.schema = append(h.schema, c.Agg.ResultType)
	}
	return h, nil
}

func (h *HashAgg) Schema() []types.Type { return h.schema }
func (h *HashAgg) Identity() string {
	names := make([]string, len(h.calls))
	for i, c := range h.calls {
		d := ""
		if c.Agg.Distinct {
			d = "DISTINCT "
		}
		names[i] = fmt.Sprintf("%s(%s%s)", c.Agg.Name, d, colList(c.Args))
	}
	kind := "HashAgg"
	if h.simple {
		kind = "SimpleAgg"
	}
	return fmt.Sprintf("%s(group [%s], %s; state table %d)", kind, colList(h.groupKey), strings.Join(names, ", "), h.result.ID())
}

func (h *HashAgg) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := h.q.pop(); ok {
			return msg, nil
		}
		msg, err := h.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if w := msg.Watermark; w != nil {
			h.observeWatermark(w)
			continue
		}
		if b := msg.Barrier; b != nil {
			if h.simple && !h.inited {
				// The one row exists from the first barrier on, even
				// over empty input.
				if _, err := h.group(ctx, nil); err != nil {
					return stream.Message{}, err
				}
				h.inited = true
			}
			if !h.inited && len(h.always) > 0 {
				if err := h.touchAlways(ctx); err != nil {
					return stream.Message{}, err
				}
				h.inited = true
			}
			if !h.deferFlush() {
				if err := h.flush(ctx); err != nil {
					return stream.Message{}, err
				}
			}
			if err := h.cleanup(ctx); err != nil {
				return stream.Message{}, err
			}
			h.cache.shrinkToShare()
			tables := []*state.Table{h.result}
			for _, c := range h.calls {
				tables = append(tables, c.table)
			}
			if err := commitAll(ctx, h.Identity(), b.Curr, tables...); err != nil {
				return stream.Message{}, err
			}
			h.q.pushChunks(&h.out)
			h.wm.emit(&h.q, identityCol)
			h.q.push(msg)
			continue
		}
		if err := h.apply(ctx, stateInputHook(h, "", msg.Chunk)); err != nil {
			return stream.Message{}, err
		}
		if len(h.dirty) >= maxDirtyGroups {
			if err := h.flush(ctx); err != nil {
				return stream.Message{}, err
			}
			h.q.pushChunks(&h.out)
		}
	}
}

// SetBackfillGate makes the executor keep its dirty groups across the
// barriers of a new job's backfill (BackfillGate): each group is then
// written and emitted once when the backfill ends (or when maxDirtyGroups
// forces a flush), not once per barrier it was touched in — a backfill
// of 1 M rows over 10 barriers rewrote and re-emitted most groups 10 times.
func (h *HashAgg) SetBackfillGate(g *BackfillGate) { h.gate = g }

// deferFlush reports whether this barrier may leave the dirty groups
// unflushed: the job's backfill is still running (the job is not visible,
// and a recovery drops it, so no reader needs its state complete yet: I7
// is kept by the flush at the barrier that publishes it, see BackfillGate),
// and no watermark cleanup is pending (cleanup runs after a flush).
func (h *HashAgg) deferFlush() bool {
	return h.gate.Backfilling() && !h.wm.advanced()
}

// SetAlwaysGroups makes the rows of keys exist even when no input row is
// in their group, like a SimpleAgg's one row: GROUP BY ROLLUP(a)'s total
// row (keys with a NULL a and the empty set's number) over an empty table.
// Each is created at the first barrier by the actor owning its vnode
// (SetVnodeOwner), and kept with count 0 when its last row is deleted.
// Call it before the first message.
func (h *HashAgg) SetAlwaysGroups(keys []types.Row) {
	h.always = keys
	h.alwaysKey = map[string]bool{}
	for _, k := range keys {
		h.alwaysKey[string(h.encodeGroupKey(nil, k))] = true
	}
}

// touchAlways makes this actor's always groups dirty, so that the flush
// writes and emits those that do not exist yet.
func (h *HashAgg) touchAlways(ctx context.Context) error {
	for _, k := range h.always {
		if h.wm.owns != nil {
			v, ok := h.result.PrefixVnode(k)
			if !ok {
				return fmt.Errorf("%s: no vnode for group %s", h.Identity(), k)
			}
			if !h.wm.owns(v) {
				continue
			}
		}
		if _, err := h.group(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// encodeGroupKey appends the encoding of a group key, the dirty map's and
// the cache's key, to dst.
func (h *HashAgg) encodeGroupKey(dst []byte, key types.Row) []byte {
	for i, d := range key {
		dst = types.AppendKey(dst, d, h.inTypes[h.groupKey[i]], false, false)
	}
	return dst
}

// group returns the dirty-group entry for key, loading it from the result
// table at first touch.
func (h *HashAgg) group(ctx context.Context, key types.Row) (*aggGroup, error) {
	h.keyBuf = h.encodeGroupKey(h.keyBuf[:0], key)
	if g, ok := h.dirty[string(h.keyBuf)]; ok {
		return g, nil
	}
	ks := string(h.keyBuf)
	if g, ok := h.cache.peek(ks); ok {
		h.cache.remove(ks)
		h.dirty[ks] = g
		h.order = append(h.order, ks)
		return g, nil
	}
	g := &aggGroup{key: key.Copy(), states: make([]expr.AggState, len(h.calls)), touched: make([]bool, len(h.calls)),
		ext: make([]types.Datum, len(h.calls)), extKey: make([][]byte, len(h.calls)), extOK: make([]bool, len(h.calls))}
	prev, found, err := h.result.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Identity(), err)
	}
	k := len(h.groupKey)
	if found {
		g.prev = prev
		g.count = prev[k].Int()
		// Keep the stored representation of the key (1.5 vs 1.50 group
		// together): the rows already emitted carry it.
		g.key = prev[:k:k]
	}
	for i, c := range h.calls {
		if c.kind == aggInputs && c.first {
			// The stored result is the group's current min/max (NULL:
			// no input yet).
			if found {
				h.setExt(g, i, prev[k+2+2*i])
			} else {
				h.setExt(g, i, types.NullDatum)
			}
			continue
		}
		if c.kind != aggValue && c.kind != aggDistinctValue {
			continue
		}
		st := c.inner.NewRetractableState()
		if found {
			if enc := prev[k+1+2*i]; !enc.IsNull() {
				if err := st.Decode(enc.Bytes()); err != nil {
					return nil, inconsistent(h.Identity(), h.result, key, "aggregate %s state: %v", c.Agg.Name, err)
				}
			}
		}
		g.states[i] = st
	}
	h.dirty[ks] = g
	h.order = append(h.order, ks)
	return g, nil
}

// strictSkip mirrors the aggregates' NULL handling (expr.StrictSkip).
func strictSkip(name string, args types.Row) bool { return expr.StrictSkip(name, args) }

func (h *HashAgg) apply(ctx context.Context, c *types.Chunk) error {
	var tk ticker
	key := make(types.Row, 0, len(h.groupKey))
	for i, row := range c.Rows {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		key = key[:0]
		for _, gc := range h.groupKey {
			key = append(key, row[gc])
		}
		g, err := h.group(ctx, key)
		if err != nil {
			return err
		}
		sign := int64(1)
		if !c.Ops[i].IsInsert() {
			sign = -1
		}
		g.count += sign
		if g.count < 0 {
			// I6. Non-strict: the delete is dropped whole (the group keeps
			// its count and every aggregate state).
			g.count -= sign
			err := inconsistent(h.Identity(), h.result, g.key, "group row count would become negative: delete of row %s, never inserted", row)
			if err := h.violation(ctx, h.Identity(), err); err != nil {
				return err
			}
			continue
		}
		for ci := range h.calls {
			if err := h.applyCall(ctx, ci, g, row, sign); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *HashAgg) applyCall(ctx context.Context, ci int, g *aggGroup, row types.Row, sign int64) error {
	c := &h.calls[ci]
	if c.Filter != NoColumn {
		if f := row[c.Filter]; f.IsNull() || !f.Bool() {
			return nil
		}
	}
	args := h.argBuf[:0]
	for _, a := range c.Args {
		args = append(args, row[a])
	}
	h.argBuf = args
	if len(c.Args) > 0 && strictSkip(c.Agg.Name, args) {
		return nil
	}
	switch c.kind {
	case aggValue:
		var err error
		if sign > 0 {
			err = g.states[ci].Add(args)
		} else {
			err = g.states[ci].Retract(args)
		}
		if err != nil {
			// I6. Non-strict: this call ignores the row (its state is as
			// before the failed Add/Retract).
			return h.violation(ctx, h.Identity(), inconsistent(h.Identity(), h.result, g.key, "aggregate %s of row %s: %v", c.Agg.Name, row, err))
		}
	case aggInputs:
		if c.extOnly {
			if sign < 0 {
				// I6. Non-strict: the retraction is ignored (the extreme
				// it may have been stays).
				return h.violation(ctx, h.Identity(), inconsistent(h.Identity(), h.result, g.key,
					"aggregate %s over append-only input: retraction of row %s", c.Agg.Name, row))
			}
			h.trackExt(g, ci, args[0], sign)
			return nil
		}
		// The table encodes the row at Insert/Delete: a scratch row will do.
		r := append(h.rowBuf[:0], g.key...)
		r = c.sort.appendValues(r, row)
		for _, p := range h.inputPK {
			r = append(r, row[p])
		}
		r = append(r, args...)
		h.rowBuf = r
		if c.first {
			h.trackExt(g, ci, args[0], sign)
		} else {
			g.touched[ci] = true
		}
		if sign > 0 {
			c.table.Insert(r)
		} else {
			_, found, err := c.table.GetRow(ctx, r)
			if err != nil {
				return fmt.Errorf("%s: %w", h.Identity(), err)
			}
			if !found {
				// I6. Non-strict: nothing to delete; the call's result is
				// recomputed from its table as usual.
				return h.violation(ctx, h.Identity(), inconsistent(h.Identity(), c.table, r[:len(r)-len(args)],
					"aggregate %s: retracting an input that was never added (row %s)", c.Agg.Name, row))
			}
			c.table.Delete(r)
		}
	case aggDistinctValue, aggDistinctScan:
		r := append(append(h.rowBuf[:0], g.key...), args...)
		r = append(r, types.NullDatum)
		h.rowBuf = r
		cur, found, err := c.table.GetRow(ctx, r)
		if err != nil {
			return fmt.Errorf("%s: %w", h.Identity(), err)
		}
		n := int64(0)
		if found {
			n = cur[len(cur)-1].Int()
		}
		next := n + sign
		if next < 0 {
			// I6. Non-strict: the value stays absent; the state is as
			// before.
			return h.violation(ctx, h.Identity(), inconsistent(h.Identity(), c.table, r[:len(r)-1],
				"aggregate %s(DISTINCT): retracting a value that was never added (row %s)", c.Agg.Name, row))
		}
		if next == 0 {
			c.table.Delete(r)
		} else {
			r[len(r)-1] = types.DInt64(next)
			c.table.Insert(r)
		}
		if (n == 0) != (next == 0) {
			if c.kind == aggDistinctValue {
				if sign > 0 {
					err = g.states[ci].Add(args)
				} else {
					err = g.states[ci].Retract(args)
				}
				if err != nil {
					return h.violation(ctx, h.Identity(), inconsistent(h.Identity(), h.result, g.key, "aggregate %s of row %s: %v", c.Agg.Name, row, err))
				}
			} else {
				g.touched[ci] = true
			}
		}
	}
	return nil
}

// scanResult recomputes a kept-inputs call's output from its table.
func (h *HashAgg) scanResult(ctx context.Context, ci int, key types.Row) (types.Datum, error) {
	c := &h.calls[ci]
	it, err := c.table.Iter(ctx, key)
	if err != nil {
		return types.NullDatum, fmt.Errorf("%s: %w", h.Identity(), err)
	}
	defer it.Close()
	st := c.inner.NewState()
	nargs := len(c.Args)
	var tk ticker
	for it.Next() {
		if err := tk.tick(ctx); err != nil {
			return types.NullDatum, err
		}
		r := it.Row()
		var args types.Row
		if c.kind == aggInputs {
			args = r[len(r)-nargs:]
		} else {
			args = r[len(key) : len(key)+nargs]
		}
		if err := st.Add(args); err != nil {
			return types.NullDatum, fmt.Errorf("%s: %w", h.Identity(), err)
		}
		if c.first {
			break
		}
	}
	if err := it.Err(); err != nil {
		return types.NullDatum, fmt.Errorf("%s: %w", h.Identity(), err)
	}
	return st.Result()
}

// flush emits the changes of every dirty group and writes their result
// rows.
func (h *HashAgg) flush(ctx context.Context) error {
	k := len(h.groupKey)
	outTypes := h.schema
	var tk ticker
	for _, ks := range h.order {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		g := h.dirty[ks]
		var prevOut types.Row
		if g.prev != nil {
			prevOut = append(make(types.Row, 0, len(outTypes)), g.key...)
			for i := range h.calls {
				prevOut = append(prevOut, g.prev[k+2+2*i])
			}
		}
		if g.count == 0 && !h.simple && !h.alwaysKey[ks] {
			if g.prev != nil {
				h.out.emit(types.OpDelete, prevOut)
				h.result.Delete(g.prev)
			}
			continue
		}
		stored := append(make(types.Row, 0, k+1+2*len(h.calls)), g.key...)
		stored = append(stored, types.DInt64(g.count))
		newOut := append(make(types.Row, 0, len(outTypes)), g.key...)
		for i, c := range h.calls {
			var res types.Datum
			enc := types.NullDatum
			var err error
			switch {
			case g.states[i] != nil:
				res, err = g.states[i].Result()
				enc = types.DBytea(g.states[i].Encode(nil))
			case c.kind == aggInputs && c.first && g.extOK[i]:
				res = g.ext[i]
			case g.touched[i] || (c.kind == aggInputs && c.first):
				res, err = h.scanResult(ctx, i, g.key)
			case g.prev != nil:
				res = g.prev[k+2+2*i]
			default:
				res, err = c.inner.NewState().Result()
			}
			if err != nil {
				return fmt.Errorf("%s: group %s: %w", h.Identity(), g.key, err)
			}
			stored = append(stored, enc, res)
			newOut = append(newOut, res)
		}
		h.result.Insert(stored)
		switch {
		case g.prev == nil:
			h.out.emit(types.OpInsert, newOut)
		case !sameRow(prevOut, newOut, outTypes):
			h.out.update(prevOut, newOut)
		}
		// The group is clean again and equals its stored row: keep it.
		g.prev = stored
		for i, c := range h.calls {
			g.touched[i] = false
			if c.kind == aggInputs && c.first {
				h.setExt(g, i, stored[k+2+2*i])
			}
		}
		h.cache.put(ks, g, aggGroupBytes(g))
	}
	clear(h.dirty)
	h.order = h.order[:0]
	return nil
}

// setExt makes v (a min/max result) call ci's known current extreme.
func (h *HashAgg) setExt(g *aggGroup, ci int, v types.Datum) {
	g.ext[ci], g.extOK[ci] = v, true
	if v.IsNull() {
		g.extKey[ci] = g.extKey[ci][:0]
		return
	}
	g.extKey[ci] = h.calls[ci].appendExtKey(g.extKey[ci][:0], v)
}

// appendExtKey encodes a min/max argument the way the call's input table
// orders it (ascending for min, descending for max).
func (c *aggCallRT) appendExtKey(dst []byte, v types.Datum) []byte {
	return types.AppendKey(dst, v, c.Agg.ArgTypes[0], c.Agg.Name == "max", false)
}

// trackExt updates a min/max call's known extreme for an added (sign > 0)
// or retracted non-NULL argument v, or forgets it when only the table can
// tell.
func (h *HashAgg) trackExt(g *aggGroup, ci int, v types.Datum, sign int64) {
	if !g.extOK[ci] {
		return
	}
	c := &h.calls[ci]
	h.extBuf = c.appendExtKey(h.extBuf[:0], v)
	if g.ext[ci].IsNull() {
		if sign > 0 {
			g.ext[ci], g.extOK[ci] = v, true
			g.extKey[ci] = append(g.extKey[ci][:0], h.extBuf...)
		} else {
			g.extOK[ci] = false // retracting from nothing: the flush finds out
		}
		return
	}
	cmp := bytes.Compare(h.extBuf, g.extKey[ci])
	switch {
	case sign > 0 && cmp < 0:
		g.ext[ci] = v
		g.extKey[ci] = append(g.extKey[ci][:0], h.extBuf...)
	case sign > 0 && cmp == 0:
		// A tie: the scan would pick by input pk; only identical values
		// keep the result without asking.
		if !sameRow(types.Row{v}, types.Row{g.ext[ci]}, nil) {
			g.extOK[ci] = false
		}
	case sign < 0 && cmp <= 0:
		g.extOK[ci] = false // the extreme (or a tie of it) left
	}
}
