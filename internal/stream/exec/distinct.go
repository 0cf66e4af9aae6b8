package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// Distinct maintains SELECT DISTINCT over the columns cols of its input:
// the state table counts the input rows of each distinct value tuple; a
// tuple is emitted when its count goes 0 -> 1 and retracted at 1 -> 0 (the
// stored representative row is what is retracted, so the output stays
// consistent when equal values print differently, 1.5 vs 1.50).
//
// A watermark on a distinct column closes the tuples below it
// (keyWatermarks): at the next barrier they are deleted from the state
// table, nothing is emitted for them, and the watermark is forwarded on
// that output column.
type Distinct struct {
	input   stream.Executor
	cols    []int
	table   *state.Table
	schema  []types.Type
	inTypes []types.Type
	wm      keyWatermarks
	q       queue
	consistency
}

// DistinctStateSchema returns the state table schema: the distinct
// columns plus a bigint count, keyed and distributed by the columns.
func DistinctStateSchema(name string, inTypes []types.Type, cols []int) state.Schema {
	s := state.Schema{Name: name, Types: append(typesAt(inTypes, cols), types.Int64)}
	for i := range cols {
		s.PK = append(s.PK, i)
		s.DistKey = append(s.DistKey, i)
	}
	return s
}

// NewDistinct returns DISTINCT over input's columns cols; output rows are
// those columns.
func NewDistinct(input stream.Executor, cols []int, table *state.Table) (*Distinct, error) {
	ts := input.Schema()
	if err := checkCols("distinct", cols, len(ts)); err != nil {
		return nil, err
	}
	if len(table.Schema().Types) != len(cols)+1 {
		return nil, fmt.Errorf("distinct: state table %d has %d columns; want %d (see DistinctStateSchema)", table.ID(), len(table.Schema().Types), len(cols)+1)
	}
	return &Distinct{input: input, cols: cols, table: table, schema: typesAt(ts, cols), inTypes: ts}, nil
}

func (d *Distinct) Schema() []types.Type { return d.schema }
func (d *Distinct) Identity() string {
	return fmt.Sprintf("Distinct([%s]; state table %d)", colList(d.cols), d.table.ID())
}

// SetVnodeOwner restricts watermark cleanup to the vnodes owns reports
// (the actor's share of the state table).
func (d *Distinct) SetVnodeOwner(owns func(v uint16) bool) { d.wm.owns = owns }

// CleanedKeys reports how many distinct tuples watermark cleanup has
// deleted.
func (d *Distinct) CleanedKeys() int64 { return d.wm.cleaned }

func (d *Distinct) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := d.q.pop(); ok {
			return msg, nil
		}
		msg, err := d.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if w := msg.Watermark; w != nil {
			d.wm.observe(d.cols, w)
			continue
		}
		if b := msg.Barrier; b != nil {
			if err := d.cleanup(ctx); err != nil {
				return stream.Message{}, err
			}
			if err := commitAll(ctx, d.Identity(), b.Curr, d.table); err != nil {
				return stream.Message{}, err
			}
			d.wm.emit(&d.q, identityCol)
			d.q.push(msg)
			continue
		}
		out := &types.Chunk{}
		var tk ticker
		msg.Chunk = stateInputHook(d, "", msg.Chunk)
		for i, row := range msg.Chunk.Rows {
			if err := tk.tick(ctx); err != nil {
				return stream.Message{}, err
			}
			r := append(project(row, d.cols), types.NullDatum)
			cur, found, err := d.table.GetRow(ctx, r)
			if err != nil {
				return stream.Message{}, fmt.Errorf("%s: %w", d.Identity(), err)
			}
			var n int64
			if found {
				n = cur[len(cur)-1].Int()
			}
			if msg.Chunk.Ops[i].IsInsert() {
				if n == 0 {
					out.Append(types.OpInsert, r[:len(d.cols):len(d.cols)])
				} else {
					r = cur
				}
				r[len(r)-1] = types.DInt64(n + 1)
				d.table.Insert(r)
				continue
			}
			switch {
			case n == 0:
				// I6. Non-strict: the delete is dropped (the tuple was
				// never emitted, so there is nothing to retract).
				err := inconsistent(d.Identity(), d.table, r[:len(d.cols)], "delete of a row that was never inserted (row %s)", row)
				if err := d.violation(ctx, d.Identity(), err); err != nil {
					return stream.Message{}, err
				}
			case n == 1:
				d.table.Delete(cur)
				out.Append(types.OpDelete, cur[:len(d.cols):len(d.cols)])
			default:
				cur[len(cur)-1] = types.DInt64(n - 1)
				d.table.Insert(cur)
			}
		}
		if out.Len() > 0 {
			return stream.Message{Chunk: out}, nil
		}
	}
}

// cleanup deletes the tuples closed by the pending watermarks.
func (d *Distinct) cleanup(ctx context.Context) error {
	err := d.wm.cleanup(ctx, d.table, identityCol, func(types.Row) (bool, error) { return true, nil })
	if err != nil {
		return fmt.Errorf("%s: watermark cleanup: %w", d.Identity(), err)
	}
	return nil
}

// UnionAll concatenates N inputs of one row type, aligning their
// barriers. With tag set, each output row carries the index of its input
// as a trailing int4 column, so rows from different inputs with equal
// stream keys stay distinct downstream.
type UnionAll struct {
	actor   stream.ActorID
	inputs  []stream.Executor
	tag     bool
	schema  []types.Type
	align   *aligner
	stopped bool
}

// NewUnionAll returns UNION ALL of inputs, run by actor.
func NewUnionAll(actor stream.ActorID, inputs []stream.Executor, tag bool) (*UnionAll, error) {
	if len(inputs) == 0 {
		return nil, fmt.Errorf("union all: no inputs")
	}
	ts := inputs[0].Schema()
	for i, in := range inputs[1:] {
		if len(in.Schema()) != len(ts) {
			return nil, fmt.Errorf("union all: input %d has %d columns; input 0 has %d", i+1, len(in.Schema()), len(ts))
		}
	}
	u := &UnionAll{actor: actor, inputs: inputs, tag: tag, schema: append([]types.Type(nil), ts...)}
	if tag {
		u.schema = append(u.schema, types.Int32)
	}
	u.align = newAligner(u.Identity(), inputs)
	return u, nil
}

func (u *UnionAll) Schema() []types.Type { return u.schema }
func (u *UnionAll) Identity() string     { return fmt.Sprintf("UnionAll(%d inputs)", len(u.inputs)) }

func (u *UnionAll) Next(ctx context.Context) (stream.Message, error) {
	if u.stopped {
		return stream.Message{}, stream.ErrStopped
	}
	i, msg, err := u.align.next(ctx)
	if err != nil {
		return stream.Message{}, err
	}
	if b := msg.Barrier; b != nil {
		if b.StopsActor(u.actor) {
			u.stopped = true
			u.align.close()
		}
		return msg, nil
	}
	if !u.tag {
		return msg, nil
	}
	in := msg.Chunk
	out := &types.Chunk{Ops: in.Ops, Rows: make([]types.Row, len(in.Rows))}
	tag := types.DInt32(int32(i))
	for j, r := range in.Rows {
		out.Rows[j] = append(r[:len(r):len(r)], tag)
	}
	return stream.Message{Chunk: out}, nil
}
