package exec

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// Sink is the last executor of a sink job: it writes the job's changes into
// the sink's log store, a state table keyed by (epoch, writer, seq), and
// nothing else. The log commits with the epoch like any state, so what a
// sink worker (internal/sink) reads from it at a committed epoch is exactly
// what that epoch produced (I8: the outside world is told only what is
// durable), and a slow or unreachable target never holds a barrier up: the
// barrier path only appends to the log.
//
// Log rows are (epoch, writer, seq, op, row...): epoch is the epoch the
// change belongs to, writer the executor's index among the sink's actors,
// seq its position in the writer's output of that epoch (from 0, dense).
// The sink's actors are distributed by the target's key (or the stream
// key), so the changes of one key are all in one writer's sequence and
// their order survives.
//
// Truncation: the worker reports which log rows it delivered (SinkLog.
// Truncations); writer 0 deletes them at its next barrier, blind deletes
// committed with that epoch. A recovery that loses that epoch loses the
// deletes; the worker finds the rows again and asks again.
type Sink struct {
	input  stream.Executor
	table  *state.Table
	writer int
	log    SinkLog
	// appendOnly drops deletes and turns an update's new row into an
	// insert (type = 'append-only' with force_append_only).
	appendOnly bool

	seq      int64
	row      types.Row
	waitNext bool // the log was over its bound at the last barrier
}

// SinkLog is the executor's side of a sink's log store, implemented by the
// sink worker (internal/sink).
type SinkLog interface {
	// Written records that a writer appended n rows to the log in epoch.
	Written(epoch uint64, writer int, n int64)
	// Truncations returns the log rows that were delivered and may be
	// deleted (called by writer 0 at each barrier).
	Truncations() []SinkLogRange
	// OverBound reports whether the undelivered backlog exceeds the
	// configured bound; WaitBelowBound blocks until it no longer does.
	OverBound() bool
	WaitBelowBound(ctx context.Context) error
}

// SinkLogRange names the log rows (Epoch, Writer, 0..Count-1).
type SinkLogRange struct {
	Epoch  uint64
	Writer int
	Count  int64
}

// SinkLogPrefix is the number of columns a sink's log rows carry before
// the sink's own columns: epoch, writer, seq, op.
const SinkLogPrefix = 4

// SinkLogSchema is the state-table schema of a sink's log store for rows
// of the given types. Every row is in vnode 0 (no distribution key): the
// log is read in (epoch, writer, seq) order.
func SinkLogSchema(name string, row []types.Type) state.Schema {
	s := state.Schema{
		Name:        name,
		Types:       append([]types.Type{types.Int64, types.Int32, types.Int64, types.Int16}, row...),
		ColumnNames: []string{"epoch", "writer", "seq", "op"},
		PK:          []int{0, 1, 2},
	}
	for i := range row {
		s.ColumnNames = append(s.ColumnNames, fmt.Sprintf("c%d", i))
	}
	return s
}

// NewSink returns the executor writing input's changes to the log table
// as writer number writer.
func NewSink(input stream.Executor, table *state.Table, writer int, log SinkLog, appendOnly bool) *Sink {
	return &Sink{input: input, table: table, writer: writer, log: log, appendOnly: appendOnly,
		row: make(types.Row, SinkLogPrefix+len(input.Schema()))}
}

func (s *Sink) Schema() []types.Type { return s.input.Schema() }
func (s *Sink) Identity() string {
	return fmt.Sprintf("Sink(%s, log state table %d, writer %d)", s.table.Schema().Name, s.table.ID(), s.writer)
}

func (s *Sink) Next(ctx context.Context) (stream.Message, error) {
	if s.waitNext {
		// Past its bound the log back-pressures the job: the barrier that
		// found it full has gone on (its epoch commits), and no more input
		// is read until the worker has drained below the bound.
		s.waitNext = false
		if err := s.log.WaitBelowBound(ctx); err != nil {
			return stream.Message{}, err
		}
	}
	for {
		msg, err := s.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if b := msg.Barrier; b != nil {
			if err := s.barrier(ctx, b); err != nil {
				return stream.Message{}, err
			}
			return msg, nil
		}
		if c := msg.Chunk; c != nil {
			s.append(c)
		}
	}
}

func (s *Sink) append(c *types.Chunk) {
	epoch := types.DInt64(int64(s.table.Epoch()))
	writer := types.DInt32(int32(s.writer))
	for i, r := range c.Rows {
		op := c.Ops[i]
		if s.appendOnly {
			if !op.IsInsert() {
				continue
			}
			op = types.OpInsert
		}
		s.row[0], s.row[1], s.row[2], s.row[3] = epoch, writer, types.DInt64(s.seq), types.DInt16(int16(op))
		copy(s.row[SinkLogPrefix:], r)
		s.table.Insert(s.row)
		s.seq++
	}
}

func (s *Sink) barrier(ctx context.Context, b *stream.Barrier) error {
	if s.seq > 0 {
		s.log.Written(s.table.Epoch(), s.writer, s.seq)
	}
	if s.writer == 0 {
		key := make(types.Row, len(s.row))
		for i := range key {
			key[i] = types.NullDatum
		}
		for _, r := range s.log.Truncations() {
			key[0], key[1] = types.DInt64(int64(r.Epoch)), types.DInt32(int32(r.Writer))
			for q := int64(0); q < r.Count; q++ {
				key[2] = types.DInt64(q)
				s.table.Delete(key)
			}
		}
	}
	s.seq = 0
	if err := commitAll(ctx, s.Identity(), b.Curr, s.table); err != nil {
		return err
	}
	s.waitNext = s.log.OverBound()
	return nil
}
