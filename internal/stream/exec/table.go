package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// chunkSize bounds the rows per emitted chunk so that downstream actors get
// work in pieces that fit caches and yield to barriers.
const chunkSize = 1024

// DMLRequest is one statement's write to a table. Apply runs inside the
// table's actor with exclusive access to its state: statements on one
// table are serialised and each sees every earlier statement's writes.
// A statement is atomic: if Apply returns an error, none of its writes
// are applied.
type DMLRequest struct {
	Apply func(ctx context.Context, w *TableWriter) error
	Done  chan error
	// Epoch is set, before Done is signalled, to the epoch the statement's
	// writes belong to (what an acknowledgement must wait for, I7).
	Epoch uint64
	// Prepared, when set, makes the request one part of a transaction
	// that commits to several tables (two-phase, frontend/txn.go): once
	// Apply succeeded the actor sends its epoch on Prepared (buffered) and
	// waits — processing nothing else, no barrier — for the decision on
	// Decide: true applies the writes in that epoch, false discards them
	// (Done gets ErrTxAborted). The coordinator commits only if every part
	// reported the same epoch, so a transaction lands whole in one epoch
	// and no view sees part of it (I7).
	Prepared chan<- uint64
	Decide   <-chan bool
}

// ErrTxAborted is the result of a prepared transaction part whose
// coordinator decided not to commit.
var ErrTxAborted = errors.New("transaction part aborted by its coordinator")

// TableExecutor is the actor of a table: it applies DML statements to the
// table's state table and emits the resulting changes downstream, between
// the barriers meta injects.
type TableExecutor struct {
	name     string
	state    *state.Table
	barriers <-chan *stream.Barrier
	dml      <-chan *DMLRequest
	actor    stream.ActorID

	queue   []*types.Chunk
	stopped bool
	// ingest feeds a connector into the table (nil for plain tables).
	ingest *TableIngest
	// wm generates the table's watermarks (WATERMARK FOR, see
	// table_watermark.go); nil without.
	wm *tableWatermark
	// written maps each key written by a statement in an epoch after the
	// horizon to the epoch of its last write: a transaction whose snapshot
	// is older than that epoch did not see the write, and its commit of
	// the same key conflicts (40001). Entries at or below horizon() — the
	// oldest snapshot any open transaction reads — can no longer matter
	// and are dropped at barriers. Writes made before a recovery replaced
	// the actor are not in written: for them ApplyWriteSet falls back to
	// comparing rows.
	written map[string]uint64
	horizon func() uint64
}

// SetTxHorizon gives the table the oldest snapshot epoch any open
// transaction may still commit from (frontend/txn.go).
func (e *TableExecutor) SetTxHorizon(h func() uint64) { e.horizon = h }

// SetIngest makes the table read a connector between statements
// (CREATE TABLE … WITH (connector = …)).
func (e *TableExecutor) SetIngest(ti *TableIngest) { e.ingest = ti }

// Ingest returns the table's connector feed, or nil.
func (e *TableExecutor) Ingest() *TableIngest { return e.ingest }

// NewTableExecutor creates the executor for one table actor.
func NewTableExecutor(name string, st *state.Table, actor stream.ActorID, barriers <-chan *stream.Barrier, dml <-chan *DMLRequest) *TableExecutor {
	return &TableExecutor{name: name, state: st, barriers: barriers, dml: dml, actor: actor,
		written: map[string]uint64{}}
}

func (e *TableExecutor) Schema() []types.Type { return e.state.Schema().Types }
func (e *TableExecutor) Identity() string {
	return fmt.Sprintf("Table(%s, state table %d)", e.name, e.state.ID())
}

