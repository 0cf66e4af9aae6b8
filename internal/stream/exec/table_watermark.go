package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// tableWatermark is a table's WATERMARK FOR: the table actor generates
// watermarks from the rows it stores (DML statements and its connector
// alike) and drops late changes before they are stored or emitted, so
// that the table and every view reading it agree on what happened (as
// RisingWave's WatermarkFilter in front of a table's Materialize). A
// statement's late change is dropped alone: an INSERT of a late row
// stores nothing, a DELETE or UPDATE of a late row leaves it in place,
// and the statement still reports the rows it matched.
//
// The watermark is not persisted: at startup (after a restart or
// recovery) it is recomputed from the stored rows, which hold every
// on-time row ever inserted except those deleted since. (Deleting the
// rows with the latest times therefore lowers the watermark after a
// restart; rows between the two are accepted again.)
type tableWatermark struct {
	gen      *WatermarkGen
	restored bool
	pending  *stream.Watermark
}

// SetWatermark makes the table generate watermarks with gen.
func (e *TableExecutor) SetWatermark(gen *WatermarkGen) { e.wm = &tableWatermark{gen: gen} }

// next restores the watermark at the first call, then returns the pending
// watermark message, if any.
func (t *tableWatermark) next(ctx context.Context, e *TableExecutor) (stream.Message, bool, error) {
	if !t.restored {
		t.restored = true
		it, err := e.state.Iter(ctx, nil)
		if err != nil {
			return stream.Message{}, false, fmt.Errorf("%s: restore watermark: %w", e.Identity(), err)
		}
		var tk ticker
		for it.Next() {
			if err := tk.tick(ctx); err != nil {
				it.Close()
				return stream.Message{}, false, err
			}
			if _, err := t.gen.Observe(it.Row()); err != nil {
				it.Close()
				return stream.Message{}, false, fmt.Errorf("%s: restore watermark: %w", e.Identity(), err)
			}
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return stream.Message{}, false, fmt.Errorf("%s: restore watermark: %w", e.Identity(), err)
		}
	}
	if t.pending != nil {
		w := t.pending
		t.pending = nil
		return stream.Message{Watermark: w}, true, nil
	}
	return stream.Message{}, false, nil
}

func (t *tableWatermark) note(w *stream.Watermark) {
	if w != nil {
		t.pending = w
	}
}

// filterIngest drops a connector chunk's late rows.
func (t *tableWatermark) filterIngest(c *types.Chunk) (*types.Chunk, error) {
	out, w, err := t.gen.Filter(c)
	if err != nil {
		return nil, err
	}
	t.note(w)
	return out, nil
}

// filterStatement drops a statement's late changes; when it drops any,
// the statement's writes are rebuilt from the changes kept (in statement
// order, so the last write of each key wins as before).
func (t *tableWatermark) filterStatement(w *TableWriter) error {
	kept, wm, err := t.gen.Filter(&w.changes)
	if err != nil {
		return err
	}
	t.note(wm)
	if kept == &w.changes {
		return nil
	}
	w.changes = *kept
	w.overlay = map[string]*overlayEntry{}
	w.order = nil
	for i, row := range kept.Rows {
		if kept.Ops[i].IsInsert() {
			w.set(row, row)
		} else {
			w.set(row, nil)
		}
	}
	return nil
}
