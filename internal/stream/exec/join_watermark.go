package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// joinWatermarks is a HashJoin's watermark state. For an equi-join key
// pair whose columns carry watermarks on both sides, no later row of
// either side has that key below the smaller of the two watermarks, so a
// stored row below it can never match, be matched, or change again: at
// the next barrier the join deletes such rows from both sides' state
// tables (and their keys from the caches). Nothing is emitted: the output
// already holds every pair of those rows (and, for outer joins, their
// NULL-padded rows), and keeps them. The join forwards no watermark.
type joinWatermarks struct {
	// latest[side][col] is the side's latest watermark on input col.
	latest  [2]map[int]types.Datum
	applied []types.Datum // per key pair: the bound last cleaned below
	owns    func(v uint16) bool
	cleaned int64
	// intervals are the residual condition's bounds (JoinIntervalBound);
	// ivApplied their limits at the last cleanup.
	intervals []JoinIntervalBound
	ivApplied []intervalLimit
	// index[side], when set, orders the side's stored rows by the value
	// its one interval bound closes them by (cleanindex.go).
	index [2]*cleanIndex
}

// SetVnodeOwner restricts watermark cleanup to the rows of the vnodes
// owns reports (the actor's share of the state tables).
func (j *HashJoin) SetVnodeOwner(owns func(v uint16) bool) { j.wm.owns = owns }

// CleanedRows reports how many stored rows watermark cleanup has deleted.
func (j *HashJoin) CleanedRows() int64 { return j.wm.cleaned }

func (w *joinWatermarks) observe(side int, m *stream.Watermark) {
	if m.Val.IsNull() {
		return
	}
	if w.latest[side] == nil {
		w.latest[side] = map[int]types.Datum{}
	}
	if old, ok := w.latest[side][m.Col]; !ok || types.Compare(m.Val, old) > 0 {
		w.latest[side][m.Col] = m.Val
	}
}

// bounds returns, per key pair, the bound below which keys are closed
// (NullDatum: none yet), and whether any advanced since the last cleanup.
func (j *HashJoin) bounds() ([]types.Datum, bool) {
	w := &j.wm
	if w.applied == nil {
		w.applied = make([]types.Datum, len(j.sides[0].Keys))
	}
	out := make([]types.Datum, len(j.sides[0].Keys))
	advanced := false
	for i := range out {
		l, lok := w.latest[0][j.sides[0].Keys[i]]
		r, rok := w.latest[1][j.sides[1].Keys[i]]
		if !lok || !rok {
			continue
		}
		b := l
		if types.Compare(r, l) < 0 {
			b = r
		}
		out[i] = b
		if w.applied[i].IsNull() || types.Compare(b, w.applied[i]) > 0 {
			advanced = true
		}
	}
	return out, advanced
}

// cleanup deletes the stored rows whose key is below a closed bound or
// that an interval bound has closed: from a side's clean index where it
// has a ready one (cleanindex.go), otherwise by scanning the side's rows.
func (j *HashJoin) cleanup(ctx context.Context) error {
	bounds, advanced := j.bounds()
	ec := newEvalContext(ctx, j.loc)
	limits, ivAdvanced := j.intervalLimits(ec)
	if !advanced && !ivAdvanced {
		return nil
	}
	for side := range j.sides {
		s := &j.sides[side]
		ix := j.wm.index[side]
		if ix != nil && ix.keyBoundActive(bounds) {
			// The index orders rows by one interval bound's value only.
			j.wm.index[side], ix = nil, nil
		}
		if ix != nil && ix.ready {
			if err := j.cleanFromIndex(ctx, side, ix, limits); err != nil {
				return err
			}
			continue
		}
		var scratch types.Row
		closed := func(row types.Row) bool {
			for i, b := range bounds {
				if d := row[s.Keys[i]]; !b.IsNull() && !d.IsNull() && types.Compare(d, b) < 0 {
					return true
				}
			}
			for i, l := range limits {
				iv := &j.wm.intervals[i]
				if !l.ok || iv.Side != side {
					continue
				}
				d := row[iv.ACol]
				if d.IsNull() || (!iv.AppendOnly && types.Compare(d, l.self) >= 0) {
					continue
				}
				a, ok := intervalValue(ec, iv, d, &scratch)
				if ok && types.Compare(a, l.limit) < 0 {
					return true
				}
			}
			return false
		}
		var doomed []types.Row
		err := scanOwned(ctx, s.State, j.wm.owns, func(row types.Row) bool {
			if closed(row) {
				doomed = append(doomed, row)
			} else if ix != nil {
				// Building the index: every row the cleanup keeps enters
				// it; later inserts add theirs (HashJoin.insert).
				j.indexRow(side, row)
			}
			return true
		})
		if err != nil {
			return fmt.Errorf("%s: watermark cleanup: %w", j.Identity(), err)
		}
		if ix != nil && j.wm.index[side] == ix {
			ix.ready = true
		}
		for _, row := range doomed {
			s.State.Delete(row)
			if ck, ok := j.cacheKey(side, row); ok {
				s.cache.lru.remove(ck)
			}
		}
		j.wm.cleaned += int64(len(doomed))
	}
	for i, b := range bounds {
		if !b.IsNull() {
			j.wm.applied[i] = b
		}
	}
	for i, l := range limits {
		if l.ok {
			j.wm.ivApplied[i] = l
		}
	}
	return nil
}