// Next emits queued changes, then waits for the next barrier or statement.
func (e *TableExecutor) Next(ctx context.Context) (stream.Message, error) {
	for {
		if e.stopped {
			return stream.Message{}, stream.ErrStopped
		}
		if len(e.queue) > 0 {
			c := e.queue[0]
			e.queue = e.queue[1:]
			return stream.Message{Chunk: c}, nil
		}
		if e.wm != nil {
			if msg, ok, err := e.wm.next(ctx, e); err != nil || ok {
				return msg, err
			}
		}
		// Barriers first: a waiting barrier must not starve behind a stream
		// of statements.
		select {
		case b := <-e.barriers:
			return e.onBarrier(ctx, b)
		default:
		}
		if e.ingest != nil && !e.ingest.done() {
			msg, ok, err := e.ingestStep(ctx)
			if err != nil || ok {
				return msg, err
			}
			continue
		}
		stream.ReportState(ctx, &stream.StateWaitingInput)
		select {
		case b := <-e.barriers:
			stream.ReportState(ctx, &stream.StateBarrier)
			return e.onBarrier(ctx, b)
		case req := <-e.dml:
			stream.ReportState(ctx, &stream.StateApplyingDML)
			if err := e.apply(ctx, req); err != nil {
				return stream.Message{}, fmt.Errorf("%s: %w", e.Identity(), err)
			}
		case <-ctx.Done():
			return stream.Message{}, ctx.Err()
		}
	}
}

func (e *TableExecutor) onBarrier(ctx context.Context, b *stream.Barrier) (stream.Message, error) {
	if e.ingest != nil {
		// The positions commit in the same epoch as the rows read up to
		// them (I7).
		if err := e.ingest.checkpoint(b.Curr); err != nil {
			return stream.Message{}, fmt.Errorf("%s: %w", e.Identity(), err)
		}
	}
	if err := e.state.CommitContext(ctx, b.Curr); err != nil {
		return stream.Message{}, err
	}
	if e.ingest != nil {
		e.ingest.acknowledge() // I8: after the commit, of committed epochs only
	}
	if e.horizon != nil && len(e.written) > 0 {
		h := e.horizon()
		for k, ep := range e.written {
			if ep <= h {
				delete(e.written, k)
			}
		}
	}
	if b.StopsActor(e.actor) {
		e.stopped = true
		if e.ingest != nil {
			e.ingest.stop()
		}
	}
	return stream.Message{Barrier: b}, nil
}

// apply runs one statement; an error it returns fails the actor.
func (e *TableExecutor) apply(ctx context.Context, req *DMLRequest) error {
	w := &TableWriter{t: e.state, overlay: map[string]*overlayEntry{}, written: e.written, noBulk: e.wm != nil}
	err := func() (err error) {
		// A bug in a statement's evaluation must fail the statement, not the
		// table's actor (I6).
		defer func() {
			if r := recover(); r != nil {
				err = sqlerr.Errorf(sqlerr.InternalError, "internal error applying write to %s: %v", e.name, r)
			}
		}()
		if err := req.Apply(ctx, w); err != nil {
			return err
		}
		if e.wm != nil {
			return e.wm.filterStatement(w)
		}
		return nil
	}()
	if err == nil && req.Prepared != nil {
		err = e.awaitDecision(ctx, req)
	}
	var fatal error
	if err == nil {
		var chunks []*types.Chunk
		if chunks, fatal = w.commit(ctx); fatal != nil {
			// The engine refused or failed a bulk run (closed, fenced, a
			// failed spill that leaves the run buffered): the statement
			// fails and so does the actor, whose recovery discards the
			// epoch's writes, this statement's included (I7).
			err = fatal
		} else {
			e.queue = append(e.queue, chunks...)
			ep := e.state.Epoch()
			for _, k := range w.order {
				e.written[k] = ep
			}
		}
	}
	req.Epoch = e.state.Epoch()
	req.Done <- err
	return fatal
}

// awaitDecision reports a prepared transaction part's epoch and blocks
// the actor until the coordinator decides. The actor passes no barrier
// meanwhile, so its epoch cannot change between the report and the
// apply (I7: one transaction, one epoch).
func (e *TableExecutor) awaitDecision(ctx context.Context, req *DMLRequest) error {
	req.Prepared <- e.state.Epoch()
	select {
	case ok := <-req.Decide:
		if !ok {
			return ErrTxAborted
		}
		return nil
	case <-ctx.Done():
		// The actor is being aborted (recovery of its database, which
		// discards the epoch's writes of every table of the transaction):
		// a decision already made still counts, so that the parts agree.
		select {
		case ok := <-req.Decide:
			if ok {
				return nil
			}
			return ErrTxAborted
		default:
			return ctx.Err()
		}
	}
}

