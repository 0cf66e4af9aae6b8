package exec

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// SourceStateSchema is the state table of a source split: split → next
// position.
func SourceStateSchema(name string) state.Schema {
	return state.Schema{Name: name + " source positions", Types: []types.Type{types.Int32, types.Int64}, PK: []int{0}}
}

// openSplitAt opens split of src at the position recorded for it in
// positions (SourceStateSchema), or at its start when none is.
func openSplitAt(ctx context.Context, src connector.Source, split int, positions *state.Table) (connector.SplitReader, error) {
	pos := src.StartPosition(split)
	row, found, err := positions.Get(ctx, types.Row{types.DInt32(int32(split))})
	if err != nil {
		return nil, fmt.Errorf("split %d: read position: %w", split, err)
	}
	if found {
		pos = row[1].Int()
	}
	r, err := src.Open(split, pos)
	if err != nil {
		return nil, fmt.Errorf("split %d: %w", split, err)
	}
	return r, nil
}

// Source emits one connector split's rows between barriers, each with a
// trailing hidden row id (its position) when the schema asks for one. At every
// barrier it records the split's next position in its state table, so
// that after recovery it regenerates exactly the rows of the epochs that
// were not committed (I7): connector rows are pure functions of their
// position.
type Source struct {
	name     string
	actor    stream.ActorID
	barriers <-chan *stream.Barrier
	src      connector.Source
	split    int
	reader   connector.SplitReader
	table    *state.Table
	pacer    *connector.Pacer
	schema   []types.Type
	stopped  bool
	// wm generates the split's watermarks (WATERMARK FOR), nil without.
	wm      *WatermarkGen
	pending []stream.Message

	// ext reads an external connector (Kafka, CDC) instead of a
	// generator: src and reader are nil then, and split is the actor's
	// index among the source's actors. See external.go.
	ext *externalFeed

	// Rows counts emitted rows.
	Rows     atomic.Int64
	finished chan struct{}
	once     sync.Once
}

// NewExternalSource builds one of the actors reading an external
// connector (cfg.Index of cfg.Count): it reads the splits assigned to it,
// resuming at the states committed in table (ExternalStateSchema). Rows
// get a fresh hidden row id (the schema's last column): unlike a
// generator's rows they cannot be regenerated from a position, and none
// is needed — after a recovery the rows of uncommitted epochs are read
// again from the split states, and the views' state of those epochs is
// gone with them (I7). States are acknowledged upstream once committed
// (I8, cfg.Committed).
func NewExternalSource(ctx context.Context, cfg ExternalConfig, actor stream.ActorID, barriers <-chan *stream.Barrier, src connector.External, schema []types.Type, table *state.Table) (*Source, error) {
	f, err := newExternalFeed(ctx, cfg, src, table)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", cfg.Name, err)
	}
	return &Source{name: cfg.Name, actor: actor, barriers: barriers, split: cfg.Index, table: table, schema: schema,
		finished: make(chan struct{}), ext: f}, nil
}

// NewSource opens split of src, resuming at the position recorded in
// table (the split's start when none is).
func NewSource(ctx context.Context, name string, actor stream.ActorID, barriers <-chan *stream.Barrier, src connector.Source, split int, schema []types.Type, table *state.Table) (*Source, error) {
	r, err := openSplitAt(ctx, src, split, table)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", name, err)
	}
	s := &Source{name: name, actor: actor, barriers: barriers, src: src, split: split, reader: r, table: table,
		schema: schema, finished: make(chan struct{})}
	if gap := src.Gap(); gap > 0 {
		s.pacer = connector.NewPacer(gap, time.Now())
	}
	return s, nil
}

func (s *Source) Schema() []types.Type { return s.schema }
func (s *Source) Identity() string {
	if s.ext != nil {
		return fmt.Sprintf("Source(%s, actor %d of %d)", s.name, s.ext.index, s.ext.count)
	}
	return fmt.Sprintf("Source(%s, split %d at %d)", s.name, s.split, s.reader.Position())
}

