package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// HopWindow expands each change into one change per hopping window that
// contains the row's time, with the same direction: the input row
// followed by window_start and window_end. It is stateless.
//
// The planner makes window_start part of the stream key, so the
// expansions of one row are distinct rows. An update pair becomes a
// delete of every old window followed by an insert of every new one (the
// two rows may lie in different windows); deletes before inserts keep a
// window shared by the old and the new row from being inserted twice.
// A row whose time is NULL is in no window and is dropped, on both
// halves of an update alike.
//
//	slide 2s, size 4s:  +(a, 5s)  ->  +(a, 5s, 2s, 6s) +(a, 5s, 4s, 8s)
type HopWindow struct {
	input   stream.Executor
	timeCol int
	slide   int64
	size    int64
	offset  int64
	n       int
	schema  []types.Type
	starts  []int64
}

// NewHopWindow returns the executor. slide and size are microseconds
// (size a positive multiple of slide, at most expr.MaxWindowSpan); the
// time column is a timestamp or timestamptz.
func NewHopWindow(input stream.Executor, timeCol int, slide, size, offset int64) (*HopWindow, error) {
	in := input.Schema()
	if timeCol < 0 || timeCol >= len(in) {
		return nil, fmt.Errorf("hop window: time column %d out of range", timeCol)
	}
	tt := in[timeCol]
	if tt.Kind != types.KindTimestamp && tt.Kind != types.KindTimestamptz {
		return nil, fmt.Errorf("hop window: time column has type %s", tt.Name())
	}
	if slide <= 0 || size <= 0 || size%slide != 0 || size > expr.MaxWindowSpan {
		return nil, fmt.Errorf("hop window: invalid slide %d / size %d", slide, size)
	}
	schema := append(append([]types.Type(nil), in...), tt, tt)
	return &HopWindow{input: input, timeCol: timeCol, slide: slide, size: size, offset: offset,
		n: int(size / slide), schema: schema}, nil
}

func (h *HopWindow) Schema() []types.Type { return h.schema }
func (h *HopWindow) Identity() string {
	return fmt.Sprintf("HopWindow(col %d, slide %dus, size %dus)", h.timeCol, h.slide, h.size)
}

func (h *HopWindow) Next(ctx context.Context) (stream.Message, error) {
	for {
		msg, err := h.input.Next(ctx)
		if err != nil || msg.Chunk == nil {
			return msg, err
		}
		out, err := h.expand(ctx, msg.Chunk)
		if err != nil {
			return stream.Message{}, err
		}
		if out.Len() > 0 {
			return stream.Message{Chunk: out}, nil
		}
	}
}

func (h *HopWindow) expand(ctx context.Context, in *types.Chunk) (*types.Chunk, error) {
	width := len(h.schema)
	inWidth := width - 2
	// One backing array for every output row of the chunk.
	buf := make([]types.Datum, 0, len(in.Rows)*h.n*width)
	out := &types.Chunk{Ops: make([]types.Op, 0, len(in.Rows)*h.n), Rows: make([]types.Row, 0, len(in.Rows)*h.n)}
	tz := h.schema[h.timeCol].Kind == types.KindTimestamptz
	var tk ticker
	for i, row := range in.Rows {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		t := row[h.timeCol]
		if t.IsNull() {
			continue
		}
		var ok bool
		if h.starts, ok = expr.WindowStarts(h.starts[:0], t.Int(), h.slide, h.offset, h.n); !ok {
			return nil, fmt.Errorf("%s: %w", h.Identity(), sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range"))
		}
		op := types.OpInsert
		if in.Ops[i] == types.OpDelete || in.Ops[i] == types.OpUpdateDelete {
			op = types.OpDelete
		}
		for _, s := range h.starts {
			buf = append(buf, row[:inWidth]...)
			if tz {
				buf = append(buf, types.DTimestamptz(s), types.DTimestamptz(s+h.size))
			} else {
				buf = append(buf, types.DTimestamp(s), types.DTimestamp(s+h.size))
			}
			out.Append(op, types.Row(buf[len(buf)-width:len(buf):len(buf)]))
		}
	}
	return out, nil
}