// NewTableWriter returns a writer staging one statement's writes over t.
// A transaction block uses it over a table that holds its snapshot and
// its earlier statements' writes (frontend/txn.go); Stage moves the
// statement's writes into that table.
func NewTableWriter(t *state.Table) *TableWriter {
	return &TableWriter{t: t, overlay: map[string]*overlayEntry{}, noBulk: true}
}

// Stage writes the statement's staged rows into its table's buffer,
// without emitting changes (a transaction block's statement).
func (w *TableWriter) Stage() {
	for _, k := range w.order {
		if o := w.overlay[k]; o.row == nil {
			w.t.DeleteKey(k)
		} else {
			w.t.InsertKey(k, o.row)
		}
	}
	w.overlay, w.order, w.base = map[string]*overlayEntry{}, nil, nil
	w.changes = types.Chunk{}
}

// WriteSetEntry is one key a committing transaction writes: Row is its
// final row (nil: deleted), Base the row the transaction's snapshot held
// under the key (BaseFound false: none).
type WriteSetEntry struct {
	Key       string
	Row       types.Row
	Base      types.Row
	BaseFound bool
}

// ApplyWriteSet applies a transaction's net writes to one table. No key
// may have been written after the transaction's snapshot (epoch snap) —
// first committer wins, checked per key: otherwise the transaction fails
// with 40001, as a concurrent update does in PostgreSQL's repeatable read
// and serializable modes. The rows are compared too: that catches a
// write made before a recovery replaced the actor, which it has no
// record of.
func (w *TableWriter) ApplyWriteSet(ctx context.Context, ws []WriteSetEntry, snap uint64) error {
	ts := w.t.Schema().Types
	var tk ticker
	for _, e := range ws {
		if err := tk.tick(ctx); err != nil {
			return err
		}
		cur, found, err := w.getKey(ctx, e.Key)
		if err != nil {
			return err
		}
		if w.written[e.Key] > snap || found != e.BaseFound || found && !sameRow(cur, e.Base, ts) {
			row := e.Row
			if row == nil {
				row = e.Base
			}
			if row == nil {
				row = cur
			}
			err := sqlerr.New(sqlerr.SerializationFailure, "could not serialize access due to concurrent update")
			err.Detail = fmt.Sprintf("Key %s of %s was changed by another transaction after this transaction's snapshot.", w.t.KeyText(row), w.t.Schema().Name)
			err.Hint = "The transaction might succeed if retried."
			return err
		}
		switch {
		case e.Row == nil && found:
			w.setKey(e.Key, nil)
			w.changes.Append(types.OpDelete, cur)
		case e.Row == nil:
		case !found:
			w.setKey(e.Key, e.Row)
			w.changes.Append(types.OpInsert, e.Row)
		case !sameRow(cur, e.Row, ts):
			w.setKey(e.Key, e.Row)
			w.changes.Append(types.OpUpdateDelete, cur)
			w.changes.Append(types.OpUpdateInsert, e.Row)
		}
	}
	return nil
}

func (w *TableWriter) getKey(ctx context.Context, k string) (types.Row, bool, error) {
	if o, ok := w.overlay[k]; ok {
		return o.row, o.row != nil, nil
	}
	return w.t.GetKey(ctx, k)
}

// TableWriter stages one statement's writes. Reads see the table's state
// with the statement's own earlier writes applied.
type TableWriter struct {
	t       *state.Table
	overlay map[string]*overlayEntry
	order   []string // keys in first-write order, for deterministic output
	changes types.Chunk
	// written is the actor's record of recent writes (see
	// TableExecutor), read by ApplyWriteSet.
	written map[string]uint64
	// base holds the rows GetBase read, by key: the table as of the
	// statement's start, which the statement's own writes (overlay) do
	// not change, so a later Get, Update or Delete of the same row (an
	// UPDATE ... WHERE pk = $1 reads the row, then replaces it) does not
	// read storage again.
	base map[string]baseEntry
	// bulk holds the statement's bulk-inserted batches (tablebulk.go);
	// noBulk makes InsertBatch insert row by row (a transaction block's
	// writer, whose writes Stage moves; a table whose watermark filters
	// the statement's changes).
	bulk   []*InsertBatch
	noBulk bool
}

