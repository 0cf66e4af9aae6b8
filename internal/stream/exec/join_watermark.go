package exec

import (
	"context"
	"fmt"

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

// cleanup deletes the stored rows whose key is below a closed bound.
func (j *HashJoin) cleanup(ctx context.Context) error {
	bounds, advanced := j.bounds()
	if !advanced {
		return nil
	}
	var tk ticker
	for side := range j.sides {
		s := &j.sides[side]
		distKey := s.State.Schema().DistKey
		it, err := s.State.Iter(ctx, nil)
		if err != nil {
			return fmt.Errorf("%s: watermark cleanup: %w", j.Identity(), err)
		}
		var doomed []types.Row
		for it.Next() {
			if err := tk.tick(ctx); err != nil {
				it.Close()
				return err
			}
			row := it.Row()
			closed := false
			for i, b := range bounds {
				if d := row[s.Keys[i]]; !b.IsNull() && !d.IsNull() && types.Compare(d, b) < 0 {
					closed = true
					break
				}
			}
			if closed && (j.wm.owns == nil || j.wm.owns(types.Vnode(row, distKey))) {
				doomed = append(doomed, row)
			}
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return fmt.Errorf("%s: watermark cleanup: %w", j.Identity(), err)
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
	return nil
}
