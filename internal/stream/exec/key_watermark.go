package exec

import (
	"context"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// keyWatermarks is the watermark state of an operator whose state is
// grouped by key columns of its input: a HashAgg's group key, DISTINCT's
// columns, an OverWindow's PARTITION BY, a group top-N's group. A
// watermark on an input column of the key closes every key whose value in
// that column is below it: no later row (insert or delete) can reach it,
// since the generator drops late rows upstream. At the next barrier the
// operator deletes the closed keys' state in the vnodes it owns (cleanup),
// emits nothing for them (the view keeps its rows: RisingWave's default
// emit mode), and forwards the watermark on the key column's output
// position (emit) after its changes and before the barrier.
//
// The scan runs only at barriers where a watermark advanced; the state
// then holds the keys of open windows only, so the scan is bounded by the
// state the watermark keeps alive.
type keyWatermarks struct {
	// pending[p] is the latest watermark of key position p not yet
	// applied; applied[p] the last one cleaned up to.
	pending map[int]types.Datum
	applied map[int]types.Datum
	out     stream.WatermarkMonotone
	owns    func(v uint16) bool
	// cleaned counts the keys deleted so far, scanned the rows the
	// cleanup scans read (tests).
	cleaned, scanned int64
}

// WatermarkGroupKeys returns the positions in groupKey of the columns in
// wmCols (input columns carrying watermarks): the key columns whose
// watermarks clean an operator's state.
func WatermarkGroupKeys(groupKey, wmCols []int) []int {
	var out []int
	for p, c := range groupKey {
		for _, w := range wmCols {
			if c == w {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// observe records input watermark m for every position of key that is
// m's column.
func (w *keyWatermarks) observe(key []int, m *stream.Watermark) {
	if m.Val.IsNull() {
		return
	}
	for p, c := range key {
		if c != m.Col {
			continue
		}
		if w.pending == nil {
			w.pending = map[int]types.Datum{}
		}
		if old, ok := w.pending[p]; !ok || types.Compare(m.Val, old) > 0 {
			w.pending[p] = m.Val
		}
	}
}

// advanced reports whether a watermark moved since the last cleanup.
func (w *keyWatermarks) advanced() bool {
	for p, v := range w.pending {
		if old, ok := w.applied[p]; !ok || types.Compare(v, old) > 0 {
			return true
		}
	}
	return false
}

// cleanup deletes from t, if a watermark advanced since the last
// cleanup, every row in the vnodes the operator owns whose key is closed:
// for some key position p, the row's column at(p) is below the pending
// watermark of p. It calls also with each deleted row (in key order)
// to delete what else the operator keeps of it, and counts the keys
// also reports as deleted.
func (w *keyWatermarks) cleanup(ctx context.Context, t *state.Table, at func(p int) int, also func(row types.Row) (newKey bool, err error)) error {
	if !w.advanced() {
		return nil
	}
	// Collect first: the scan reads the table being deleted from. In
	// blocks: a closed window of a million rows never grows one slice
	// (I5, as in OverWindow).
	var doomed expr.Blocks[types.Row]
	// When the only watermarked key column is the table's first key
	// column, ascending (NULLs last), a vnode holds its closed rows first:
	// its scan ends at the first open row. (The state of a window the
	// watermark keeps open is then never read; an OverWindow or top-N
	// partitioned by window_start keeps all of a window's rows in one
	// vnode.)
	stopAtOpen := false
	if _, ok := w.pending[0]; ok && len(w.pending) == 1 {
		s := t.Schema()
		stopAtOpen = len(s.PK) > 0 && s.PK[0] == at(0) && (len(s.Desc) == 0 || !s.Desc[0])
	}
	err := scanOwned(ctx, t, w.owns, func(row types.Row) bool {
		w.scanned++
		for p, v := range w.pending {
			if d := row[at(p)]; !d.IsNull() && types.Compare(d, v) < 0 {
				doomed.Append(row)
				return true
			}
		}
		return !stopAtOpen
	})
	if err != nil {
		return err
	}
	var tk ticker
	for i := 0; i < doomed.Len(); i++ {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		r := doomed.At(i)
		t.Delete(r)
		newKey, err := also(r)
		if err != nil {
			return err
		}
		if newKey {
			w.cleaned++
		}
	}
	if w.applied == nil {
		w.applied = map[int]types.Datum{}
	}
	for p, v := range w.pending {
		w.applied[p] = v
	}
	return nil
}

// keyRuns tells, over rows scanned in key order, where a new key starts
// (for a table holding several rows per key, keyed by it first).
type keyRuns struct {
	last    string
	started bool
}

// isNew reports whether key differs from the previous one.
func (r *keyRuns) isNew(key []byte) bool {
	if r.started && string(key) == r.last {
		return false
	}
	r.started, r.last = true, string(key)
	return true
}

// emit queues the output watermarks: that of key position p on output
// column outCol(p).
func (w *keyWatermarks) emit(q *queue, outCol func(p int) int) {
	for p, v := range w.pending {
		m := &stream.Watermark{Col: outCol(p), Val: v}
		if w.out.Advance(m) {
			q.push(stream.Message{Watermark: m})
		}
	}
}

// identityCol maps a key position to the same output column (the
// operator's output starts with its key columns).
func identityCol(p int) int { return p }