type baseEntry struct {
	row   types.Row
	found bool
}

type overlayEntry struct {
	row     types.Row // nil: deleted
	written bool
}

// Table returns the state table (for its schema).
func (w *TableWriter) Table() *state.Table { return w.t }

func (w *TableWriter) key(row types.Row) string {
	return string(w.t.EncodeKey(nil, row))
}

// Get returns the current row with the same primary key as row.
func (w *TableWriter) Get(ctx context.Context, row types.Row) (types.Row, bool, error) {
	k := w.key(row)
	if o, ok := w.overlay[k]; ok {
		return o.row, o.row != nil, nil
	}
	if r, ok := w.getBulk(k); ok {
		return r, true, nil
	}
	if b, ok := w.base[k]; ok {
		return b.row, b.found, nil
	}
	return w.t.GetRow(ctx, row)
}

// GetBase returns the row with primary key pk (values in key order) as of
// the statement's start, without the statement's own writes (as Scan and
// ScanPrefix read), and remembers it for the statement's later reads.
func (w *TableWriter) GetBase(ctx context.Context, pk types.Row) (types.Row, bool, error) {
	key, ok := w.t.EncodePK(nil, pk)
	if !ok {
		return w.t.Get(ctx, pk) // reports the unusable key
	}
	k := string(key)
	if b, ok := w.base[k]; ok {
		return b.row, b.found, nil
	}
	row, found, err := w.t.Get(ctx, pk)
	if err != nil {
		return nil, false, err
	}
	if w.base == nil {
		w.base = map[string]baseEntry{}
	}
	w.base[k] = baseEntry{row: row, found: found}
	return row, found, nil
}

// Insert adds row; a row with the same key is a unique violation (23505).
func (w *TableWriter) Insert(ctx context.Context, row types.Row) error {
	_, exists, err := w.Get(ctx, row)
	if err != nil {
		return err
	}
	if exists {
		return w.t.UniqueViolation(row)
	}
	w.set(row, row)
	w.changes.Append(types.OpInsert, row)
	return nil
}

// Append adds row without reading the table: its key is unique by
// construction (a generated _row_id, as in a time-series table's append
// mode), so there is no existence check and no 23505.
func (w *TableWriter) Append(row types.Row) {
	w.set(row, row)
	w.changes.Append(types.OpInsert, row)
}

// Upsert inserts row, or replaces the row with the same key (last write
// wins: a time-series table's dedup on tags and time).
func (w *TableWriter) Upsert(ctx context.Context, row types.Row) error {
	_, exists, err := w.Get(ctx, row)
	if err != nil {
		return err
	}
	if !exists {
		w.Append(row)
		return nil
	}
	return w.Update(ctx, row, row)
}

// Delete removes the row with row's key; it reports whether one existed.
func (w *TableWriter) Delete(ctx context.Context, row types.Row) (bool, error) {
	old, exists, err := w.Get(ctx, row)
	if err != nil || !exists {
		return false, err
	}
	w.set(row, nil)
	w.changes.Append(types.OpDelete, old)
	return true, nil
}

// Update replaces the row old (identified by its key) with updated. When
// the key changes and another row already has the new key, it is a unique
// violation.
func (w *TableWriter) Update(ctx context.Context, old, updated types.Row) error {
	cur, exists, err := w.Get(ctx, old)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("update of %s: row %v is gone", w.t.Schema().Name, old)
	}
	if w.key(old) == w.key(updated) {
		w.set(updated, updated)
		w.changes.Append(types.OpUpdateDelete, cur)
		w.changes.Append(types.OpUpdateInsert, updated)
		return nil
	}
	if _, taken, err := w.Get(ctx, updated); err != nil {
		return err
	} else if taken {
		return w.t.UniqueViolation(updated)
	}
	w.set(old, nil)
	w.set(updated, updated)
	w.changes.Append(types.OpDelete, cur)
	w.changes.Append(types.OpInsert, updated)
	return nil
}

func (w *TableWriter) set(keyRow, row types.Row) { w.setKey(w.key(keyRow), row) }

