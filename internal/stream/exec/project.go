package exec

import (
	"context"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// newEvalContext builds the expression context for a streaming executor.
// Streaming expressions must be deterministic per row (the planner rejects
// now() in views), so the statement time is only a fallback.
func newEvalContext(ctx context.Context, loc *time.Location) *expr.EvalContext {
	if loc == nil {
		loc = time.UTC
	}
	return &expr.EvalContext{Ctx: ctx, Location: loc, StatementTime: time.Now()}
}

// Project evaluates expressions over each input row. It is stateless; an
// update pair stays an update pair.
//
// A watermark on input column c becomes a watermark on every output
// column whose expression is monotone in c alone (expr.MonotoneIn: c
// itself, c ± constant, TUMBLE's window bounds over those), evaluated at
// the watermark; other watermarks are dropped.
type Project struct {
	input  stream.Executor
	exprs  []expr.Expr
	schema []types.Type
	loc    *time.Location
	// wmOut[c] lists the output columns carrying input column c's
	// watermarks (computed at c's first watermark).
	wmOut   map[int][]int
	pending []stream.Message
}

// NewProject returns an executor emitting exprs evaluated over each row
// of input. loc is the session time zone the view was created in (nil:
// UTC).
func NewProject(input stream.Executor, exprs []expr.Expr, loc *time.Location) *Project {
	schema := make([]types.Type, len(exprs))
	for i, e := range exprs {
		schema[i] = e.Type()
	}
	return &Project{input: input, exprs: exprs, schema: schema, loc: loc}
}

func (p *Project) Schema() []types.Type { return p.schema }
func (p *Project) Identity() string {
	parts := make([]string, len(p.exprs))
	for i, e := range p.exprs {
		parts[i] = e.String()
	}
	return "Project(" + strings.Join(parts, ", ") + ")"
}

// WatermarkOutputs lists the output columns of exprs that carry a
// watermark of input column col.
func WatermarkOutputs(exprs []expr.Expr, col int) []int {
	var out []int
	for j, e := range exprs {
		if expr.MonotoneIn(e, col) {
			out = append(out, j)
		}
	}
	return out
}

func (p *Project) Next(ctx context.Context) (stream.Message, error) {
	for len(p.pending) == 0 {
		msg, err := p.input.Next(ctx)
		if err != nil || msg.Barrier != nil {
			return msg, err
		}
		if msg.Watermark != nil {
			p.watermark(ctx, msg.Watermark)
			continue
		}
		return p.project(ctx, msg)
	}
	m := p.pending[0]
	p.pending = p.pending[1:]
	return m, nil
}

func (p *Project) watermark(ctx context.Context, w *stream.Watermark) {
	if p.wmOut == nil {
		p.wmOut = map[int][]int{}
	}
	outs, ok := p.wmOut[w.Col]
	if !ok {
		outs = WatermarkOutputs(p.exprs, w.Col)
		p.wmOut[w.Col] = outs
	}
	if len(outs) == 0 {
		return
	}
	ec := newEvalContext(ctx, p.loc)
	width := len(p.input.Schema())
	for _, j := range outs {
		if v, ok := deriveWatermark(ec, p.exprs[j], width, w.Col, w.Val); ok {
			p.pending = append(p.pending, stream.Message{Watermark: &stream.Watermark{Col: j, Val: v}})
		}
	}
}

func (p *Project) project(ctx context.Context, msg stream.Message) (stream.Message, error) {
	in := msg.Chunk
	ec := newEvalContext(ctx, p.loc)
	out := &types.Chunk{Ops: append([]types.Op(nil), in.Ops...), Rows: make([]types.Row, len(in.Rows))}
	var tk ticker
	for i, row := range in.Rows {
		if err := tk.tick(ctx); err != nil {
			return stream.Message{}, err
		}
		r := make(types.Row, len(p.exprs))
		for j, e := range p.exprs {
			d, err := e.Eval(ec, row)
			if err != nil {
				if err := exprError(ctx, p.Identity(), e, err); err != nil {
					return stream.Message{}, err
				}
				d = types.NullDatum
			}
			r[j] = d
		}
		out.Rows[i] = r
	}
	return stream.Message{Chunk: out}, nil
}

// Filter passes the rows for which the predicate is true (NULL and false
// drop the row). An update pair whose halves pass differently becomes a
// lone delete or insert. Watermarks pass unchanged (dropping rows keeps
// every promise about the rest).
type Filter struct {
	input stream.Executor
	pred  expr.Expr
	loc   *time.Location
}

// NewFilter returns an executor keeping the rows of input where pred is
// true.
func NewFilter(input stream.Executor, pred expr.Expr, loc *time.Location) *Filter {
	return &Filter{input: input, pred: pred, loc: loc}
}

func (f *Filter) Schema() []types.Type { return f.input.Schema() }
func (f *Filter) Identity() string     { return "Filter(" + f.pred.String() + ")" }

func (f *Filter) Next(ctx context.Context) (stream.Message, error) {
	for {
		msg, err := f.input.Next(ctx)
		if err != nil || msg.Chunk == nil {
			return msg, err
		}
		in := msg.Chunk
		ec := newEvalContext(ctx, f.loc)
		pass := make([]bool, len(in.Rows))
		var tk ticker
		for i, row := range in.Rows {
			if err := tk.tick(ctx); err != nil {
				return stream.Message{}, err
			}
			d, err := f.pred.Eval(ec, row)
			if err != nil {
				if err := exprError(ctx, f.Identity(), f.pred, err); err != nil {
					return stream.Message{}, err
				}
				continue // not true: the row does not pass
			}
			pass[i] = !d.IsNull() && d.Bool()
		}
		out := &types.Chunk{}
		for i := 0; i < len(in.Rows); i++ {
			op := in.Ops[i]
			if op == types.OpUpdateDelete && i+1 < len(in.Rows) && in.Ops[i+1] == types.OpUpdateInsert {
				switch {
				case pass[i] && pass[i+1]:
					out.Append(types.OpUpdateDelete, in.Rows[i])
					out.Append(types.OpUpdateInsert, in.Rows[i+1])
				case pass[i]:
					out.Append(types.OpDelete, in.Rows[i])
				case pass[i+1]:
					out.Append(types.OpInsert, in.Rows[i+1])
				}
				i++
				continue
			}
			if !pass[i] {
				continue
			}
			// A lone half of an update (never produced by our executors)
			// degrades to a plain delete or insert.
			switch op {
			case types.OpUpdateDelete:
				op = types.OpDelete
			case types.OpUpdateInsert:
				op = types.OpInsert
			}
			out.Append(op, in.Rows[i])
		}
		if out.Len() == 0 {
			continue
		}
		return stream.Message{Chunk: out}, nil
	}
}
