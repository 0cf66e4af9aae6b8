package pgcdc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/runneldb/runnel/internal/panics"
	"github.com/runneldb/runnel/internal/types"
)

// Op is what a Change does to the Runnel table, by primary key.
type Op uint8

const (
	// OpUpsert stores Row, replacing the stored row with its key. Inserts
	// and updates that keep the key are upserts, so that a transaction
	// replayed after a restart (see State) changes nothing twice.
	OpUpsert Op = iota + 1
	// OpDelete deletes the row whose key Row's primary-key columns hold
	// (other columns may be NULL: a DEFAULT replica identity sends only
	// the key). Deleting an absent key is a no-op.
	OpDelete
	// OpTruncate deletes every row: an upstream TRUNCATE, and the first
	// change of every (re)started snapshot, which replaces whatever an
	// interrupted one stored.
	OpTruncate
)

func (o Op) String() string {
	switch o {
	case OpUpsert:
		return "upsert"
	case OpDelete:
		return "delete"
	case OpTruncate:
		return "truncate"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Change is one change to apply to the Runnel table, in the table's column
// order.
type Change struct {
	Op  Op
	Row types.Row
	// Keep marks, for an OpUpsert, columns whose stored value stays: an
	// unchanged TOASTed column PostgreSQL did not send. nil when every
	// column is given. A kept column of a key with no stored row is NULL.
	Keep []bool
	// Old is set on an OpUpsert that changes the row's key (an UPDATE of
	// a key column): the row stored under Old's key is deleted, and Keep
	// columns take their values from it.
	Old types.Row
}

// Batch is a run of changes and the position after them: commit the
// changes and the state in one epoch (I8), then call Reader.Committed.
type Batch struct {
	Changes []Change
	State   State
}

// Options tune a Reader.
type Options struct {
	// MaxBatch bounds the changes per Batch (1024).
	MaxBatch int
	// StatusInterval is how often the reader reports the committed LSN to
	// PostgreSQL and, while idle, asks for a keepalive to move its own
	// position forward (1 s).
	StatusInterval time.Duration
	// Logger gets warnings (slog.Default()).
	Logger *slog.Logger
	// Name names the Runnel table in messages.
	Name string
}

func (o *Options) fill() {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Status is what a reader is doing, for the source's state in the system
// catalog.
type Status struct {
	Phase Phase
	// Connected is false while the upstream cannot be reached; Err is the
	// last error (retried with backoff), "" when healthy.
	Connected bool
	Err       string
	Retries   int64
	// Received is the position delivered so far; Acked the one reported
	// to PostgreSQL (committed by Runnel).
	Received, Acked pglogrepl.LSN
	// Notices are schema changes seen upstream (columns added or dropped).
	Notices []string
}

// Reader streams one upstream table's changes: the initial snapshot, then
// the pgoutput stream from the slot. One goroutine owns both connections;
// Next hands its batches over, so a slow upstream never blocks the caller
// beyond Next's context.
type Reader struct {
	cfg  Config
	cols []Column
	pk   []int
	opt  Options
	// commitCol is the INCLUDE timestamp column (-1: none).
	commitCol int

	out    chan Batch
	cancel context.CancelFunc
	done   chan struct{}

	acked atomic.Uint64 // LSN committed by Runnel: what PostgreSQL may forget
	// walEnd is the upstream's WAL end as last reported (keepalives,
	// XLogData), for the lag metric.
	walEnd atomic.Uint64

	// emitted is the state of the last batch handed to Next (run's
	// goroutine only): a session that panicked resumes from it.
	emitted    State
	hasEmitted bool

	mu     sync.Mutex
	status Status

	// Counters.
	SnapshotRows atomic.Int64 // rows read by snapshots
	Changes      atomic.Int64 // changes streamed
	BadValues    atomic.Int64 // values that did not parse as their column's type (stored as NULL)
	BadRows      atomic.Int64 // rows skipped: malformed message, or a key value that did not parse
}

// Start starts a reader for cfg's table feeding a Runnel table with cols and
// primary key pk (column indexes), resuming at committed (nil: a new
// table, which starts with a snapshot).
func Start(cfg Config, cols []Column, pk []int, committed *State, opt Options) *Reader {
	opt.fill()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reader{cfg: cfg, cols: cols, pk: pk, opt: opt, out: make(chan Batch, 4), cancel: cancel,
		done: make(chan struct{}), commitCol: slices.IndexFunc(cols, func(c Column) bool { return c.CommitTime })}
	st := State{Phase: PhaseSnapshot, Slot: cfg.Slot}
	if committed != nil {
		st = *committed
		if st.Phase == PhaseStream {
			// Committed already: PostgreSQL may forget everything before.
			r.acked.Store(uint64(st.LSN))
		}
	}
	r.status = Status{Phase: st.Phase, Received: st.LSN, Acked: pglogrepl.LSN(r.acked.Load())}
	go r.run(ctx, st)
	return r
}

// Next returns the next batch, waiting until there is one or ctx ends.
func (r *Reader) Next(ctx context.Context) (Batch, error) {
	select {
	case b := <-r.out:
		return b, nil
	case <-ctx.Done():
		return Batch{}, ctx.Err()
	}
}

// Batches is the channel Next reads, for callers that select on it.
func (r *Reader) Batches() <-chan Batch { return r.out }

// Committed tells the reader that the epoch holding s has committed: its
// LSN may be acknowledged to PostgreSQL (I8: never earlier).
func (r *Reader) Committed(s State) {
	if s.Phase != PhaseStream {
		return
	}
	for {
		old := r.acked.Load()
		if uint64(s.LSN) <= old {
			return
		}
		if r.acked.CompareAndSwap(old, uint64(s.LSN)) {
			return
		}
	}
}

// Status returns the reader's current status.
func (r *Reader) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	s.Notices = append([]string(nil), s.Notices...)
	s.Acked = pglogrepl.LSN(r.acked.Load())
	return s
}

// Close stops the reader and closes its connections; it returns once the
// goroutine has exited. The slot stays (DropSlot removes it).
func (r *Reader) Close() {
	r.cancel()
	<-r.done
}

func (r *Reader) setStatus(f func(*Status)) {
	r.mu.Lock()
	f(&r.status)
	r.mu.Unlock()
}

// ackPoll bounds how long a committed LSN waits before it is reported.
const ackPoll = 100 * time.Millisecond

// Backoff bounds for reconnecting to an unreachable upstream.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
)

// sessionSite names the reader's sessions for panics.Arm.
const sessionSite = "pgcdc.session"

func (r *Reader) run(ctx context.Context, st State) {
	defer close(r.done)
	backoff := minBackoff
	for {
		var err error
		healthy := time.Now()
		// The session runs the upstream's bytes through decoders on this
		// goroutine, outside any actor: a panic in it fails this session
		// (logged, shown in the status, retried after the backoff) and
		// never ends the process (I9).
		err = panics.Catch(sessionSite, func() (err error) {
			st, err = r.session(ctx, st)
			return err
		})
		if pe := (*panics.Error)(nil); errors.As(err, &pe) {
			if r.hasEmitted {
				st = r.emitted // what the session returns on an error
			}
			r.opt.Logger.Error("postgres-cdc: session panicked", "table", r.opt.Name, "err", err, "stack", string(pe.Stack))
		}
		if ctx.Err() != nil {
			return
		}
		if time.Since(healthy) > 5*time.Second {
			backoff = minBackoff
		}
		r.setStatus(func(s *Status) { s.Connected, s.Err = false, err.Error(); s.Retries++ })
		r.opt.Logger.Warn("postgres-cdc: upstream failed; retrying", "table", r.opt.Name, "upstream", r.cfg.Redacted()+"/"+r.cfg.TableName(),
			"error", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// session runs one connection's worth of work from st and returns the
// state to resume from (the last one emitted) with the error that ended it.
func (r *Reader) session(ctx context.Context, st State) (State, error) {
	repl, err := connect(ctx, r.cfg, true)
	if err != nil {
		return st, err
	}
	defer repl.Close(context.Background())
	if st.Phase == PhaseSnapshot {
		if st, err = r.snapshot(ctx, repl, st); err != nil {
			return st, err
		}
	}
	return r.stream(ctx, repl, st)
}

// emit hands a batch to Next; it blocks while the caller is behind.
func (r *Reader) emit(ctx context.Context, b Batch) error {
	select {
	case r.out <- b:
		r.emitted, r.hasEmitted = b.State, true
		r.setStatus(func(s *Status) { s.Phase, s.Received = b.State.Phase, b.State.LSN })
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// snapshot (re)creates the slot, reads the table in the slot's exported
// snapshot and returns the streaming state at the slot's consistent point:
// every change after the snapshot is in the stream from there, and none
// before it (the snapshot and the slot start at the same instant).
func (r *Reader) snapshot(ctx context.Context, repl *pgconn.PgConn, st State) (State, error) {
	conn, err := connect(ctx, r.cfg, false)
	if err != nil {
		return st, err
	}
	defer conn.Close(context.Background())
	if err := ensurePublication(ctx, conn, r.cfg); err != nil {
		return st, err
	}
	// A slot left by an interrupted snapshot (ours: the state names it) is
	// useless without its exported snapshot: start over.
	if err := dropSlot(ctx, conn, st.Slot); err != nil {
		return st, err
	}
	cp, snap, err := createSlot(ctx, repl, st.Slot)
	if err != nil {
		return st, err
	}
	r.setStatus(func(s *Status) { s.Connected, s.Err, s.Phase = true, "", PhaseSnapshot })
	if _, err := exec(ctx, conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT "+quoteLiteral(snap)); err != nil {
		return st, fmt.Errorf("postgres-cdc: import snapshot %s of slot %s: %w", snap, st.Slot, err)
	}
	st = State{Phase: PhaseSnapshot, LSN: cp, Slot: st.Slot}
	// Whatever an interrupted snapshot stored is replaced.
	batch := []Change{{Op: OpTruncate}}
	// Columns of the Runnel table not (or no longer) upstream read as NULL
	// (described inside the snapshot's transaction: the same instant).
	up, err := describe(ctx, conn, r.cfg)
	if err != nil {
		return st, err
	}
	rr := conn.ExecParams(ctx, "SELECT "+selectListOf(r.cols, up.Columns)+" FROM "+r.cfg.QualifiedTable(), nil, nil, nil, nil)
	for rr.NextRow() {
		row, ok := r.snapshotRow(rr.Values())
		if !ok {
			continue
		}
		batch = append(batch, Change{Op: OpUpsert, Row: row})
		r.SnapshotRows.Add(1)
		if len(batch) >= r.opt.MaxBatch {
			if err := r.emit(ctx, Batch{Changes: batch, State: st}); err != nil {
				rr.Close()
				return st, err
			}
			batch = nil
		}
	}
	if _, err := rr.Close(); err != nil {
		return st, fmt.Errorf("postgres-cdc: snapshot of %s: %w", r.cfg.TableName(), err)
	}
	if _, err := exec(ctx, conn, "COMMIT"); err != nil {
		return st, err
	}
	st.Phase = PhaseStream
	if err := r.emit(ctx, Batch{Changes: batch, State: st}); err != nil {
		return State{Phase: PhaseSnapshot, Slot: st.Slot}, err
	}
	return st, nil
}

func (r *Reader) snapshotRow(vals [][]byte) (types.Row, bool) {
	row := make(types.Row, len(r.cols))
	for i, v := range vals {
		if i == r.commitCol {
			row[i] = types.DTimestamptz(0) // no one transaction wrote it
			continue
		}
		if v == nil {
			continue
		}
		d, ok := r.parse(i, v)
		if !ok && r.isKey(i) {
			r.BadRows.Add(1)
			return nil, false
		}
		row[i] = d
	}
	return row, true
}

func (r *Reader) isKey(col int) bool {
	for _, k := range r.pk {
		if k == col {
			return true
		}
	}
	return false
}

// parse converts an upstream text value to column col's type; a value that
// does not parse is NULL (RisingWave's rule for a type mismatch), counted.
func (r *Reader) parse(col int, v []byte) (types.Datum, bool) {
	d, err := types.ParseText(string(v), r.cols[col].Type, nil)
	if err != nil {
		if r.BadValues.Add(1)%1000 == 1 {
			r.opt.Logger.Warn("postgres-cdc: value does not fit its column; stored as NULL", "table", r.opt.Name,
				"column", r.cols[col].Name, "type", r.cols[col].Type.Name(), "error", err, "bad_values", r.BadValues.Load())
		}
		return types.NullDatum, false
	}
	return d, true
}

// stream reads the slot from st.LSN until an error or ctx ends.
func (r *Reader) stream(ctx context.Context, repl *pgconn.PgConn, st State) (State, error) {
	err := pglogrepl.StartReplication(ctx, repl, st.Slot, st.LSN, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names " + quoteLiteral(r.cfg.Publication)},
	})
	if err != nil {
		return st, fmt.Errorf("postgres-cdc: start replication from slot %s at %s: %w", st.Slot, st.LSN, err)
	}
	r.setStatus(func(s *Status) { s.Connected, s.Err, s.Phase = true, "", PhaseStream })
	d := &decoder{r: r}
	var (
		pending  []Change
		inTxn    bool
		dirty    bool // st moved without a batch
		sentAck  pglogrepl.LSN
		nextTick = time.Now()
	)
	flush := func() error {
		if len(pending) == 0 && !dirty {
			return nil
		}
		if err := r.emit(ctx, Batch{Changes: pending, State: st}); err != nil {
			return err
		}
		pending, dirty = nil, false
		return nil
	}
	for {
		now := time.Now()
		acked := pglogrepl.LSN(r.acked.Load())
		if !now.Before(nextTick) || acked > sentAck {
			idle := !inTxn && len(pending) == 0
			if err := flush(); err != nil {
				return st, err
			}
			// I8: report only what Runnel committed. While idle, ask for a
			// keepalive: its WAL position moves an idle table's state, so
			// the slot does not pin WAL other tables write.
			if acked > 0 || idle {
				if err := pglogrepl.SendStandbyStatusUpdate(ctx, repl, pglogrepl.StandbyStatusUpdate{
					WALWritePosition: max(acked, 1), WALFlushPosition: max(acked, 1), WALApplyPosition: max(acked, 1),
					ReplyRequested: idle && !now.Before(nextTick),
				}); err != nil {
					return st, fmt.Errorf("postgres-cdc: send status: %w", err)
				}
				sentAck = acked
			}
			if !now.Before(nextTick) {
				nextTick = now.Add(r.opt.StatusInterval)
			}
		}
		// Wake at least every ackPoll to report a fresh commit promptly.
		rctx, cancel := context.WithDeadline(ctx, earliest(nextTick, now.Add(ackPoll)))
		msg, err := repl.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			if pgconn.Timeout(err) {
				continue
			}
			return st, fmt.Errorf("postgres-cdc: receive: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					continue
				}
				r.walEnd.Store(uint64(ka.ServerWALEnd))
				if !inTxn && len(pending) == 0 && ka.ServerWALEnd > st.LSN {
					// Every transaction that committed before the server's
					// WAL end has been sent: the position may move there.
					st.LSN, dirty = ka.ServerWALEnd, true
				}
				if ka.ReplyRequested {
					nextTick = time.Now()
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					r.BadRows.Add(1)
					continue
				}
				r.walEnd.Store(uint64(xld.ServerWALEnd))
				lm, err := parseMessage(xld.WALData)
				if err != nil {
					r.BadRows.Add(1)
					r.opt.Logger.Warn("postgres-cdc: malformed replication message skipped", "table", r.opt.Name, "lsn", xld.WALStart, "error", err)
					continue
				}
				switch lm := lm.(type) {
				case *pglogrepl.BeginMessage:
					inTxn = true
					d.commitTime = types.DTimestamptz(lm.CommitTime.UnixMicro())
				case *pglogrepl.CommitMessage:
					inTxn = false
					if lm.TransactionEndLSN > st.LSN {
						st.LSN, dirty = lm.TransactionEndLSN, true
					}
					if len(pending) > 0 {
						if err := flush(); err != nil {
							return st, err
						}
					}
				default:
					pending = d.apply(lm, pending)
					if len(pending) >= r.opt.MaxBatch {
						// Mid-transaction: the state stays at the last
						// transaction's end, so a restart replays this
						// one whole (idempotent by key).
						if err := flush(); err != nil {
							return st, err
						}
					}
				}
			}
		case *pgproto3.ErrorResponse:
			return st, fmt.Errorf("postgres-cdc: replication of slot %s: %w", st.Slot, pgconn.ErrorResponseToPgError(m))
		}
	}
}

// parseMessage decodes a pgoutput message; malformed bytes are an error,
// never a panic or a huge allocation (I9): the lengths and counts the
// message declares are checked against its size before pglogrepl, which
// trusts them, decodes it.
func parseMessage(b []byte) (m pglogrepl.Message, err error) {
	if err := checkMessage(b); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("malformed pgoutput message: %v", p)
		}
	}()
	return pglogrepl.Parse(b)
}

var errMalformed = errors.New("malformed pgoutput message")

// checkMessage walks the declared structure of tuple-carrying and truncate
// messages (the ones whose counts drive allocations).
func checkMessage(b []byte) error {
	if len(b) == 0 {
		return errMalformed
	}
	p := b[1:]
	switch b[0] {
	case 'I':
		if len(p) < 5 {
			return errMalformed
		}
		return checkTuple(p[5:])
	case 'U', 'D':
		if len(p) < 5 {
			return errMalformed
		}
		q := p[4:]
		if q[0] == 'K' || q[0] == 'O' {
			n, err := tupleLen(q[1:])
			if err != nil {
				return err
			}
			q = q[1+n:]
			if b[0] == 'D' {
				return nil
			}
			if len(q) == 0 || q[0] != 'N' {
				return errMalformed
			}
		}
		if b[0] == 'D' && q[0] != 'K' && q[0] != 'O' {
			return errMalformed
		}
		return checkTuple(q[1:])
	case 'T':
		if len(p) < 5 {
			return errMalformed
		}
		if n := binary.BigEndian.Uint32(p); uint64(n)*4 > uint64(len(p)-5) {
			return errMalformed
		}
	}
	return nil
}

func checkTuple(p []byte) error {
	_, err := tupleLen(p)
	return err
}

// tupleLen is the size of the TupleData at the start of p.
func tupleLen(p []byte) (int, error) {
	if len(p) < 2 {
		return 0, errMalformed
	}
	n := int(binary.BigEndian.Uint16(p))
	off := 2
	for range n {
		if off >= len(p) {
			return 0, errMalformed
		}
		kind := p[off]
		off++
		switch kind {
		case 'n', 'u':
		case 't', 'b':
			if off+4 > len(p) {
				return 0, errMalformed
			}
			l := uint64(binary.BigEndian.Uint32(p[off:]))
			off += 4
			if l > uint64(len(p)-off) {
				return 0, errMalformed
			}
			off += int(l)
		default:
			return 0, errMalformed
		}
	}
	return off, nil
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
