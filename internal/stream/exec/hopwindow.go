package exec

import (
	"context"
	"fmt"
	"time"

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
//
// With a projection (NewHopWindowProject) it emits the projection of
// each expanded row instead, without building the expanded row: the
// planner fuses HOP with the projection above it (typically an
// aggregation's, keeping two or three of the input's columns), which
// saves copying every input column once per window.
type HopWindow struct {
	input   stream.Executor
	timeCol int
	slide   int64
	size    int64
	offset  int64
	n       int
	inWidth int
	tz      bool // the time column is a timestamptz
	schema  []types.Type
	starts  []int64
	// exprs, when set, are evaluated over each expanded row (input
	// columns, window_start, window_end) to give the output row.
	exprs []expr.Expr
	loc   *time.Location
	// scratch is the expanded row the projection reads.
	scratch types.Row
	pending []stream.Message
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
		n: int(size / slide), inWidth: len(in), tz: tt.Kind == types.KindTimestamptz, schema: schema}, nil
}

// NewHopWindowProject is NewHopWindow followed by a projection: exprs are
// bound against the expanded row (the input columns, window_start,
// window_end). loc is the view's session time zone (nil: UTC).
func NewHopWindowProject(input stream.Executor, timeCol int, slide, size, offset int64, exprs []expr.Expr, loc *time.Location) (*HopWindow, error) {
	h, err := NewHopWindow(input, timeCol, slide, size, offset)
	if err != nil {
		return nil, err
	}
	h.exprs, h.loc = exprs, loc
	h.schema = make([]types.Type, len(exprs))
	for i, e := range exprs {
		h.schema[i] = e.Type()
	}
	h.scratch = make(types.Row, h.inWidth+2)
	return h, nil
}

func (h *HopWindow) Schema() []types.Type { return h.schema }
func (h *HopWindow) Identity() string {
	s := fmt.Sprintf("HopWindow(col %d, slide %dus, size %dus", h.timeCol, h.slide, h.size)
	for _, e := range h.exprs {
		s += ", " + e.String()
	}
	return s + ")"
}

// Watermarks: an input column's watermark passes to the same column of
// the expanded row; the time column's watermark W also gives watermarks
// on window_start (the first window start of a row at time W: every
// later row's windows start there or later, as a row's first window
// start never decreases with its time) and window_end (that plus the
// size). With a projection, they are carried through the expressions
// that are monotone in one such column (see Project).
func (h *HopWindow) watermark(ctx context.Context, w *stream.Watermark) error {
	type colWM struct {
		col int
		v   types.Datum
	}
	marks := []colWM{{w.Col, w.Val}}
	if w.Col == h.timeCol && !w.Val.IsNull() {
		if starts, ok := expr.WindowStarts(nil, w.Val.Int(), h.slide, h.offset, h.n); ok {
			s := starts[0]
			if h.tz {
				marks = append(marks, colWM{h.inWidth, types.DTimestamptz(s)}, colWM{h.inWidth + 1, types.DTimestamptz(s + h.size)})
			} else {
				marks = append(marks, colWM{h.inWidth, types.DTimestamp(s)}, colWM{h.inWidth + 1, types.DTimestamp(s + h.size)})
			}
		}
	}
	if h.exprs == nil {
		for _, m := range marks {
			h.pending = append(h.pending, stream.Message{Watermark: &stream.Watermark{Col: m.col, Val: m.v}})
		}
		return nil
	}
	ec := newEvalContext(ctx, h.loc)
	for _, m := range marks {
		for _, j := range WatermarkOutputs(h.exprs, m.col) {
			if v, ok := deriveWatermark(ec, h.exprs[j], h.inWidth+2, m.col, m.v); ok {
				h.pending = append(h.pending, stream.Message{Watermark: &stream.Watermark{Col: j, Val: v}})
			}
		}
	}
	return nil
}

func (h *HopWindow) Next(ctx context.Context) (stream.Message, error) {
	for {
		if len(h.pending) > 0 {
			m := h.pending[0]
			h.pending = h.pending[1:]
			return m, nil
		}
		msg, err := h.input.Next(ctx)
		if err == nil && msg.Watermark != nil {
			if err := h.watermark(ctx, msg.Watermark); err != nil {
				return stream.Message{}, err
			}
			continue
		}
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
	inWidth := h.inWidth
	var ec *expr.EvalContext
	if h.exprs != nil {
		ec = newEvalContext(ctx, h.loc)
	}
	// One backing array for every output row of the chunk.
	buf := make([]types.Datum, 0, len(in.Rows)*h.n*width)
	out := &types.Chunk{Ops: make([]types.Op, 0, len(in.Rows)*h.n), Rows: make([]types.Row, 0, len(in.Rows)*h.n)}
	tz := h.tz
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
			// A window bound out of range is a data error of this row
			// (evalerr.go): the row falls in no window, and so does its
			// retraction, which computes the same.
			if err := exprError(ctx, h.Identity(), nil, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range")); err != nil {
				return nil, err
			}
			continue
		}
		op := types.OpInsert
		if in.Ops[i] == types.OpDelete || in.Ops[i] == types.OpUpdateDelete {
			op = types.OpDelete
		}
		if h.exprs != nil {
			copy(h.scratch, row[:inWidth])
			for _, s := range h.starts {
				if tz {
					h.scratch[inWidth], h.scratch[inWidth+1] = types.DTimestamptz(s), types.DTimestamptz(s+h.size)
				} else {
					h.scratch[inWidth], h.scratch[inWidth+1] = types.DTimestamp(s), types.DTimestamp(s+h.size)
				}
				for _, e := range h.exprs {
					d, err := e.Eval(ec, h.scratch)
					if err != nil {
						// As in Project (evalerr.go): NULL, counted, the job goes on.
						if err := exprError(ctx, h.Identity(), e, err); err != nil {
							return nil, err
						}
						d = types.NullDatum
					}
					buf = append(buf, d)
				}
				out.Append(op, types.Row(buf[len(buf)-width:len(buf):len(buf)]))
			}
			continue
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
