package batch

import (
	"context"
	"github.com/runneldb/runnel/internal/expr"
	"slices"
	"sort"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// windowExec computes window functions. It reads its whole input, then for
// each call partitions the rows, sorts every partition by the call's ORDER
// BY and computes the value of each row. Rows come out grouped by the
// first call's partitions in its order (the order PostgreSQL's WindowAgg
// produces them).
type windowExec struct {
	r    *runner
	in   executor
	node *plan.Window
	out  []types.Row
	i    int
	done bool
	c    canceler
	mem  memHold
}

func (w *windowExec) Next(ctx context.Context) (types.Row, error) {
	if !w.done {
		w.done = true
		if err := w.compute(ctx); err != nil {
			return nil, err
		}
	}
	if w.i >= len(w.out) {
		return nil, nil
	}
	w.i++
	return w.out[w.i-1], nil
}

func (w *windowExec) Close() {
	w.in.Close()
	w.mem.release()
}

type winPart struct {
	rows []int           // input row indices, sorted by ORDER BY
	keys [][]types.Datum // ORDER BY key of rows[k]
}

func (w *windowExec) compute(ctx context.Context) error {
	w.mem.a = w.r.mem
	rows, err := drain(ctx, w.in, &w.mem, "window")
	if err != nil {
		return err
	}
	ec := w.r.evalCtx(ctx)
	results := make([][]types.Datum, len(w.node.Calls))
	var outOrder []int
	for ci, call := range w.node.Calls {
		parts := map[string]*winPart{}
		var order []*winPart
		var buf []byte
		for i, row := range rows {
			if err := w.c.check(ctx); err != nil {
				return err
			}
			pk, err := evalAll(ec, call.PartitionBy, row, nil)
			if err != nil {
				return err
			}
			buf = rowKey(buf, pk)
			p := parts[string(buf)]
			if p == nil {
				p = &winPart{}
				parts[string(buf)] = p
				order = append(order, p)
			}
			ok, err := evalAll(ec, sortExprs(call.OrderBy), row, nil)
			if err != nil {
				return err
			}
			// The row's place in its partition, its sort key, its place in
			// the sorted copy and its result.
			if err := w.mem.grow("window", 3*8+2*sliceSize+rowBytes(ok)+datumSize); err != nil {
				return err
			}
			p.rows = append(p.rows, i)
			p.keys = append(p.keys, ok)
		}
		res := make([]types.Datum, len(rows))
		for _, p := range order {
			idx := make([]int, len(p.rows))
			for k := range idx {
				idx[k] = k
			}
			slices.SortStableFunc(idx, func(a, b int) int { return compareKeys(call.OrderBy, p.keys[a], p.keys[b]) })
			sorted := &winPart{rows: make([]int, len(idx)), keys: make([][]types.Datum, len(idx))}
			for k, x := range idx {
				sorted.rows[k] = p.rows[x]
				sorted.keys[k] = p.keys[x]
			}
			if err := w.computePartition(ctx, call, rows, sorted, res); err != nil {
				return err
			}
			if ci == 0 {
				outOrder = append(outOrder, sorted.rows...)
			}
		}
		results[ci] = res
	}
	if len(w.node.Calls) == 0 {
		for i := range rows {
			outOrder = append(outOrder, i)
		}
	}
	w.out = make([]types.Row, 0, len(rows))
	for _, i := range outOrder {
		if err := w.mem.grow("window", sliceSize+int64(len(rows[i])+len(results))*datumSize); err != nil {
			return err
		}
		out := make(types.Row, 0, len(rows[i])+len(results))
		out = append(out, rows[i]...)
		for ci := range results {
			out = append(out, results[ci][i])
		}
		w.out = append(w.out, out)
	}
	return nil
}

// peerBounds returns, for every position, the first and one-past-last
// position of its peer group (rows with equal ORDER BY keys).
func peerBounds(call *plan.WindowCall, p *winPart) (first, last []int, group []int) {
	n := len(p.rows)
	first, last, group = make([]int, n), make([]int, n), make([]int, n)
	g := 0
	for s := 0; s < n; {
		e := s + 1
		for e < n && compareKeys(call.OrderBy, p.keys[s], p.keys[e]) == 0 {
			e++
		}
		for k := s; k < e; k++ {
			first[k], last[k], group[k] = s, e, g
		}
		g++
		s = e
	}
	return first, last, group
}

func (w *windowExec) computePartition(ctx context.Context, call *plan.WindowCall, rows []types.Row, p *winPart, res []types.Datum) error {
	ec := w.r.evalCtx(ctx)
	n := len(p.rows)
	first, last, group := peerBounds(call, p)
	args := make([][]types.Datum, n)
	var argBytes int64
	for k, ri := range p.rows {
		a, err := evalAll(ec, call.Args, rows[ri], nil)
		if err != nil {
			return err
		}
		if err := w.mem.grow("window", rowBytes(a)); err != nil {
			return err
		}
		argBytes += rowBytes(a)
		args[k] = a
	}
	// The arguments are dropped with the partition.
	defer func() {
		w.mem.a.shrink(argBytes)
		w.mem.n -= argBytes
	}()
	switch call.Name {
	case "row_number":
		for k, ri := range p.rows {
			res[ri] = types.DInt64(int64(k + 1))
		}
		return nil
	case "rank":
		for k, ri := range p.rows {
			res[ri] = types.DInt64(int64(first[k] + 1))
		}
		return nil
	case "dense_rank":
		for k, ri := range p.rows {
			res[ri] = types.DInt64(int64(group[k] + 1))
		}
		return nil
	case "percent_rank":
		for k, ri := range p.rows {
			v := 0.0
			if n > 1 {
				v = float64(first[k]) / float64(n-1)
			}
			res[ri] = types.DFloat64(v)
		}
		return nil
	case "cume_dist":
		for k, ri := range p.rows {
			res[ri] = types.DFloat64(float64(last[k]) / float64(n))
		}
		return nil
	case "ntile":
		for k, ri := range p.rows {
			if args[k][0].IsNull() {
				res[ri] = types.NullDatum
				continue
			}
			buckets := args[k][0].Int()
			if buckets <= 0 {
				return sqlerr.New("22014", "argument of ntile must be greater than zero")
			}
			// PostgreSQL: the first n%buckets buckets get one extra row.
			per, extra := int64(n)/buckets, int64(n)%buckets
			pos := int64(k)
			var b int64
			if pos < extra*(per+1) {
				b = pos / (per + 1)
			} else {
				b = extra + (pos-extra*(per+1))/max(per, 1)
			}
			res[ri] = types.DInt64(b + 1)
		}
		return nil
	case "lag", "lead":
		for k, ri := range p.rows {
			off := int64(1)
			if len(args[k]) > 1 {
				if args[k][1].IsNull() {
					res[ri] = types.NullDatum
					continue
				}
				off = args[k][1].Int()
			}
			if call.Name == "lag" {
				off = -off
			}
			t := int64(k) + off
			switch {
			case t >= 0 && t < int64(n):
				res[ri] = args[t][0]
			case len(args[k]) > 2:
				res[ri] = args[k][2]
			default:
				res[ri] = types.NullDatum
			}
		}
		return nil
	}
	// Frame-based functions: aggregates, first_value, last_value, nth_value.
	fr := call.Frame
	if fr == nil {
		fr = &plan.Frame{Mode: plan.FrameRange, Start: plan.FrameBound{Kind: plan.UnboundedPreceding}, End: plan.FrameBound{Kind: plan.CurrentRow}}
	}
	var pass []bool
	if call.Filter != nil {
		pass = make([]bool, n)
		for k, ri := range p.rows {
			ok, err := evalBool(ec, call.Filter, rows[ri])
			if err != nil {
				return err
			}
			pass[k] = ok
		}
	}
	offsets := func(b plan.FrameBound) (int64, types.Datum, error) {
		if b.Offset == nil {
			return 0, types.NullDatum, nil
		}
		d, err := b.Offset.Eval(ec, nil)
		if err != nil {
			return 0, d, err
		}
		if d.IsNull() {
			return 0, d, sqlerr.New("22013", "frame starting offset must not be null")
		}
		if d.Kind() <= types.KindInt64 && d.Int() < 0 {
			return 0, d, sqlerr.New("22013", "frame starting offset must not be negative")
		}
		return d.Int(), d, nil
	}
	startOff, startD, err := offsets(fr.Start)
	if err != nil {
		return err
	}
	endOff, endD, err := offsets(fr.End)
	if err != nil {
		return err
	}
	// bound returns the frame position for one end: for the start, the
	// first position in the frame; for the end, one past the last.
	bound := func(b plan.FrameBound, off int64, offD types.Datum, k int, isEnd bool) int {
		switch b.Kind {
		case plan.UnboundedPreceding:
			return 0
		case plan.UnboundedFollowing:
			return n
		case plan.CurrentRow:
			switch fr.Mode {
			case plan.FrameRows:
				if isEnd {
					return k + 1
				}
				return k
			default:
				if isEnd {
					return last[k]
				}
				return first[k]
			}
		}
		sign := int64(1)
		if b.Kind == plan.OffsetPreceding {
			sign = -1
		}
		switch fr.Mode {
		case plan.FrameRows:
			t := int64(k) + sign*off
			if isEnd {
				t++
			}
			return int(min(max(t, 0), int64(n)))
		case plan.FrameGroups:
			tg := int64(group[k]) + sign*off
			// Groups are numbered in order, so bounds are binary searches.
			if isEnd {
				// one past the last row of group tg
				return sort.Search(n, func(pos int) bool { return int64(group[pos]) > tg })
			}
			return sort.Search(n, func(pos int) bool { return int64(group[pos]) >= tg })
		default: // RANGE with offset: compare the single ORDER BY key
			desc := len(call.OrderBy) > 0 && call.OrderBy[0].Desc
			cur := p.keys[k][0]
			if cur.IsNull() {
				if isEnd {
					return last[k]
				}
				return first[k]
			}
			delta := rangeDelta(offD)
			target := types.ToFloat(numericView(cur)) + float64(sign)*delta*boolSign(desc)
			inFrameFromStart := func(pos int) bool { // position pos is at or after the bound
				v := p.keys[pos][0]
				if v.IsNull() {
					return !call.OrderBy[0].NullsFirst
				}
				x := types.ToFloat(numericView(v))
				if desc {
					return x <= target
				}
				return x >= target
			}
			// Rows are sorted by the key, so both predicates are monotone.
			if isEnd {
				return sort.Search(n, func(pos int) bool { return afterTarget(p, pos, target, desc, call) })
			}
			return sort.Search(n, inFrameFromStart)
		}
	}
	exclude := func(k, pos int) bool {
		switch fr.Exclude {
		case 1:
			return pos == k
		case 2:
			return pos >= first[k] && pos < last[k]
		case 3:
			return pos != k && pos >= first[k] && pos < last[k]
		}
		return false
	}
	var state expr.AggState
	curStart, curEnd := -1, -1
	for k, ri := range p.rows {
		if err := w.c.check(ctx); err != nil {
			return err
		}
		s := bound(fr.Start, startOff, startD, k, false)
		e := bound(fr.End, endOff, endD, k, true)
		if e < s {
			e = s
		}
		switch call.Name {
		case "first_value", "last_value", "nth_value":
			var members []int
			for pos := s; pos < e; pos++ {
				if !exclude(k, pos) {
					members = append(members, pos)
				}
			}
			res[ri] = types.NullDatum
			switch call.Name {
			case "first_value":
				if len(members) > 0 {
					res[ri] = args[members[0]][0]
				}
			case "last_value":
				if len(members) > 0 {
					res[ri] = args[members[len(members)-1]][0]
				}
			case "nth_value":
				nth := args[k][1]
				if nth.IsNull() {
					continue
				}
				if nth.Int() <= 0 {
					return sqlerr.New("22016", "argument of nth_value must be greater than zero")
				}
				if int(nth.Int()) <= len(members) {
					res[ri] = args[members[nth.Int()-1]][0]
				}
			}
			continue
		}
		if call.Agg == nil {
			return sqlerr.Errorf(sqlerr.UndefinedFunction, "window function %s is not supported", call.Name)
		}
		// Frames move forward: add rows entering at the end, retract rows
		// leaving at the start (retractable states make that O(1) for
		// sum/count/avg). Exclusion or a frame moving backwards
		// recomputes.
		if state != nil && fr.Exclude == 0 && s >= curStart && e >= curEnd && s <= curEnd {
			for pos := curStart; pos < s; pos++ {
				if err := w.c.check(ctx); err != nil {
					return err
				}
				if pass != nil && !pass[pos] {
					continue
				}
				if err := state.Retract(args[pos]); err != nil {
					return err
				}
			}
			curStart = s
		} else {
			state = call.Agg.NewRetractableState()
			curStart, curEnd = s, s
		}
		for pos := curEnd; pos < e; pos++ {
			if err := w.c.check(ctx); err != nil {
				return err
			}
			if exclude(k, pos) || (pass != nil && !pass[pos]) {
				continue
			}
			if err := state.Add(args[pos]); err != nil {
				return err
			}
		}
		curEnd = e
		d, err := state.Result()
		if err != nil {
			return err
		}
		// A frame's aggregate can be as large as the frame (array_agg
		// OVER (ORDER BY ...) holds n²/2 elements over a partition).
		if err := w.mem.grow("window "+call.Name, datumBytes(d)-datumSize); err != nil {
			return err
		}
		res[ri] = d
		if fr.Exclude != 0 {
			state = nil
		}
	}
	return nil
}

func boolSign(desc bool) float64 {
	if desc {
		return -1
	}
	return 1
}

// afterTarget reports whether position pos lies beyond the end bound
// target of a RANGE frame.
func afterTarget(p *winPart, pos int, target float64, desc bool, call *plan.WindowCall) bool {
	v := p.keys[pos][0]
	if v.IsNull() {
		return !call.OrderBy[0].NullsFirst
	}
	x := types.ToFloat(numericView(v))
	if desc {
		return x < target
	}
	return x > target
}

// numericView maps an ORDER BY key to a number for RANGE offsets: numbers
// as themselves, dates and timestamps as microseconds.
func numericView(d types.Datum) types.Datum {
	switch d.Kind() {
	case types.KindDate:
		return types.DFloat64(float64(d.Int()) * 86400e6)
	case types.KindTimestamp, types.KindTimestamptz, types.KindTime:
		return types.DFloat64(float64(d.Int()))
	}
	return d
}

// rangeDelta is a RANGE offset as a number in numericView's unit.
func rangeDelta(d types.Datum) float64 {
	if d.Kind() == types.KindInterval {
		iv := d.Interval()
		return (float64(iv.Months)*30+float64(iv.Days))*86400e6 + float64(iv.Micros)
	}
	return types.ToFloat(d)
}
