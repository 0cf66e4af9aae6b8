package expr

import (
	"context"
	"sort"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Window-function kernels.
//
// An executor hands ComputeWindow one partition, already sorted by the
// window's ORDER BY, as a WindowInput: each row's evaluated arguments, a
// peer test (equal ORDER BY keys) and, for RANGE frames with offsets, the
// single ORDER BY key, either as arrays or as accessors over the caller's
// rows (WindowRows). ComputeWindow fills the outputs of rows [from, to)
// only, so a streaming over-window executor can recompute just the rows a
// change affects; ComputeWindowEach hands them to a callback instead.
//
// Cost: peer groups are found in one O(N) pass over the partition; every
// other step is O(rows computed + rows in their frames). Aggregates over
// frames avoid recomputation where the frame allows it:
//
//	frame                               strategy
//	UNBOUNDED PRECEDING .. x            running state, rows only added
//	sliding, exactly retractable agg    rows added at the end, retracted at the start
//	sliding min / max                   monotonic deque of positions
//	EXCLUDE ..., float sums/variances,  per-row recomputation over the frame
//	string_agg                          (as PostgreSQL: no inverse transition)
//
// The frame bounds of consecutive rows never move backwards (the rows are
// sorted), which is what makes the sliding strategies correct.
//
// Cancellation (I5): the loops check ctx.Ctx every 256 rows, and no step
// between two checks allocates more than one block of a Blocks array (the
// per-row peer groups live in Blocks, the input and the outputs stay
// with the caller): a partition-sized allocation is one uncancellable
// step of 60–200 ms at a million rows (see Blocks).

// FrameMode is ROWS, RANGE or GROUPS.
type FrameMode uint8

const (
	FrameRange FrameMode = iota
	FrameRows
	FrameGroups
)

// BoundKind is the kind of one end of a frame.
type BoundKind uint8

const (
	UnboundedPreceding BoundKind = iota
	OffsetPreceding
	CurrentRow
	OffsetFollowing
	UnboundedFollowing
)

// FrameExclusion is the EXCLUDE clause.
type FrameExclusion uint8

const (
	ExcludeNoOthers FrameExclusion = iota
	ExcludeCurrentRow
	ExcludeGroup
	ExcludeTies
)

// FrameBound is one end of a frame. Offset is the evaluated offset for
// the Offset kinds: a bigint for ROWS and GROUPS; for RANGE a value of the
// type RangeOffsetType returns.
type FrameBound struct {
	Kind   BoundKind
	Offset types.Datum
}

// Frame is a window frame clause.
type Frame struct {
	Mode       FrameMode
	Start, End FrameBound
	Exclude    FrameExclusion
}

// DefaultFrame is PostgreSQL's frame when none is given: RANGE BETWEEN
// UNBOUNDED PRECEDING AND CURRENT ROW (with no ORDER BY every row is a
// peer, so the frame is the whole partition).
func DefaultFrame() Frame {
	return Frame{Mode: FrameRange, Start: FrameBound{Kind: UnboundedPreceding}, End: FrameBound{Kind: CurrentRow}}
}

func windowErr(format string, args ...any) error {
	return sqlerr.Errorf(sqlerr.WindowingError, format, args...)
}

// ValidateFrame checks a frame clause at bind time: bound combinations,
// and for RANGE with an offset, that there is exactly one ORDER BY column
// of a type with in_range support. orderTypes are the ORDER BY key types.
func ValidateFrame(f Frame, orderTypes []types.Type) error {
	if f.Start.Kind == UnboundedFollowing {
		return windowErr("frame start cannot be UNBOUNDED FOLLOWING")
	}
	if f.End.Kind == UnboundedPreceding {
		return windowErr("frame end cannot be UNBOUNDED PRECEDING")
	}
	if f.Start.Kind == CurrentRow && f.End.Kind == OffsetPreceding {
		return windowErr("frame starting from current row cannot have preceding rows")
	}
	if f.Start.Kind == OffsetFollowing && (f.End.Kind == OffsetPreceding || f.End.Kind == CurrentRow) {
		return windowErr("frame starting from following row cannot have preceding rows")
	}
	hasOffset := f.Start.Kind == OffsetPreceding || f.Start.Kind == OffsetFollowing ||
		f.End.Kind == OffsetPreceding || f.End.Kind == OffsetFollowing
	if f.Mode == FrameRange && hasOffset {
		if len(orderTypes) != 1 {
			return windowErr("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
		}
		if _, ok := RangeOffsetType(orderTypes[0]); !ok {
			return sqlerr.Errorf(sqlerr.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s", orderTypes[0].Name())
		}
	}
	if f.Mode == FrameGroups && hasOffset && len(orderTypes) == 0 {
		return windowErr("GROUPS mode requires an ORDER BY clause")
	}
	return nil
}

// RangeOffsetType returns the type a RANGE offset must have for an ORDER
// BY key of type t (PostgreSQL's in_range support functions).
func RangeOffsetType(t types.Type) (types.Type, bool) {
	switch t.Kind {
	case types.KindInt16, types.KindInt32, types.KindInt64:
		return t, true
	case types.KindFloat32, types.KindFloat64:
		return types.Float64, true
	case types.KindNumeric:
		return types.Numeric, true
	case types.KindDate, types.KindTime, types.KindTimestamp, types.KindTimestamptz, types.KindInterval:
		return types.Interval, true
	}
	return types.Type{}, false
}

type winKind uint8

const (
	winAgg winKind = iota
	winRowNumber
	winRank
	winDenseRank
	winPercentRank
	winCumeDist
	winNtile
	winLag
	winLead
	winFirstValue
	winLastValue
	winNthValue
)

// WindowFunc is a resolved window function.
type WindowFunc struct {
	Name       string
	ArgTypes   []types.Type
	ResultType types.Type
	// Agg is set for an aggregate used as a window function.
	Agg  *Aggregate
	kind winKind
}

// UsesFrame reports whether the function's result depends on the frame
// (aggregates and first/last/nth_value); ranking and lag/lead do not.
func (w *WindowFunc) UsesFrame() bool {
	switch w.kind {
	case winAgg, winFirstValue, winLastValue, winNthValue:
		return true
	}
	return false
}

// LookupWindowFunc resolves a window function call. Aggregates are
// accepted too (sum(x) OVER ...). The binder coerces the arguments to
// ArgTypes.
func LookupWindowFunc(name string, args []types.Type) (*WindowFunc, error) {
	lname := strings.ToLower(name)
	fixed := func(k winKind, ret types.Type, want ...types.Type) (*WindowFunc, error) {
		if len(args) != len(want) {
			return nil, undefinedFunction(lname, args)
		}
		for i, a := range args {
			if !CanCoerce(a, want[i], CastImplicit) {
				return nil, undefinedFunction(lname, args)
			}
		}
		return &WindowFunc{Name: lname, ArgTypes: want, ResultType: ret, kind: k}, nil
	}
	valueType := func() types.Type {
		if len(args) == 0 || isUnknown(args[0]) {
			return types.Text
		}
		return args[0]
	}
	switch lname {
	case "row_number":
		return fixed(winRowNumber, types.Int64)
	case "rank":
		return fixed(winRank, types.Int64)
	case "dense_rank":
		return fixed(winDenseRank, types.Int64)
	case "percent_rank":
		return fixed(winPercentRank, types.Float64)
	case "cume_dist":
		return fixed(winCumeDist, types.Float64)
	case "ntile":
		return fixed(winNtile, types.Int32, types.Int32)
	case "lag", "lead":
		k := winLag
		if lname == "lead" {
			k = winLead
		}
		vt := valueType()
		switch len(args) {
		case 1:
			return fixed(k, vt, vt)
		case 2:
			return fixed(k, vt, vt, types.Int32)
		case 3:
			// lag(anycompatible, integer, anycompatible): value and default
			// share a common type.
			ct, err := CommonType([]types.Type{args[0], args[2]}, "lag/lead")
			if err != nil {
				return nil, undefinedFunction(lname, args)
			}
			return fixed(k, ct, ct, types.Int32, ct)
		}
		return nil, undefinedFunction(lname, args)
	case "first_value":
		return fixed(winFirstValue, valueType(), valueType())
	case "last_value":
		return fixed(winLastValue, valueType(), valueType())
	case "nth_value":
		return fixed(winNthValue, valueType(), valueType(), types.Int32)
	}
	agg, err := LookupAggregate(lname, args, false)
	if err != nil {
		return nil, err
	}
	return &WindowFunc{Name: lname, ArgTypes: agg.ArgTypes, ResultType: agg.ResultType, Agg: agg, kind: winAgg}, nil
}

// WindowInput is one sorted partition as a window call sees it: either
// arrays (Args, Filter, OrderKey) or, when Rows is set, accessors over the
// caller's own rows.
type WindowInput struct {
	// Args[i] are the call's arguments for the row at position i (empty
	// for count(*) and the ranking functions).
	Args [][]types.Datum
	// Filter, when non-nil, excludes rows whose entry is false from
	// aggregates (FILTER (WHERE ...)).
	Filter []bool
	// Peers reports whether the rows at positions i and j have equal ORDER
	// BY keys; nil means there is no ORDER BY and all rows are peers. The
	// kernel asks only about neighbours (j == i+1).
	Peers func(i, j int) bool
	// OrderKey is the single ORDER BY key of each row, required for RANGE
	// frames with offsets, sorted as Desc / NullsFirst say.
	OrderKey   []types.Datum
	OrderType  types.Type
	Desc       bool
	NullsFirst bool
	// Rows, when set, replaces Args, Filter and OrderKey: a caller that
	// holds the partition in its own structure (stream/exec.OverWindow)
	// hands the kernel accessors instead of copying every row's values
	// into partition-sized arrays (see Blocks for why that matters).
	Rows WindowRows
}

// WindowRows gives the kernel a partition's rows by position.
type WindowRows interface {
	// Len returns the number of rows.
	Len() int
	// Args returns the call's arguments for row i, at least as many as
	// the function's ArgTypes. The kernel reads the slice and does not
	// keep it.
	Args(i int) []types.Datum
	// Included reports whether row i passes the call's FILTER.
	Included(i int) bool
	// OrderKey returns row i's single ORDER BY key (read only for RANGE
	// frames with offsets).
	OrderKey(i int) types.Datum
}

// windowArrays serves a WindowInput's arrays as WindowRows.
type windowArrays struct{ in *WindowInput }

func (a windowArrays) Len() int                   { return len(a.in.Args) }
func (a windowArrays) Args(i int) []types.Datum   { return a.in.Args[i] }
func (a windowArrays) Included(i int) bool        { return a.in.Filter == nil || a.in.Filter[i] }
func (a windowArrays) OrderKey(i int) types.Datum { return a.in.OrderKey[i] }

// windowPart holds what ComputeWindow derives from a WindowInput. Its
// per-row arrays are Blocks, grown between cancellation checks (I5).
type windowPart struct {
	in       *WindowInput
	rows     WindowRows
	n        int
	group    Blocks[int] // peer group number of each position
	groupPos Blocks[int] // first position of each group, then n
}

// peerS returns the first position of row i's peer group.
func (p *windowPart) peerS(i int) int { return p.groupPos.At(p.group.At(i)) }

// peerE returns one past the last position of row i's peer group.
func (p *windowPart) peerE(i int) int { return p.groupPos.At(p.group.At(i) + 1) }

func preparePartition(ctx *EvalContext, in *WindowInput) (*windowPart, error) {
	rows := in.Rows
	if rows == nil {
		rows = windowArrays{in}
	}
	n := rows.Len()
	p := &windowPart{in: in, rows: rows, n: n}
	g := -1
	for i := 0; i < n; i++ {
		if err := checkCancel(ctx, i); err != nil {
			return nil, err
		}
		if i == 0 || (in.Peers != nil && !in.Peers(i-1, i)) {
			g++
			p.groupPos.Append(i)
		}
		p.group.Append(g)
	}
	p.groupPos.Append(n)
	return p, nil
}

func checkCancel(ctx *EvalContext, i int) error {
	if i&255 != 0 || ctx == nil || ctx.Ctx == nil {
		return nil
	}
	if err := ctx.Ctx.Err(); err != nil {
		if err == context.Canceled {
			return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
		}
		return sqlerr.Wrap(err, sqlerr.QueryCanceled, "canceling statement due to statement timeout")
	}
	return nil
}

// ComputeWindow computes fn over frame for the rows at positions [from,
// to) of the partition and stores them in out[0 : to-from].
func ComputeWindow(ctx *EvalContext, fn *WindowFunc, frame Frame, in *WindowInput, from, to int, out []types.Datum) error {
	if len(out) < to-from {
		return sqlerr.Errorf(sqlerr.InternalError, "window: %d outputs for row range [%d, %d)", len(out), from, to)
	}
	return ComputeWindowEach(ctx, fn, frame, in, from, to, func(i int, v types.Datum) { out[i-from] = v })
}

// ComputeWindowEach computes fn over frame for the rows at positions
// [from, to) of the partition and hands each result to emit, in position
// order, so that the caller need not allocate an array of to-from results.
func ComputeWindowEach(ctx *EvalContext, fn *WindowFunc, frame Frame, in *WindowInput, from, to int, emit func(i int, v types.Datum)) error {
	p, err := preparePartition(ctx, in)
	if err != nil {
		return err
	}
	if from < 0 || to > p.n || from > to {
		return sqlerr.Errorf(sqlerr.InternalError, "window: bad row range [%d, %d) of %d rows", from, to, p.n)
	}
	if in.Rows == nil {
		if frame.Mode == FrameRange && len(in.OrderKey) != p.n &&
			(frame.Start.Kind == OffsetPreceding || frame.Start.Kind == OffsetFollowing ||
				frame.End.Kind == OffsetPreceding || frame.End.Kind == OffsetFollowing) {
			return sqlerr.Errorf(sqlerr.InternalError, "window: RANGE offset frame needs OrderKey for all %d rows", p.n)
		}
		for i := range in.Args {
			if err := checkCancel(ctx, i); err != nil {
				return err
			}
			if len(in.Args[i]) < len(fn.ArgTypes) {
				return sqlerr.Errorf(sqlerr.InternalError, "window: %s needs %d arguments, row %d has %d", fn.Name, len(fn.ArgTypes), i, len(in.Args[i]))
			}
		}
	}
	switch fn.kind {
	case winAgg:
		return p.computeAgg(ctx, fn, frame, from, to, emit)
	case winFirstValue, winLastValue, winNthValue:
		return p.computeValue(ctx, fn, frame, from, to, emit)
	}
	for i := from; i < to; i++ {
		if err := checkCancel(ctx, i); err != nil {
			return err
		}
		var v types.Datum
		switch fn.kind {
		case winRowNumber:
			v = types.DInt64(int64(i + 1))
		case winRank:
			v = types.DInt64(int64(p.peerS(i) + 1))
		case winDenseRank:
			v = types.DInt64(int64(p.group.At(i) + 1))
		case winPercentRank:
			if p.n <= 1 {
				v = types.DFloat64(0)
			} else {
				v = types.DFloat64(float64(p.peerS(i)) / float64(p.n-1))
			}
		case winCumeDist:
			v = types.DFloat64(float64(p.peerE(i)) / float64(p.n))
		case winNtile:
			a := p.rows.Args(i)[0]
			if a.IsNull() {
				v = types.NullDatum
				break
			}
			b := a.Int()
			if b <= 0 {
				return sqlerr.New("22014", "argument of ntile must be greater than zero")
			}
			v = types.DInt32(int32(ntileBucket(i, p.n, b)))
		case winLag, winLead:
			args := p.rows.Args(i)
			off := int64(1)
			if len(args) >= 2 {
				if args[1].IsNull() {
					emit(i, types.NullDatum)
					continue
				}
				off = args[1].Int()
			}
			if fn.kind == winLag {
				off = -off
			}
			t := int64(i) + off
			switch {
			case t >= 0 && t < int64(p.n):
				v = p.rows.Args(int(t))[0]
			case len(args) >= 3:
				v = args[2]
			default:
				v = types.NullDatum
			}
		}
		emit(i, v)
	}
	return nil
}

// ntileBucket returns the 1-based bucket of row i of n split into b
// buckets: the first n%b buckets get one extra row.
func ntileBucket(i, n int, b int64) int64 {
	per := int64(n) / b
	extra := int64(n) % b
	ii := int64(i)
	if per == 0 {
		return ii + 1
	}
	big := extra * (per + 1)
	if ii < big {
		return ii/(per+1) + 1
	}
	return extra + (ii-big)/per + 1
}

// frameBounds returns [start, end) of row i's frame before exclusion.
func (p *windowPart) frameBounds(ctx *EvalContext, f Frame, i int) (int, int, error) {
	s, err := p.bound(ctx, f, f.Start, i, true)
	if err != nil {
		return 0, 0, err
	}
	e, err := p.bound(ctx, f, f.End, i, false)
	if err != nil {
		return 0, 0, err
	}
	if e < s {
		e = s
	}
	return s, e, nil
}

func offsetInt(b FrameBound, start bool) (int64, error) {
	which := "ending"
	if start {
		which = "starting"
	}
	if b.Offset.IsNull() {
		return 0, sqlerr.Errorf(sqlerr.NullValueNotAllowed, "frame %s offset must not be null", which)
	}
	v := b.Offset.Int()
	if v < 0 {
		return 0, sqlerr.Errorf("22013", "frame %s offset must not be negative", which)
	}
	return v, nil
}

// bound computes one end of row i's frame as a position (start: first row
// included; end: one past the last row included).
func (p *windowPart) bound(ctx *EvalContext, f Frame, b FrameBound, i int, start bool) (int, error) {
	switch b.Kind {
	case UnboundedPreceding:
		return 0, nil
	case UnboundedFollowing:
		return p.n, nil
	case CurrentRow:
		if f.Mode == FrameRows {
			if start {
				return i, nil
			}
			return i + 1, nil
		}
		if start {
			return p.peerS(i), nil
		}
		return p.peerE(i), nil
	}
	preceding := b.Kind == OffsetPreceding
	switch f.Mode {
	case FrameRows:
		off, err := offsetInt(b, start)
		if err != nil {
			return 0, err
		}
		pos := int64(i)
		if preceding {
			pos -= off
		} else {
			pos += off
		}
		if !start {
			pos++
		}
		return int(min(max(pos, 0), int64(p.n))), nil
	case FrameGroups:
		off, err := offsetInt(b, start)
		if err != nil {
			return 0, err
		}
		g := int64(p.group.At(i))
		if preceding {
			g -= off
		} else {
			g += off
		}
		ng := int64(p.groupPos.Len() - 1)
		if start {
			if g < 0 {
				return 0, nil
			}
			if g >= ng {
				return p.n, nil
			}
			return p.groupPos.At(int(g)), nil
		}
		if g < 0 {
			return 0, nil
		}
		if g >= ng {
			return p.n, nil
		}
		return p.groupPos.At(int(g) + 1), nil
	}
	return p.rangeBound(ctx, b, i, start)
}

// rangeBound finds a RANGE offset bound with a binary search over the
// sorted keys: the frame holds rows whose key lies within offset of the
// current row's key (in the sort direction). A NULL current key's frame
// is its peer group (the NULLs), as in PostgreSQL.
func (p *windowPart) rangeBound(ctx *EvalContext, b FrameBound, i int, start bool) (int, error) {
	in := p.in
	if b.Offset.IsNull() {
		which := "ending"
		if start {
			which = "starting"
		}
		return 0, sqlerr.Errorf(sqlerr.NullValueNotAllowed, "frame %s offset must not be null", which)
	}
	if offsetNegative(b.Offset) {
		return 0, sqlerr.New("22013", "invalid preceding or following size in window function")
	}
	key := p.rows.OrderKey(i)
	if key.IsNull() {
		if start {
			return p.peerS(i), nil
		}
		return p.peerE(i), nil
	}
	// the non-NULL keys occupy [lo, hi)
	lo, hi := 0, p.n
	if in.NullsFirst {
		lo = sort.Search(p.n, func(j int) bool { return !p.rows.OrderKey(j).IsNull() })
	} else {
		hi = sort.Search(p.n, func(j int) bool { return p.rows.OrderKey(j).IsNull() })
	}
	// "toward the end" of the sort order is adding the offset for ASC and
	// subtracting it for DESC.
	add := b.Kind == OffsetFollowing
	if in.Desc {
		add = !add
	}
	target, err := rangeTarget(ctx, key, b.Offset, add)
	if err != nil {
		return 0, err
	}
	// position of the first row "after" target (end) or first row not
	// "before" target (start), in sort order.
	cmp := func(j int) int {
		c := compareRangeKey(p.rows.OrderKey(j), target)
		if in.Desc {
			c = -c
		}
		return c
	}
	if start {
		return lo + sort.Search(hi-lo, func(k int) bool { return cmp(lo+k) >= 0 }), nil
	}
	return lo + sort.Search(hi-lo, func(k int) bool { return cmp(lo+k) > 0 }), nil
}

func offsetNegative(d types.Datum) bool {
	switch d.Kind() {
	case types.KindInterval:
		iv := d.Interval()
		return types.Compare(d, types.DInterval(types.IntervalValue{})) < 0 || (iv.Months < 0 && iv.Days <= 0 && iv.Micros <= 0)
	case types.KindFloat32, types.KindFloat64:
		f := d.Float()
		return f < 0 || f != f
	case types.KindNumeric:
		return d.Decimal().Negative || isNaNDec(d.Decimal())
	}
	return d.Int() < 0
}

// rangeTarget computes key +/- offset, widening so it cannot overflow:
// integers and numerics in exact decimals, dates as timestamps.
func rangeTarget(ctx *EvalContext, key, off types.Datum, add bool) (types.Datum, error) {
	switch key.Kind() {
	case types.KindInt16, types.KindInt32, types.KindInt64, types.KindNumeric:
		var r apd.Decimal
		k, o := types.ToDecimal(key), types.ToDecimal(off)
		if add {
			exactCtx.Add(&r, k, o)
		} else {
			exactCtx.Sub(&r, k, o)
		}
		return types.DNumeric(&r), nil
	case types.KindFloat32, types.KindFloat64:
		if add {
			return types.DFloat64(key.Float() + off.Float()), nil
		}
		return types.DFloat64(key.Float() - off.Float()), nil
	case types.KindDate, types.KindTimestamp, types.KindTimestamptz:
		iv := off.Interval()
		if !add {
			iv = negIV(iv)
		}
		ts := key.Int()
		if key.Kind() == types.KindDate {
			ts, _ = dateToTimestamp(ts)
		}
		var r int64
		var err error
		if key.Kind() == types.KindTimestamptz {
			r, err = timestamptzPlusInterval(ctx, ts, iv)
		} else {
			r, err = timestampPlusInterval(ts, iv)
		}
		if err != nil {
			// beyond the representable range: every row is within reach
			if add {
				return types.DTimestamp(maxTimestamp + 1), nil
			}
			return types.DTimestamp(minTimestamp - 1), nil
		}
		return types.DTimestamp(r), nil
	case types.KindTime:
		us := off.Interval().Micros
		if !add {
			us = -us
		}
		return types.DInt64(key.Int() + us), nil
	case types.KindInterval:
		var r types.IntervalValue
		var err error
		if add {
			r, err = intervalAdd(key.Interval(), off.Interval())
		} else {
			r, err = intervalSub(key.Interval(), off.Interval())
		}
		return types.DInterval(r), err
	}
	return types.NullDatum, sqlerr.Errorf(sqlerr.FeatureNotSupported, "RANGE offsets are not supported for %v", key.Kind())
}

// compareRangeKey compares an ORDER BY key with a target from rangeTarget.
func compareRangeKey(k, target types.Datum) int {
	switch k.Kind() {
	case types.KindDate:
		ts, _ := dateToTimestamp(k.Int())
		return types.Compare(types.DTimestamp(ts), target)
	case types.KindTimestamptz:
		return types.Compare(types.DTimestamp(k.Int()), target)
	case types.KindTime:
		return types.Compare(types.DInt64(k.Int()), target)
	}
	return types.Compare(k, target)
}

// segments returns row i's frame after exclusion as up to three ranges.
func (p *windowPart) segments(f Frame, i, s, e int, buf [][2]int) [][2]int {
	buf = buf[:0]
	var xs, xe int // excluded range
	keepI := false
	switch f.Exclude {
	case ExcludeNoOthers:
		if s < e {
			buf = append(buf, [2]int{s, e})
		}
		return buf
	case ExcludeCurrentRow:
		xs, xe = i, i+1
	case ExcludeGroup:
		xs, xe = p.peerS(i), p.peerE(i)
	case ExcludeTies:
		xs, xe = p.peerS(i), p.peerE(i)
		keepI = true
	}
	add := func(a, b int) {
		a, b = max(a, s), min(b, e)
		if a < b {
			buf = append(buf, [2]int{a, b})
		}
	}
	add(s, xs)
	if keepI {
		add(i, i+1)
	}
	add(xe, e)
	return buf
}

func (p *windowPart) included(j int) bool {
	return p.rows.Included(j)
}

func (p *windowPart) computeValue(ctx *EvalContext, fn *WindowFunc, f Frame, from, to int, emit func(int, types.Datum)) error {
	var segBuf [][2]int
	for i := from; i < to; i++ {
		if err := checkCancel(ctx, i); err != nil {
			return err
		}
		s, e, err := p.frameBounds(ctx, f, i)
		if err != nil {
			return err
		}
		segs := p.segments(f, i, s, e, segBuf)
		segBuf = segs
		v := types.NullDatum
		switch fn.kind {
		case winFirstValue:
			if len(segs) > 0 {
				v = p.rows.Args(segs[0][0])[0]
			}
		case winLastValue:
			if len(segs) > 0 {
				v = p.rows.Args(segs[len(segs)-1][1] - 1)[0]
			}
		case winNthValue:
			nth := p.rows.Args(i)[1]
			if nth.IsNull() {
				break
			}
			k := nth.Int()
			if k <= 0 {
				return sqlerr.New("22016", "argument of nth_value must be greater than zero")
			}
			for _, sg := range segs {
				l := int64(sg[1] - sg[0])
				if k <= l {
					v = p.rows.Args(sg[0] + int(k) - 1)[0]
					break
				}
				k -= l
			}
		}
		emit(i, v)
	}
	return nil
}

func (p *windowPart) computeAgg(ctx *EvalContext, fn *WindowFunc, f Frame, from, to int, emit func(int, types.Datum)) error {
	agg := fn.Agg
	if f.Exclude == ExcludeNoOthers {
		if f.Start.Kind == UnboundedPreceding {
			return p.aggRunning(ctx, agg, f, from, to, emit)
		}
		if agg.Name == "min" || agg.Name == "max" {
			return p.aggDeque(ctx, agg, f, from, to, emit)
		}
		if agg.Retractable && !agg.InexactRetract {
			return p.aggSliding(ctx, agg, f, from, to, emit)
		}
	}
	return p.aggRecompute(ctx, agg, f, from, to, emit)
}

// aggRunning: the frame start is fixed at 0, so the state only grows.
func (p *windowPart) aggRunning(ctx *EvalContext, agg *Aggregate, f Frame, from, to int, emit func(int, types.Datum)) error {
	st := agg.NewState()
	cur := 0
	for i := from; i < to; i++ {
		if err := checkCancel(ctx, i); err != nil {
			return err
		}
		_, e, err := p.frameBounds(ctx, f, i)
		if err != nil {
			return err
		}
		for ; cur < e; cur++ {
			if err := checkCancel(ctx, cur); err != nil {
				return err
			}
			if p.included(cur) {
				if err := st.Add(p.rows.Args(cur)); err != nil {
					return err
				}
			}
		}
		v, err := st.Result()
		if err != nil {
			return err
		}
		emit(i, v)
	}
	return nil
}

// aggSliding adds rows entering the frame and retracts rows leaving it.
func (p *windowPart) aggSliding(ctx *EvalContext, agg *Aggregate, f Frame, from, to int, emit func(int, types.Datum)) error {
	st := agg.NewRetractableState()
	cs, ce := 0, 0
	for i := from; i < to; i++ {
		if err := checkCancel(ctx, i); err != nil {
			return err
		}
		s, e, err := p.frameBounds(ctx, f, i)
		if err != nil {
			return err
		}
		if i == from || s >= ce {
			// first row, or no overlap with the previous frame: restart
			st = agg.NewRetractableState()
			cs, ce = s, s
		}
		for ; ce < e; ce++ {
			if err := checkCancel(ctx, ce); err != nil {
				return err
			}
			if p.included(ce) {
				if err := st.Add(p.rows.Args(ce)); err != nil {
					return err
				}
			}
		}
		for ; cs < s; cs++ {
			if p.included(cs) {
				if err := st.Retract(p.rows.Args(cs)); err != nil {
					return err
				}
			}
		}
		v, err := st.Result()
		if err != nil {
			return err
		}
		emit(i, v)
	}
	return nil
}

// aggDeque computes sliding min/max with a monotonic deque of positions:
// the front is the frame's best value; a new row evicts every worse or
// equal value behind it.
func (p *windowPart) aggDeque(ctx *EvalContext, agg *Aggregate, f Frame, from, to int, emit func(int, types.Datum)) error {
	sign := 1
	if agg.Name == "min" {
		sign = -1
	}
	var dq []int
	head := 0
	ce := -1
	for i := from; i < to; i++ {
		if err := checkCancel(ctx, i); err != nil {
			return err
		}
		s, e, err := p.frameBounds(ctx, f, i)
		if err != nil {
			return err
		}
		if ce < s {
			dq, head, ce = dq[:0], 0, s
		}
		for ; ce < e; ce++ {
			if err := checkCancel(ctx, ce); err != nil {
				return err
			}
			v := p.rows.Args(ce)[0]
			if v.IsNull() || !p.included(ce) {
				continue
			}
			for len(dq) > head && types.Compare(p.rows.Args(dq[len(dq)-1])[0], v)*sign <= 0 {
				dq = dq[:len(dq)-1]
			}
			dq = append(dq, ce)
		}
		for head < len(dq) && dq[head] < s {
			head++
		}
		if head > 1024 && head*2 > len(dq) {
			dq = append(dq[:0], dq[head:]...)
			head = 0
		}
		if head < len(dq) {
			emit(i, p.rows.Args(dq[head])[0])
		} else {
			emit(i, types.NullDatum)
		}
	}
	return nil
}

// aggRecompute evaluates the aggregate from scratch over each row's frame.
func (p *windowPart) aggRecompute(ctx *EvalContext, agg *Aggregate, f Frame, from, to int, emit func(int, types.Datum)) error {
	var segBuf [][2]int
	n := 0
	for i := from; i < to; i++ {
		if err := checkCancel(ctx, i); err != nil {
			return err
		}
		s, e, err := p.frameBounds(ctx, f, i)
		if err != nil {
			return err
		}
		segs := p.segments(f, i, s, e, segBuf)
		segBuf = segs
		st := agg.NewState()
		for _, sg := range segs {
			for j := sg[0]; j < sg[1]; j++ {
				n++
				if err := checkCancel(ctx, n); err != nil {
					return err
				}
				if p.included(j) {
					if err := st.Add(p.rows.Args(j)); err != nil {
						return err
					}
				}
			}
		}
		v, err := st.Result()
		if err != nil {
			return err
		}
		emit(i, v)
	}
	return nil
}
