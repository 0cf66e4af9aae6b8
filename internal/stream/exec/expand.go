package exec

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// Expand repeats each input row once per grouping set of GROUP BY
// GROUPING SETS, ROLLUP or CUBE (plan.Expand): the output row is the
// input's first `at` columns, one column per grouping expression (its
// value when the set groups by it, NULL otherwise), the set's number
// (int4), then the input's remaining (hidden key) columns. The set number
// with the input's stream key identifies an output row.
//
// It is stateless: the expressions are deterministic, so a delete expands
// to exactly the rows its insert did. An update pair becomes deletes and
// inserts (the pairs would otherwise interleave across sets). A grouping
// expression that fails to evaluate is an expression error, counted
// against the view, and reads NULL (as in Project) — the same for the
// row's retraction. Long expansions are emitted a chunk at a time.
type Expand struct {
	input stream.Executor
	keys  []expr.Expr
	sets  [][]int
	at    int
	loc   *time.Location

	// The expansion in progress: chunk in, row i, its keys, next set.
	in     *types.Chunk
	i      int
	keyRow types.Row
	set    int
}

// NewExpand returns the expansion of input by sets of keys (each set a
// list of indices in keys), the new columns placed after the input's first
// at columns.
func NewExpand(input stream.Executor, keys []expr.Expr, sets [][]int, at int, loc *time.Location) (*Expand, error) {
	if at < 0 || at > len(input.Schema()) {
		return nil, fmt.Errorf("expand: column position %d out of range (input has %d columns)", at, len(input.Schema()))
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("expand: no grouping sets")
	}
	for _, s := range sets {
		for _, k := range s {
			if k < 0 || k >= len(keys) {
				return nil, fmt.Errorf("expand: grouping set key %d out of range (%d keys)", k, len(keys))
			}
		}
	}
	if loc == nil {
		loc = time.UTC
	}
	return &Expand{input: input, keys: keys, sets: sets, at: at, loc: loc}, nil
}

func (e *Expand) Schema() []types.Type {
	in := e.input.Schema()
	out := append([]types.Type(nil), in[:e.at]...)
	for _, k := range e.keys {
		out = append(out, k.Type())
	}
	out = append(out, types.Int32)
	return append(out, in[e.at:]...)
}

func (e *Expand) Identity() string {
	parts := make([]string, len(e.sets))
	for i, s := range e.sets {
		names := make([]string, len(s))
		for j, k := range s {
			names[j] = e.keys[k].String()
		}
		parts[i] = "(" + strings.Join(names, ", ") + ")"
	}
	return "Expand(" + strings.Join(parts, ", ") + ")"
}

func (e *Expand) Next(ctx context.Context) (stream.Message, error) {
	for {
		if e.in != nil {
			out, err := e.expand(ctx)
			if err != nil {
				return stream.Message{}, err
			}
			if out.Len() > 0 {
				return stream.Message{Chunk: out}, nil
			}
			continue
		}
		msg, err := e.input.Next(ctx)
		if err != nil || msg.Chunk == nil {
			return msg, err // barriers and watermarks pass
		}
		e.in, e.i, e.set = msg.Chunk, 0, 0
	}
}

// expand emits up to a chunk of the expansion in progress.
func (e *Expand) expand(ctx context.Context) (*types.Chunk, error) {
	out := &types.Chunk{}
	ec := newEvalContext(ctx, e.loc)
	var tk ticker
	for e.i < len(e.in.Rows) && out.Len() < chunkSize {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		row := e.in.Rows[e.i]
		if e.set == 0 {
			e.keyRow = e.keyRow[:0]
			for _, k := range e.keys {
				d, err := k.Eval(ec, row)
				if err != nil {
					if err := exprError(ctx, e.Identity(), k, err); err != nil {
						return nil, err
					}
					d = types.NullDatum
				}
				e.keyRow = append(e.keyRow, d)
			}
		}
		r := make(types.Row, 0, len(row)+len(e.keys)+1)
		r = append(r, row[:e.at]...)
		for range e.keys {
			r = append(r, types.NullDatum)
		}
		for _, k := range e.sets[e.set] {
			r[e.at+k] = e.keyRow[k]
		}
		r = append(r, types.DInt32(int32(e.set)))
		r = append(r, row[e.at:]...)
		op := types.OpDelete
		if e.in.Ops[e.i].IsInsert() {
			op = types.OpInsert
		}
		out.Append(op, r)
		if e.set++; e.set == len(e.sets) {
			e.i, e.set = e.i+1, 0
		}
	}
	if e.i >= len(e.in.Rows) {
		e.in = nil
	}
	return out, nil
}
