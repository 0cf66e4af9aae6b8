package exec

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// Materialize writes a view's changes into the view's state table, keyed
// by the view's primary key, and forwards the changes it applied (views on
// views read them). It is the last executor of a view's actors.
//
// Consistency (I6): deleting a key that is absent, or inserting a key that
// is present, contradicts the stream. In strict mode that is an error that
// fails the actor; otherwise it is logged and the table is repaired toward
// the input: an insert over an existing row becomes an update, a delete of
// an absent row is dropped, and a delete whose stored row differs deletes
// the stored row. The forwarded changes always describe what the table
// actually did, so downstream views stay consistent with it.
type Materialize struct {
	input  stream.Executor
	table  *state.Table
	strict bool
	log    *slog.Logger
	q      queue
	// appendOnly: the planner proved the input only inserts rows with
	// fresh keys (a source's positions, through filters and projections),
	// so inserts skip the existence check — the one point read per row
	// that dominated append-only views.
	appendOnly bool
	// known, when set (SetFresh), holds every key this executor inserted
	// since its table was created empty: a key it does not contain is
	// absent, so an insert of a fresh key needs no storage read. Nil when
	// not fresh or after it filled up.
	known *keyFilter
	// rows caches stored rows this executor read or wrote (a read cache of
	// its table, like the join's): an update of a recently read key, as an
	// aggregation's result updated every epoch, reads no storage.
	rows   *lruCache[types.Row]
	keyBuf []byte
}

// SetAppendOnly marks the input as insert-only with unique keys. A delete
// or update arriving anyway is still handled (checked) as usual.
func (m *Materialize) SetAppendOnly() { m.appendOnly = true }

// SetFresh tells the executor that its state table was empty when it
// started and that no other executor writes the keys it writes (a new
// view's table: each key belongs to one actor's vnodes). It then keeps a
// filter of the keys it inserts, and an insert of a key the filter has
// never seen skips the existence read: that read could only have found
// nothing, so the consistency check (I6) loses nothing. During a backfill
// every snapshot row is such an insert.
func (m *Materialize) SetFresh() { m.known = newKeyFilter() }

// NewMaterialize returns the executor writing input into table. The table's
// schema must match input's row layout. log may be nil (slog.Default).
func NewMaterialize(input stream.Executor, table *state.Table, strict bool, log *slog.Logger) *Materialize {
	if log == nil {
		log = slog.Default()
	}
	return &Materialize{input: input, table: table, strict: strict, log: log, rows: newLRUCache[types.Row](nil)}
}

func (m *Materialize) Schema() []types.Type { return m.input.Schema() }
func (m *Materialize) Identity() string {
	return fmt.Sprintf("Materialize(%s, state table %d)", m.table.Schema().Name, m.table.ID())
}

func (m *Materialize) Next(ctx context.Context) (stream.Message, error) {
	for {
		if msg, ok := m.q.pop(); ok {
			return msg, nil
		}
		msg, err := m.input.Next(ctx)
		if err != nil {
			return msg, err
		}
		if b := msg.Barrier; b != nil {
			if err := commitAll(ctx, m.Identity(), b.Curr, m.table); err != nil {
				return stream.Message{}, err
			}
			m.rows.shrinkToShare()
			return msg, nil
		}
		out, err := m.apply(ctx, msg.Chunk)
		if err != nil {
			return stream.Message{}, err
		}
		if out != nil && out.Len() > 0 {
			return stream.Message{Chunk: out}, nil
		}
	}
}

// lookup returns the stored row with row's key: from the row cache, or
// known absent by the key filter, or read from the table (and cached).
func (m *Materialize) lookup(ctx context.Context, row types.Row) (types.Row, bool, error) {
	m.keyBuf = m.table.EncodeKey(m.keyBuf[:0], row)
	if old, ok := m.rows.get(string(m.keyBuf)); ok {
		return old, true, nil
	}
	if m.known != nil && !m.known.mayContain(m.keyBuf) {
		return nil, false, nil
	}
	old, found, err := m.table.GetRow(ctx, row)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", m.Identity(), err)
	}
	if found {
		// A decoded row is a fresh allocation: the cache may keep it.
		m.keyBuf = m.table.EncodeKey(m.keyBuf[:0], row)
		m.rows.put(string(m.keyBuf), old, rowBytes(old))
	}
	return old, found, nil
}