// Finished is closed once a bounded source has emitted every row.
func (s *Source) Finished() <-chan struct{} { return s.finished }

// SetWatermark makes the split generate watermarks with gen and drop the
// rows that are late by them. The watermark is committed with the split's
// position (under key -1-split) and restored from it, so that rows dropped
// before a recovery are dropped after it too.
func (s *Source) SetWatermark(ctx context.Context, gen *WatermarkGen) error {
	s.wm = gen
	key := types.Row{types.DInt32(int32(-1 - s.split))}
	if s.ext != nil {
		key = types.Row{types.DVarchar(watermarkKey(s.split))}
	}
	row, found, err := s.table.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("source %s: split %d: read watermark: %w", s.name, s.split, err)
	}
	if found {
		us := row[1].Int()
		if s.ext != nil {
			us = int64(binary.BigEndian.Uint64([]byte(row[1].Str())))
		}
		d := types.DTimestamp(us)
		if s.schema[gen.Col()].Kind == types.KindTimestamptz {
			d = types.DTimestamptz(us)
		}
		gen.Restore(d)
	}
	return nil
}

func (s *Source) onBarrier(ctx context.Context, b *stream.Barrier) (stream.Message, error) {
	if s.ext != nil {
		return s.onExternalBarrier(ctx, b)
	}
	s.table.Insert(types.Row{types.DInt32(int32(s.split)), types.DInt64(s.reader.Position())})
	if s.wm != nil {
		if w, ok := s.wm.Current(); ok {
			s.table.Insert(types.Row{types.DInt32(int32(-1 - s.split)), types.DInt64(w.Int())})
		}
	}
	if err := s.table.CommitContext(ctx, b.Curr); err != nil {
		return stream.Message{}, err
	}
	if b.StopsActor(s.actor) {
		s.stopped = true
	}
	return stream.Message{Barrier: b}, nil
}

// onExternalBarrier commits the split states of the rows emitted so far
// in the barrier's epoch (I7), then acknowledges upstream the states of
// epochs now committed (I8).
func (s *Source) onExternalBarrier(ctx context.Context, b *stream.Barrier) (stream.Message, error) {
	s.ext.checkpoint(s.table, s.table.Epoch())
	if s.wm != nil {
		if w, ok := s.wm.Current(); ok {
			s.table.Insert(types.Row{types.DVarchar(watermarkKey(s.split)), types.DBytea(binary.BigEndian.AppendUint64(nil, uint64(w.Int())))})
		}
	}
	if err := s.table.CommitContext(ctx, b.Curr); err != nil {
		return stream.Message{}, err
	}
	s.ext.acknowledge()
	if b.StopsActor(s.actor) {
		s.stopped = true
		s.ext.stop()
	}
	return stream.Message{Barrier: b}, nil
}

// ready returns what goes out before anything new is read (ok): the end
// of a stopped actor, a queued message, or a waiting barrier (barriers
// first: a waiting barrier must not starve behind data).
func (s *Source) ready(ctx context.Context) (m stream.Message, ok bool, err error) {
	if s.stopped {
		return stream.Message{}, true, stream.ErrStopped
	}
	if len(s.pending) > 0 {
		m = s.pending[0]
		s.pending = s.pending[1:]
		return m, true, nil
	}
	select {
	case b := <-s.barriers:
		m, err = s.onBarrier(ctx, b)
		return m, true, err
	default:
		return stream.Message{}, false, nil
	}
}

