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

// SRF is one set-returning call of a select list (generate_series,
// unnest), its arguments bound over the input row.
type SRF struct {
	Name string
	Args []expr.Expr
	Type types.Type
}

// ProjectSet expands each input row by the set-returning functions of a
// select list (SELECT id, generate_series(1, n) FROM t), in lockstep as
// PostgreSQL 10+ does: one output row per value of the longest series, the
// shorter ones padded with NULL. The output row is the input's first
// `at` columns, one column per call, the input's remaining (hidden key)
// columns, then the row's ordinal within its expansion (int8, from 1),
// which with the input's stream key identifies an output row.
//
// It is stateless: the functions are deterministic, so a delete expands
// to exactly the rows its insert produced, and an update pair becomes a
// delete and an insert (their expansions may differ in length). An
// argument that fails to evaluate, or a series that cannot be generated
// (a zero step), is an expression error: counted against the view, and
// the row expands to nothing — the same for its retraction. Long series
// are emitted a chunk at a time. Watermarks on input columns pass through
// (each output row keeps its input row's values there).
//
// A function in FROM over the columns of the items before it (FROM t,
// unnest(t.arr) WITH ORDINALITY; LEFT JOIN LATERAL ... ON true) is a
// ProjectSet too (see SetLateral): ordinality adds the ordinal as a visible
// column after the calls, and outer expands a row whose series is empty
// to one row of NULLs — again a function of the row alone, so its
// retraction is exact.
type ProjectSet struct {
	input      stream.Executor
	calls      []SRF
	at         int
	loc        *time.Location
	ordinality bool
	outer      bool

	// The expansion in progress: chunk in, row i, its generators.
	in    *types.Chunk
	i     int
	gens  []func() (types.Datum, bool, error)
	ord   int64
	moved bool // gens hold row i
}

// NewProjectSet returns the expansion of input by calls, their columns
// placed after the input's first at columns.
func NewProjectSet(input stream.Executor, calls []SRF, at int, loc *time.Location) (*ProjectSet, error) {
	if at < 0 || at > len(input.Schema()) {
		return nil, fmt.Errorf("project set: column position %d out of range (input has %d columns)", at, len(input.Schema()))
	}
	if loc == nil {
		loc = time.UTC
	}
	return &ProjectSet{input: input, calls: calls, at: at, loc: loc}, nil
}

// SetLateral sets the FROM-clause forms: an ordinality column after the
// calls, and a NULL row for an empty expansion (outer).
func (p *ProjectSet) SetLateral(ordinality, outer bool) {
	p.ordinality, p.outer = ordinality, outer
}

func (p *ProjectSet) Schema() []types.Type {
	in := p.input.Schema()
	out := append([]types.Type(nil), in[:p.at]...)
	for _, c := range p.calls {
		out = append(out, c.Type)
	}
	if p.ordinality {
		out = append(out, types.Int64)
	}
	out = append(out, in[p.at:]...)
	return append(out, types.Int64)
}

func (p *ProjectSet) Identity() string {
	parts := make([]string, len(p.calls))
	for i, c := range p.calls {
		args := make([]string, len(c.Args))
		for j, a := range c.Args {
			args[j] = a.String()
		}
		parts[i] = c.Name + "(" + strings.Join(args, ", ") + ")"
	}
	return "ProjectSet(" + strings.Join(parts, ", ") + ")"
}

func (p *ProjectSet) Next(ctx context.Context) (stream.Message, error) {
	for {
		if p.in != nil {
			out, err := p.expand(ctx)
			if err != nil {
				return stream.Message{}, err
			}
			if out.Len() > 0 {
				return stream.Message{Chunk: out}, nil
			}
			continue
		}
		msg, err := p.input.Next(ctx)
		if err != nil || msg.Chunk == nil {
			return msg, err // barriers and watermarks pass
		}
		p.in, p.i, p.moved = msg.Chunk, 0, false
	}
}

// expand emits up to a chunk of the expansion in progress.
func (p *ProjectSet) expand(ctx context.Context) (*types.Chunk, error) {
	out := &types.Chunk{}
	ec := newEvalContext(ctx, p.loc)
	var tk ticker
	for p.i < len(p.in.Rows) && out.Len() < chunkSize {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		row := p.in.Rows[p.i]
		if !p.moved {
			if err := p.start(ctx, ec, row); err != nil {
				return nil, err
			}
		}
		vals, ok, err := p.step(ctx)
		if err != nil {
			return nil, err
		}
		padded := false
		if !ok {
			if !p.outer || p.ord > 0 {
				p.i++
				p.moved = false
				continue
			}
			// outer: the row's expansion is empty; it is kept once with
			// NULLs, and the next step ends it (p.ord > 0).
			padded = true
			for k := range vals {
				vals[k] = types.NullDatum
			}
		}
		p.ord++
		r := make(types.Row, 0, len(row)+len(vals)+2)
		r = append(r, row[:p.at]...)
		r = append(r, vals...)
		if p.ordinality {
			if padded {
				r = append(r, types.NullDatum)
			} else {
				r = append(r, types.DInt64(p.ord))
			}
		}
		r = append(r, row[p.at:]...)
		r = append(r, types.DInt64(p.ord))
		op := types.OpDelete
		if p.in.Ops[p.i].IsInsert() {
			op = types.OpInsert
		}
		out.Append(op, r)
	}
	if p.i >= len(p.in.Rows) {
		p.in = nil
	}
	return out, nil
}

// start makes the generators of row.
func (p *ProjectSet) start(ctx context.Context, ec *expr.EvalContext, row types.Row) error {
	p.gens = make([]func() (types.Datum, bool, error), len(p.calls))
	p.ord, p.moved = 0, true
	for i, c := range p.calls {
		args := make([]types.Datum, len(c.Args))
		failed := false
		for j, a := range c.Args {
			v, err := a.Eval(ec, row)
			if err != nil {
				if err := exprError(ctx, p.Identity(), a, err); err != nil {
					return err
				}
				failed = true
				break
			}
			args[j] = v
		}
		if failed {
			continue // this call yields nothing for the row
		}
		g, err := expr.SelectListSRF(c.Name, args, c.Args[0].Type(), c.Type, ec.Location)
		if err != nil {
			if err := exprError(ctx, p.Identity(), nil, err); err != nil {
				return err
			}
			continue
		}
		p.gens[i] = g
	}
	return nil
}

// step returns the next values of the row's calls in lockstep, false when
// every call is done. A call failing part way ends there.
func (p *ProjectSet) step(ctx context.Context) ([]types.Datum, bool, error) {
	vals := make([]types.Datum, len(p.gens))
	more := false
	for i, g := range p.gens {
		vals[i] = types.NullDatum
		if g == nil {
			continue
		}
		v, ok, err := g()
		if err != nil {
			if err := exprError(ctx, p.Identity(), nil, err); err != nil {
				return nil, false, err
			}
			p.gens[i] = nil
			continue
		}
		if !ok {
			p.gens[i] = nil
			continue
		}
		vals[i], more = v, true
	}
	return vals, more, nil
}