// store writes row to the table, the key filter and (when its key is
// cached) the row cache.
func (m *Materialize) store(row types.Row) {
	m.keyBuf = m.table.EncodeKey(m.keyBuf[:0], row)
	key := string(m.keyBuf)
	m.table.InsertKey(key, row)
	m.remember(m.keyBuf)
	if _, ok := m.rows.peek(key); ok {
		// Input rows may share an allocation (a slab): cache a copy.
		c := row.Copy()
		m.rows.put(key, c, rowBytes(c))
	}
}

// remember adds key to the key filter; a filter that fills up is dropped
// (it would no longer know every key).
func (m *Materialize) remember(key []byte) {
	if m.known != nil && !m.known.add(key) {
		m.known = nil
	}
}

// erase deletes row's key from the table and the row cache.
func (m *Materialize) erase(row types.Row) {
	m.keyBuf = m.table.EncodeKey(m.keyBuf[:0], row)
	key := string(m.keyBuf)
	m.table.DeleteKey(key)
	m.rows.remove(key)
}

func (m *Materialize) pkOf(row types.Row) types.Row { return project(row, m.table.Schema().PK) }

// violation reports or logs an inconsistency; it returns the error to fail
// with in strict mode, nil to tolerate.
func (m *Materialize) violation(ctx context.Context, row types.Row, format string, args ...any) error {
	err := inconsistent(m.Identity(), m.table, m.pkOf(row), format, args...)
	if m.strict {
		return err
	}
	recordJobError(ctx, "", m.log, true, m.Identity(), err) // counted per view, rate-limited log
	return nil
}

func (m *Materialize) apply(ctx context.Context, in *types.Chunk) (*types.Chunk, error) {
	if m.appendOnly && onlyInserts(in) {
		for _, row := range in.Rows {
			m.store(row)
		}
		return in, nil
	}
	ts := m.table.Schema().Types
	clean := true // strict or no repair needed: forward the input as is
	out := &types.Chunk{}
	var tk ticker
	for i := 0; i < in.Len(); i++ {
		if err := tk.tick(ctx); err != nil {
			return nil, err
		}
		op, row := in.Ops[i], in.Rows[i]
		if op == types.OpUpdateDelete && i+1 < in.Len() && in.Ops[i+1] == types.OpUpdateInsert {
			next := in.Rows[i+1]
			old, found, err := m.lookup(ctx, row)
			if err != nil {
				return nil, err
			}
			sameKey := string(m.table.EncodeKey(nil, row)) == string(m.table.EncodeKey(nil, next))
			if !found {
				if err := m.violation(ctx, row, "update of a row that is not in the view"); err != nil {
					return nil, err
				}
				clean = false
			} else if !sameRow(old, row, ts) {
				if err := m.violation(ctx, row, "update's old row %s differs from the stored row %s", row, old); err != nil {
					return nil, err
				}
				clean = false
			}
			if !sameKey {
				if found {
					m.erase(old)
					out.Append(types.OpDelete, old)
				}
				if err := m.insert(ctx, next, out, &clean); err != nil {
					return nil, err
				}
			} else {
				m.store(next)
				if found {
					out.Append(types.OpUpdateDelete, old)
					out.Append(types.OpUpdateInsert, next)
				} else {
					out.Append(types.OpInsert, next)
				}
			}
			i++
			continue
		}
		if op.IsInsert() {
			if err := m.insert(ctx, row, out, &clean); err != nil {
				return nil, err
			}
			continue
		}
		old, found, err := m.lookup(ctx, row)
		if err != nil {
			return nil, err
		}
		if !found {
			if err := m.violation(ctx, row, "delete of a row that is not in the view"); err != nil {
				return nil, err
			}
			clean = false
			continue
		}
		if !sameRow(old, row, ts) {
			if err := m.violation(ctx, row, "deleted row %s differs from the stored row %s", row, old); err != nil {
				return nil, err
			}
			clean = false
		}
		m.erase(old)
		out.Append(types.OpDelete, old)
	}
	if clean {
		return in, nil
	}
	return out, nil
}

func (m *Materialize) insert(ctx context.Context, row types.Row, out *types.Chunk, clean *bool) error {
	old, found, err := m.lookup(ctx, row)
	if err != nil {
		return err
	}
	m.store(row)
	if found {
		if err := m.violation(ctx, row, "insert of a key that is already in the view (stored row %s)", old); err != nil {
			return err
		}
		*clean = false
		out.Append(types.OpUpdateDelete, old)
		out.Append(types.OpUpdateInsert, row)
		return nil
	}
	out.Append(types.OpInsert, row)
	return nil
}

func onlyInserts(c *types.Chunk) bool {
	for _, op := range c.Ops {
		if op != types.OpInsert {
			return false
		}
	}
	return true
}