// nextExternal is Next for an external connector: it waits for a barrier
// or a batch from the split goroutines, never for the network itself.
func (s *Source) nextExternal(ctx context.Context) (stream.Message, error) {
	s.ext.start(ctx)
	for {
		if m, ok, err := s.ready(ctx); ok {
			return m, err
		}
		stream.ReportState(ctx, &stream.StateWaitingInput)
		select {
		case b := <-s.barriers:
			stream.ReportState(ctx, &stream.StateBarrier)
			return s.onBarrier(ctx, b)
		case sb := <-s.ext.out:
			stream.ReportState(ctx, &stream.StateProcessing)
			c := s.ext.consume(sb)
			if c == nil {
				continue
			}
			// A source is append-only: a connector format with deletes
			// is accepted only on a table (DDL checks it).
			out := &types.Chunk{Ops: c.Ops[:0], Rows: c.Rows[:0]} // filtered in place
			for j, row := range c.Rows {
				if c.Ops[j] != types.OpInsert {
					continue
				}
				if len(row) < len(s.schema) {
					row = append(row, types.DInt64(NextRowID()))
				}
				out.Append(types.OpInsert, row)
			}
			if out.Len() == 0 {
				continue
			}
			s.Rows.Add(int64(out.Len()))
			out, err := s.filterLate(out)
			if err != nil || out == nil {
				if err != nil {
					return stream.Message{}, err
				}
				continue
			}
			return stream.Message{Chunk: out}, nil
		case <-ctx.Done():
			return stream.Message{}, ctx.Err()
		}
	}
}

// CaughtUp reports whether an external source's actor has consumed
// everything its splits had (false for generators and before the first
// batch of every split).
func (s *Source) CaughtUp() bool { return s.ext != nil && s.ext.caughtUp() }

func (s *Source) Next(ctx context.Context) (stream.Message, error) {
	if s.ext != nil {
		return s.nextExternal(ctx)
	}
	for {
		if m, ok, err := s.ready(ctx); ok {
			return m, err
		}
		if s.reader.Done() {
			s.once.Do(func() { close(s.finished) })
			select {
			case b := <-s.barriers:
				return s.onBarrier(ctx, b)
			case <-ctx.Done():
				return stream.Message{}, ctx.Err()
			}
		}
		n := s.src.MaxChunk()
		if s.pacer != nil {
			now := time.Now()
			if n = s.pacer.Budget(now, n); n == 0 {
				t := time.NewTimer(s.pacer.Wait(now))
				select {
				case b := <-s.barriers:
					t.Stop()
					return s.onBarrier(ctx, b)
				case <-t.C:
					continue
				case <-ctx.Done():
					t.Stop()
					return stream.Message{}, ctx.Err()
				}
			}
		}
		c := &types.Chunk{}
		first := s.reader.Position()
		k := s.reader.NextChunk(c, n)
		// The hidden row id is the row's position: positions of all splits
		// are distinct (split i produces i, i+k, i+2k, ...).
		if len(s.schema) > 0 && len(c.Rows) > 0 && len(c.Rows[0]) < len(s.schema) {
			step := int64(s.src.Splits())
			for j, r := range c.Rows {
				c.Rows[j] = append(r, types.DInt64(first+int64(j)*step))
			}
		}
		if s.pacer != nil {
			s.pacer.Emitted(k)
		}
		if k == 0 {
			continue
		}
		s.Rows.Add(int64(k))
		c, err := s.filterLate(c)
		if err != nil {
			return stream.Message{}, err
		}
		if c == nil {
			continue
		}
		return stream.Message{Chunk: c}, nil
	}
}

// filterLate drops the rows late by the split's watermark (WATERMARK FOR)
// and queues the watermark it advances to; nil when no row is left.
func (s *Source) filterLate(c *types.Chunk) (*types.Chunk, error) {
	if s.wm == nil {
		return c, nil
	}
	out, w, err := s.wm.Filter(c)
	if err != nil {
		return nil, fmt.Errorf("%s: watermark: %w", s.Identity(), err)
	}
	if w != nil {
		s.pending = append(s.pending, stream.Message{Watermark: w})
	}
	if out.Len() == 0 {
		return nil, nil
	}
	return out, nil
}
