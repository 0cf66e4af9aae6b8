package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// valuesChunk is the number of constant rows per emitted chunk.
const valuesChunk = 1024

// ValuesStateSchema is the state of a Values executor: one row (0, epoch)
// once its rows have been emitted, written in the epoch that emitted them.
func ValuesStateSchema(name string) state.Schema {
	return state.Schema{Name: name + " emitted", Types: []types.Type{types.Int32, types.Int64}, PK: []int{0}}
}

// Values emits a constant relation (VALUES, generate_series with constant
// arguments, SELECT without FROM) once, in the epoch of the first barrier
// it sees, and nothing after. It is a source actor: meta injects its
// barriers.
//
// Emitting exactly once survives recovery because the rows and the marker
// saying they were emitted are written in the same epoch: either both are
// committed (a rebuilt Values emits nothing) or neither is (it emits them
// again into the epoch being rebuilt).
type Values struct {
	name     string
	actor    stream.ActorID
	barriers <-chan *stream.Barrier
	schema   []types.Type
	rows     []types.Row
	table    *state.Table

	started bool // passed the first barrier
	pos     int  // rows emitted so far
	marked  bool // the emitted marker is written (or was found)
	stopped bool
}

// NewValues returns the executor; rows must match schema. It reads its
// marker from table at the table's epoch.
func NewValues(ctx context.Context, name string, actor stream.ActorID, barriers <-chan *stream.Barrier, schema []types.Type, rows []types.Row, table *state.Table) (*Values, error) {
	for i, r := range rows {
		if len(r) != len(schema) {
			return nil, fmt.Errorf("values %s: row %d has %d columns; want %d", name, i, len(r), len(schema))
		}
	}
	_, found, err := table.Get(ctx, types.Row{types.DInt32(0)})
	if err != nil {
		return nil, fmt.Errorf("values %s: read emitted marker: %w", name, err)
	}
	v := &Values{name: name, actor: actor, barriers: barriers, schema: schema, rows: rows, table: table, marked: found}
	if found {
		v.pos = len(rows)
	}
	return v, nil
}

func (v *Values) Schema() []types.Type { return v.schema }
func (v *Values) Identity() string {
	return fmt.Sprintf("Values(%s, %d rows, state table %d)", v.name, len(v.rows), v.table.ID())
}

func (v *Values) Next(ctx context.Context) (stream.Message, error) {
	if v.stopped {
		return stream.Message{}, stream.ErrStopped
	}
	if v.started && v.pos < len(v.rows) {
		end := min(v.pos+valuesChunk, len(v.rows))
		c := &types.Chunk{Ops: make([]types.Op, end-v.pos), Rows: make([]types.Row, 0, end-v.pos)}
		for _, r := range v.rows[v.pos:end] {
			// Downstream may keep the row: give it its own copy.
			c.Rows = append(c.Rows, append(types.Row(nil), r...))
		}
		v.pos = end
		return stream.Message{Chunk: c}, nil
	}
	stream.ReportState(ctx, &stream.StateWaitingInput)
	select {
	case b := <-v.barriers:
		stream.ReportState(ctx, &stream.StateBarrier)
		return v.onBarrier(ctx, b)
	case <-ctx.Done():
		return stream.Message{}, ctx.Err()
	}
}

func (v *Values) onBarrier(ctx context.Context, b *stream.Barrier) (stream.Message, error) {
	if v.started && !v.marked && v.pos == len(v.rows) {
		// The rows went out in the epoch this barrier ends: the marker
		// commits with them.
		v.table.Insert(types.Row{types.DInt32(0), types.DInt64(int64(b.Prev))})
		v.marked = true
	}
	if err := v.table.CommitContext(ctx, b.Curr); err != nil {
		return stream.Message{}, err
	}
	v.started = true
	if b.StopsActor(v.actor) {
		v.stopped = true
	}
	return stream.Message{Barrier: b}, nil
}
