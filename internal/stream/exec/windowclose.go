package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// WindowClose is EMIT ON WINDOW CLOSE: it holds its input's rows in a
// state table until the watermark on column col passes them, then emits
// each once, as an insert, and forgets it. Its output only grows.
//
// The input's rows below the watermark are final (the planner requires col
// to be in the stream key of an input that closes its groups by that
// watermark), so what is emitted is never retracted. A change arriving for
// a row already emitted (below the last watermark applied) is late and
// dropped, as is a row whose col is NULL (no watermark ever passes it).
//
// Rows are applied to the state as they come; the watermark is applied at
// the next barrier, after the epoch's changes, and then forwarded on col.
// The state is keyed by col first, so each vnode's scan stops at its first
// row at or above the watermark. After recovery the watermark starts again
// from nothing (watermarks are not persisted; upstream drops late rows by
// its own persisted watermark), and nothing emitted is in the state to be
// emitted twice (I7).
type WindowClose struct {
	input   stream.Executor
	col     int
	table   *state.Table
	owns    func(uint16) bool
	pending types.Datum // the largest watermark seen; NULL: none
	applied types.Datum // the watermark emitted up to; NULL: none
	q       queue
}

// WindowCloseStateSchema returns the state table schema: the input row,
// keyed by col then the input's stream key, distributed by distKey (empty:
// one vnode).
func WindowCloseStateSchema(name string, inTypes []types.Type, col int, inputKey, distKey []int) state.Schema {
	s := state.Schema{Name: name, Types: append([]types.Type(nil), inTypes...), PK: []int{col}, DistKey: distKey}
	for _, k := range inputKey {
		if k != col {
			s.PK = append(s.PK, k)
		}
	}
	return s
}

// NewWindowClose returns the buffer over input closing rows by the
// watermark on col.
func NewWindowClose(input stream.Executor, col int, table *state.Table) (*WindowClose, error) {
	if err := checkCols("window close", []int{col}, len(input.Schema())); err != nil {
		return nil, err
	}
	if len(table.Schema().Types) != len(input.Schema()) {
		return nil, fmt.Errorf("window close: state table %d has %d columns; want %d (see WindowCloseStateSchema)", table.ID(), len(table.Schema().Types), len(input.Schema()))
	}
	return &WindowClose{input: input, col: col, table: table}, nil
}

// SetVnodeOwner restricts the scans to the vnodes owns reports (the
// actor's share of the state table).
func (w *WindowClose) SetVnodeOwner(owns func(v uint16) bool) { w.owns = owns }

func (w *WindowClose) Schema() []types.Type { return w.input.Schema() }
func (w *WindowClose) Identity() string {
	return fmt.Sprintf("WindowClose($%d; state table %d)", w.col, w.table.ID())
}

func (w *WindowClose) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := w.q.pop(); ok {
			return msg, nil
		}
		msg, err := w.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if wm := msg.Watermark; wm != nil {
			if wm.Col == w.col && !wm.Val.IsNull() && (w.pending.IsNull() || types.Compare(wm.Val, w.pending) > 0) {
				w.pending = wm.Val
			}
			continue
		}
		if b := msg.Barrier; b != nil {
			if err := w.close(ctx); err != nil {
				return stream.Message{}, err
			}
			if err := commitAll(ctx, w.Identity(), b.Curr, w.table); err != nil {
				return stream.Message{}, err
			}
			w.q.push(msg)
			continue
		}
		var tk ticker
		for i, row := range msg.Chunk.Rows {
			if err := tk.tick(ctx); err != nil {
				return stream.Message{}, err
			}
			v := row[w.col]
			if v.IsNull() || (!w.applied.IsNull() && types.Compare(v, w.applied) < 0) {
				continue // never closes, or closed already: late
			}
			if msg.Chunk.Ops[i].IsInsert() {
				w.table.Insert(row)
			} else {
				w.table.Delete(row)
			}
		}
	}
}

// close emits and forgets the rows below the pending watermark, then
// forwards it.
func (w *WindowClose) close(ctx context.Context) error {
	if w.pending.IsNull() || (!w.applied.IsNull() && types.Compare(w.pending, w.applied) <= 0) {
		return nil
	}
	wm := w.pending
	var closed expr.Blocks[types.Row]
	err := scanOwned(ctx, w.table, w.owns, func(row types.Row) bool {
		if types.Compare(row[w.col], wm) >= 0 {
			return false
		}
		closed.Append(row)
		return true
	})
	if err != nil {
		return fmt.Errorf("%s: %w", w.Identity(), err)
	}
	var o output
	for i := 0; i < closed.Len(); i++ {
		row := closed.At(i)
		w.table.Delete(row)
		o.emit(types.OpInsert, row)
	}
	w.q.pushChunks(&o)
	w.q.push(stream.Message{Watermark: &stream.Watermark{Col: w.col, Val: wm}})
	w.applied = wm
	return nil
}