// intervalValue is A(r) of bound iv for the row's value d in column
// ACol (false when it is NULL or fails to evaluate). *scratch is reused
// across calls.
func intervalValue(ec *expr.EvalContext, iv *JoinIntervalBound, d types.Datum, scratch *types.Row) (types.Datum, bool) {
	if _, plain := iv.A.(*expr.ColumnRef); plain {
		return d, true
	}
	// A references only its column: a scratch row of NULLs holding it
	// will do.
	if *scratch == nil {
		*scratch = make(types.Row, iv.Width)
		for k := range *scratch {
			(*scratch)[k] = types.NullDatum
		}
	}
	(*scratch)[iv.AIdx] = d
	v, err := iv.A.Eval(ec, *scratch)
	if err != nil || v.IsNull() {
		return types.NullDatum, false
	}
	return v, true
}

// JoinIntervalBound is a conjunct A >= B (or A > B) of a join's residual
// condition where A is monotone in one column of side Side's rows and B
// in one column of the other side's (expr.MonotoneIn): Nexmark q7's
// B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND
// B1.date_time gives two. A stored row r of Side can only match rows of
// the other side whose B is at most A(r); once every later row of the
// other side has B above A(r) (its watermark on B's column, W, gives B
// at least B(W)) and r itself can no longer change (r's column is below
// Side's own watermark), r is deleted.
type JoinIntervalBound struct {
	Side int
	// ACol and BCol are the columns of A (in Side's rows) and of B (in
	// the other side's rows).
	ACol, BCol int
	// A and B are evaluated over a row of Width columns holding the
	// column's value at AIdx (resp. BIdx) and NULL elsewhere.
	A, B       expr.Expr
	AIdx, BIdx int
	Width      int
	// AppendOnly: side Side only ever inserts rows with fresh keys (a
	// source, seen through filters and projections), so a stored row
	// never changes and needs no watermark of its own to be deleted:
	// the other side's watermark on BCol alone closes it (Nexmark q4's
	// auctions, A.expires >= B.date_time).
	AppendOnly bool
}

// SetIntervalBounds makes watermark cleanup use the residual condition's
// interval bounds.
func (j *HashJoin) SetIntervalBounds(bs []JoinIntervalBound) {
	j.wm.intervals = bs
	j.setupCleanIndexes()
}

// intervalLimit is one bound's cleanup limits at a barrier.
type intervalLimit struct {
	ok    bool
	limit types.Datum // rows with A(r) < limit match no later row
	self  types.Datum // and rows with r[ACol] < self never change
}

func evalAt(ec *expr.EvalContext, e expr.Expr, width, idx int, v types.Datum) (types.Datum, bool) {
	return deriveWatermark(ec, e, width, idx, v)
}

// intervalLimits computes the bounds' limits and whether any advanced.
func (j *HashJoin) intervalLimits(ec *expr.EvalContext) ([]intervalLimit, bool) {
	w := &j.wm
	if len(w.intervals) == 0 {
		return nil, false
	}
	if w.ivApplied == nil {
		w.ivApplied = make([]intervalLimit, len(w.intervals))
	}
	out := make([]intervalLimit, len(w.intervals))
	advanced := false
	for i, b := range w.intervals {
		other, ok1 := w.latest[1-b.Side][b.BCol]
		self, ok2 := w.latest[b.Side][b.ACol]
		if b.AppendOnly {
			self, ok2 = types.NullDatum, true
		}
		if !ok1 || !ok2 {
			continue
		}
		limit, ok := evalAt(ec, b.B, b.Width, b.BIdx, other)
		if !ok {
			continue
		}
		out[i] = intervalLimit{ok: true, limit: limit, self: self}
		prev := w.ivApplied[i]
		if !prev.ok || types.Compare(limit, prev.limit) > 0 || (!b.AppendOnly && types.Compare(self, prev.self) > 0) {
			advanced = true
		}
	}
	return out, advanced
}