func (w *TableWriter) setKey(k string, row types.Row) {
	o, ok := w.overlay[k]
	if !ok {
		o = &overlayEntry{}
		w.overlay[k] = o
		w.order = append(w.order, k)
	}
	o.row = row
	o.written = true
}

// Scan iterates the table's rows as of the statement's start (the overlay
// is not applied: UPDATE and DELETE read first, then write).
// ScanPrefix iterates the stored rows whose primary key starts with
// prefix (as Scan, without the statement's own pending writes).
func (w *TableWriter) ScanPrefix(ctx context.Context, prefix types.Row) (*state.RowIter, error) {
	return w.t.Iter(ctx, prefix)
}

func (w *TableWriter) Scan(ctx context.Context) (*state.RowIter, error) {
	return w.t.Iter(ctx, nil)
}

// commit applies the staged writes to the state table and returns the
// change chunks to emit. The bulk batches go first: the overlay's writes
// (made after them in the statement) then reach the engine as newer
// writes of the epoch. An error fails the actor (see apply).
func (w *TableWriter) commit(ctx context.Context) ([]*types.Chunk, error) {
	if err := w.commitBulk(ctx); err != nil {
		return nil, err
	}
	for _, k := range w.order {
		o := w.overlay[k]
		if o.row == nil {
			w.t.DeleteKey(k)
		} else {
			w.t.InsertKey(k, o.row)
		}
	}
	var out []*types.Chunk
	n := w.changes.Len()
	for start := 0; start < n; {
		end := min(start+chunkSize, n)
		// Keep an update pair in one chunk.
		if end < n && w.changes.Ops[end] == types.OpUpdateInsert {
			end++
		}
		out = append(out, &types.Chunk{Ops: w.changes.Ops[start:end], Rows: w.changes.Rows[start:end]})
		start = end
	}
	return out, nil
}

// ingestStep runs one step of a connector-fed table: a waiting statement,
// else a chunk of connector rows (stored, and returned to emit), else a
// wait for the pacer, a barrier or a statement. ok reports a message.
func (e *TableExecutor) ingestStep(ctx context.Context) (msg stream.Message, ok bool, err error) {
	if e.ingest.ext != nil {
		return e.ingestExternal(ctx) // see tableingest.go
	}
	select {
	case req := <-e.dml:
		stream.ReportState(ctx, &stream.StateApplyingDML)
		if err := e.apply(ctx, req); err != nil {
			return stream.Message{}, false, fmt.Errorf("%s: %w", e.Identity(), err)
		}
		return stream.Message{}, false, nil
	default:
	}
	n, wait := e.ingest.budget(time.Now())
	if n > 0 {
		if c := e.ingest.read(n); c != nil {
			if e.wm != nil {
				var err error
				if c, err = e.wm.filterIngest(c); err != nil {
					return stream.Message{}, false, fmt.Errorf("%s: watermark: %w", e.Identity(), err)
				}
			}
			out, err := e.store(ctx, c)
			if err != nil {
				return stream.Message{}, false, err
			}
			return stream.Message{Chunk: out}, out.Len() > 0, nil
		}
		wait = time.Millisecond // nothing available yet
	}
	stream.ReportState(ctx, &stream.StateWaitingInput)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case b := <-e.barriers:
		stream.ReportState(ctx, &stream.StateBarrier)
		msg, err := e.onBarrier(ctx, b)
		return msg, err == nil, err
	case req := <-e.dml:
		stream.ReportState(ctx, &stream.StateApplyingDML)
		if err := e.apply(ctx, req); err != nil {
			return stream.Message{}, false, fmt.Errorf("%s: %w", e.Identity(), err)
		}
	case <-t.C:
	case <-ctx.Done():
		return stream.Message{}, false, ctx.Err()
	}
	return stream.Message{}, false, nil
}

// store writes connector rows into the table. With a hidden row id every
// row is new; with a declared primary key a row replaces the stored row
// with its key (upsert, as RisingWave's tables with connectors do).
func (e *TableExecutor) store(ctx context.Context, c *types.Chunk) (*types.Chunk, error) {
	if e.ingest.rowID {
		for _, row := range c.Rows {
			e.state.Insert(row)
		}
		return c, nil
	}
	return e.storeChanges(ctx, c, nil) // see tableingest.go
}
