package exec

import (
	"context"
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

	// Rows counts emitted rows.
	Rows     atomic.Int64
	finished chan struct{}
	once     sync.Once
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
	row, found, err := s.table.Get(ctx, types.Row{types.DInt32(int32(-1 - s.split))})
	if err != nil {
		return fmt.Errorf("source %s: split %d: read watermark: %w", s.name, s.split, err)
	}
	if found {
		d := types.DTimestamp(row[1].Int())
		if s.schema[gen.Col()].Kind == types.KindTimestamptz {
			d = types.DTimestamptz(row[1].Int())
		}
		gen.Restore(d)
	}
	return nil
}

func (s *Source) onBarrier(b *stream.Barrier) (stream.Message, error) {
	s.table.Insert(types.Row{types.DInt32(int32(s.split)), types.DInt64(s.reader.Position())})
	if s.wm != nil {
		if w, ok := s.wm.Current(); ok {
			s.table.Insert(types.Row{types.DInt32(int32(-1 - s.split)), types.DInt64(w.Int())})
		}
	}
	if err := s.table.Commit(b.Curr); err != nil {
		return stream.Message{}, err
	}
	if b.StopsActor(s.actor) {
		s.stopped = true
	}
	return stream.Message{Barrier: b}, nil
}

func (s *Source) Next(ctx context.Context) (stream.Message, error) {
	for {
		if s.stopped {
			return stream.Message{}, stream.ErrStopped
		}
		if len(s.pending) > 0 {
			m := s.pending[0]
			s.pending = s.pending[1:]
			return m, nil
		}
		select {
		case b := <-s.barriers:
			return s.onBarrier(b)
		default:
		}
		if s.reader.Done() {
			s.once.Do(func() { close(s.finished) })
			select {
			case b := <-s.barriers:
				return s.onBarrier(b)
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
					return s.onBarrier(b)
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
		if s.wm != nil {
			out, w, err := s.wm.Filter(c)
			if err != nil {
				return stream.Message{}, fmt.Errorf("%s: watermark: %w", s.Identity(), err)
			}
			if w != nil {
				s.pending = append(s.pending, stream.Message{Watermark: w})
			}
			if out.Len() == 0 {
				continue
			}
			c = out
		}
		return stream.Message{Chunk: c}, nil
	}
}
