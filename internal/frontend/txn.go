package frontend

import (
	"context"
	"strings"
	"sync"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/streamplan"
	"github.com/runneldb/runnel/internal/types"
)

// Transaction blocks (BEGIN … COMMIT) — snapshot isolation with
// first-committer-wins on the rows a transaction writes.
//
//   - The block's first statement pins the last committed snapshot (after
//     waiting for the session's own earlier writes, so that it sees them)
//     and every read of the block — SELECT, DML subqueries, the rows
//     UPDATE and DELETE scan — reads that snapshot with the block's own
//     pending writes merged over it (txSource).
//   - A write statement runs its usual code (exec.TableWriter) against a
//     state.Table over the snapshot: its writes stay buffered in that
//     table (the block's write set per table, in key order). A primary-key
//     violation against the snapshot or the block's own writes fails the
//     statement with 23505; any error aborts the block (25P02 until
//     ROLLBACK), as in PostgreSQL, so a failed statement's half-staged
//     writes are never committed.
//   - ROLLBACK (or COMMIT of an aborted block) drops the write set.
//   - COMMIT ships each table's net writes (final row or delete per key,
//     with the row the snapshot held under it) to the table's actor. The
//     actor checks that every key still holds the snapshot's row — another
//     writer changed it otherwise, and the transaction fails with 40001
//     (first committer wins) — and applies them. Writes to several tables
//     commit two-phase: each actor validates, reports its epoch and waits;
//     only if all report the same epoch are they told to apply, so the
//     transaction lands in one epoch and no view ever sees half of it (I7:
//     a view equals its query over the base tables at every epoch). A
//     crash or recovery before that epoch commits loses the transaction
//     whole; after, it is durable whole.
//
// Rows the block only reads are not checked at commit: write skew is
// possible, as in PostgreSQL's REPEATABLE READ (not SERIALIZABLE).
// Materialized views read in a block show the snapshot, without the
// block's pending writes.
type txn struct {
	reg    *openTxns
	snap   *storage.Snapshot
	tables map[catalog.ObjectID]*txTable
	order  []catalog.ObjectID
}

// txTable is one table a transaction wrote: tbl reads the snapshot and
// buffers the block's writes (never committed itself).
type txTable struct {
	rel *catalog.Relation
	tbl *state.Table
}

func (t *txn) close() {
	if t != nil && t.snap != nil {
		t.reg.mu.Lock()
		delete(t.reg.open, t)
		t.reg.mu.Unlock()
		t.snap.Close()
		t.snap = nil
	}
}

func (t *txn) wrote() bool {
	for _, tt := range t.tables {
		if tt.tbl.BufferedLen() > 0 {
			return true
		}
	}
	return false
}

// table returns the write set of rel, creating it.
func (t *txn) table(rel *catalog.Relation) *txTable {
	if tt := t.tables[rel.ID]; tt != nil {
		return tt
	}
	tt := &txTable{rel: rel, tbl: state.New(storage.TableID(rel.StateTable), streamplan.TableStateSchema(rel), snapshotStore{t.snap}, t.snap.Epoch())}
	t.tables[rel.ID] = tt
	t.order = append(t.order, rel.ID)
	return tt
}

// currentTxn returns the open block's transaction, starting it at the
// block's first statement that reads or writes; nil outside a block.
func (ss *session) currentTxn(ctx context.Context) (*txn, error) {
	if !ss.inTxBlock {
		return nil, nil
	}
	if ss.tx != nil {
		return ss.tx, nil
	}
	// The snapshot must hold this session's earlier (autocommit) writes:
	// wait for them as FLUSH would.
	if len(ss.written) > 0 {
		if err := ss.flush(ctx); err != nil {
			return nil, err
		}
	}
	ss.tx = ss.s.openTxns.begin(ss.s.store)
	return ss.tx, nil
}

// openTxns registers the snapshots of open transaction blocks, so that
// table actors keep the record of the writes those transactions may
// conflict with (exec.TableExecutor.SetTxHorizon).
type openTxns struct {
	mu   sync.Mutex
	open map[*txn]uint64
}

// begin pins a snapshot for a new transaction and registers it. Both
// happen under mu, so a horizon computed concurrently is either computed
// before (then it is at most the committed epoch then, which the new
// snapshot holds) or takes the snapshot into account.
func (o *openTxns) begin(store *storage.Engine) *txn {
	o.mu.Lock()
	defer o.mu.Unlock()
	tx := &txn{snap: store.Snapshot(), tables: map[catalog.ObjectID]*txTable{}, reg: o}
	if o.open == nil {
		o.open = map[*txn]uint64{}
	}
	o.open[tx] = tx.snap.Epoch()
	return tx
}

// horizon is the oldest epoch a transaction may still commit from: writes
// at or below it are visible to every open and future snapshot.
func (o *openTxns) horizon(store *storage.Engine) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := store.CommittedEpoch()
	for _, e := range o.open {
		h = min(h, e)
	}
	return h
}

// endTxn ends the block, dropping what was not committed.
func (ss *session) endTxn() {
	ss.tx.close()
	ss.tx = nil
	ss.inTxBlock, ss.txFailed, ss.txWrote = false, false, false
	ss.savepoints = nil
}

// ddlInTxBlock handles DDL inside a transaction block. DDL is not
// transactional in Runnel: it runs at once. After the block has staged
// writes it is refused (its writes were read against the catalog and
// snapshot the DDL would change); before, the block's snapshot is dropped
// so that its next statement sees the DDL's effect (BEGIN; CREATE TABLE;
// INSERT …; COMMIT, as migration tools run).
func (ss *session) ddlInTxBlock(b any) error {
	switch b.(type) {
	case *binder.Insert, *binder.Update, *binder.Delete, *binder.Copy:
		return nil
	}
	if ss.tx == nil {
		return nil
	}
	if ss.tx.wrote() {
		return sqlerr.New(sqlerr.ActiveSQLTransaction, "DDL is not supported in a transaction block after writes; COMMIT or ROLLBACK them first")
	}
	ss.tx.close()
	ss.tx = nil
	return nil
}

// readSource returns the data source of a statement's reads and its
// release: the block's snapshot with its writes merged in a block, else a
// fresh snapshot of the last committed epoch.
func (st *statement) readSource(ctx context.Context, dml bool) (batch.DataSource, func(), error) {
	tx, err := st.sess.currentTxn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if tx != nil {
		return &txSource{snapshotSource: snapshotSource{snap: tx.snap, sess: st.sess}, tx: tx}, func() {}, nil
	}
	snap := st.sess.s.store.Snapshot()
	return &snapshotSource{snap: snap, sess: st.sess, ownWritesPending: dml && len(st.sess.written) > 0}, snap.Close, nil
}

// txSource reads a transaction's snapshot with its pending writes merged
// over the tables it wrote.
type txSource struct {
	snapshotSource
	tx *txn
}

func (d *txSource) Scan(ctx context.Context, rel *catalog.Relation) (batch.RowIterator, error) {
	tt := d.tx.tables[rel.ID]
	if tt == nil {
		return d.snapshotSource.Scan(ctx, rel)
	}
	it, err := tt.tbl.Iter(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &stateRows{it: it}, nil
}

func (d *txSource) ScanKey(ctx context.Context, rel *catalog.Relation, prefix types.Row) (batch.RowIterator, bool, error) {
	tt := d.tx.tables[rel.ID]
	if tt == nil {
		return d.snapshotSource.ScanKey(ctx, rel, prefix)
	}
	if _, _, ok := tt.tbl.PrefixBounds(prefix); !ok {
		return nil, false, nil
	}
	if len(prefix) == len(tt.tbl.Schema().PK) {
		row, found, err := tt.tbl.Get(ctx, prefix)
		if err != nil {
			return nil, false, err
		}
		return &pointRow{row: row, found: found}, true, nil
	}
	it, err := tt.tbl.Iter(ctx, prefix)
	if err != nil {
		return nil, false, err
	}
	return &stateRows{it: it}, true, nil
}

// ScanIndex reads an index from the block's snapshot unless the block
// wrote to its relation: the index does not hold the block's writes, so
// the relation is read instead (ok false).
func (d *txSource) ScanIndex(ctx context.Context, index *catalog.Relation, eq types.Row, lo, hi *types.Datum) (batch.RowIterator, bool, error) {
	if index.Index == nil || d.tx.tables[index.Index.On] != nil {
		return nil, false, nil
	}
	return d.snapshotSource.ScanIndex(ctx, index, eq, lo, hi)
}

// write applies one statement's writes to rel: inside a block they are
// staged in the block's write set (epoch 0: nothing to acknowledge yet),
// otherwise sent to the table's actor at once.
func (ss *session) write(ctx context.Context, rel *catalog.Relation, apply func(ctx context.Context, w *exec.TableWriter) error) (uint64, error) {
	tx, err := ss.currentTxn(ctx)
	if err != nil {
		return 0, err
	}
	if tx == nil {
		return ss.s.dml.Write(ctx, rel, apply)
	}
	if rel.Options["connector"] != "" {
		return 0, sqlerr.Errorf(sqlerr.FeatureNotSupported, "writing to table %q, which has a connector, inside a transaction block is not supported", rel.Name)
	}
	w := exec.NewTableWriter(tx.table(rel).tbl)
	if err := apply(ctx, w); err != nil {
		return 0, err
	}
	w.Stage()
	ss.txWrote = true
	return 0, nil
}

// commitTxn commits a block's writes and returns their epoch (0: none).
func (s *Frontend) commitTxn(ctx context.Context, tx *txn) (uint64, error) {
	type part struct {
		rel *catalog.Relation
		ws  []exec.WriteSetEntry
	}
	var parts []part
	for _, id := range tx.order {
		tt := tx.tables[id]
		if tt.tbl.BufferedLen() == 0 {
			continue
		}
		base := state.New(storage.TableID(tt.rel.StateTable), streamplan.TableStateSchema(tt.rel), snapshotStore{tx.snap}, tx.snap.Epoch())
		var ws []exec.WriteSetEntry
		err := tt.tbl.Buffered(func(key string, row types.Row) error {
			b, found, err := base.GetKey(ctx, key)
			if err != nil {
				return err
			}
			if !found && row == nil {
				return nil // inserted and deleted again in the block
			}
			ws = append(ws, exec.WriteSetEntry{Key: key, Row: row, Base: b, BaseFound: found})
			return nil
		})
		if err != nil {
			return 0, mapStorageErr(err)
		}
		if len(ws) > 0 {
			parts = append(parts, part{rel: tt.rel, ws: ws})
		}
	}
	switch len(parts) {
	case 0:
		return 0, nil
	case 1:
		p := parts[0]
		return s.dml.Write(ctx, p.rel, func(ctx context.Context, w *exec.TableWriter) error {
			return w.ApplyWriteSet(ctx, p.ws, tx.snap.Epoch())
		})
	}
	rels := make([]*catalog.Relation, len(parts))
	applies := make([]func(context.Context, *exec.TableWriter) error, len(parts))
	for i, p := range parts {
		rels[i] = p.rel
		applies[i] = func(ctx context.Context, w *exec.TableWriter) error {
			return w.ApplyWriteSet(ctx, p.ws, tx.snap.Epoch())
		}
	}
	return s.dml.WriteAll(ctx, rels, applies)
}

// Savepoints (SAVEPOINT, ROLLBACK TO SAVEPOINT, RELEASE SAVEPOINT), which
// drivers and ORMs use for nested transactions. A savepoint records the
// block's write set as it stands (every table's buffered writes: a copy,
// O(writes so far)); ROLLBACK TO rebuilds each table's write set over the
// same snapshot from that copy — the statements after the savepoint,
// including a failed one's half-staged writes, are gone — and leaves the
// block usable again if an error had aborted it. The snapshot is kept (as
// PostgreSQL keeps a REPEATABLE READ transaction's). RELEASE forgets the
// savepoint and those after it, keeping their writes; COMMIT and ROLLBACK
// end them all.
type savepoint struct {
	name   string
	wrote  bool
	tables map[catalog.ObjectID][]savedWrite // nil: no statement had run yet
}

type savedWrite struct {
	key string
	row types.Row // nil: a delete
}

func (ss *session) savepoint(name string) (pgwire.Result, error) {
	if !ss.inTxBlock {
		return pgwire.Result{}, sqlerr.New(sqlerr.NoActiveSQLTransaction, "SAVEPOINT can only be used in transaction blocks")
	}
	sp := savepoint{name: name, wrote: ss.txWrote}
	if ss.tx != nil {
		sp.tables = map[catalog.ObjectID][]savedWrite{}
		for id, tt := range ss.tx.tables {
			var ws []savedWrite
			if err := tt.tbl.Buffered(func(key string, row types.Row) error {
				ws = append(ws, savedWrite{key: key, row: row})
				return nil
			}); err != nil {
				return pgwire.Result{}, mapStorageErr(err)
			}
			sp.tables[id] = ws
		}
	}
	ss.savepoints = append(ss.savepoints, sp)
	return pgwire.Result{Tag: "SAVEPOINT"}, nil
}

// findSavepoint returns the index of the newest savepoint called name.
func (ss *session) findSavepoint(name string) (int, error) {
	for i := len(ss.savepoints) - 1; i >= 0; i-- {
		if ss.savepoints[i].name == name {
			return i, nil
		}
	}
	return 0, sqlerr.Errorf(sqlerr.InvalidSavepointSpecification, "savepoint %q does not exist", name)
}

func (ss *session) releaseSavepoint(name string) (pgwire.Result, error) {
	if !ss.inTxBlock {
		return pgwire.Result{}, sqlerr.New(sqlerr.NoActiveSQLTransaction, "RELEASE SAVEPOINT can only be used in transaction blocks")
	}
	i, err := ss.findSavepoint(name)
	if err != nil {
		return pgwire.Result{}, err
	}
	ss.savepoints = ss.savepoints[:i]
	return pgwire.Result{Tag: "RELEASE"}, nil
}

func (ss *session) rollbackToSavepoint(name string) (pgwire.Result, error) {
	if !ss.inTxBlock {
		return pgwire.Result{}, sqlerr.New(sqlerr.NoActiveSQLTransaction, "ROLLBACK TO SAVEPOINT can only be used in transaction blocks")
	}
	i, err := ss.findSavepoint(name)
	if err != nil {
		return pgwire.Result{}, err
	}
	sp := ss.savepoints[i]
	ss.savepoints = ss.savepoints[:i+1]
	if tx := ss.tx; tx != nil {
		for id, tt := range tx.tables {
			tt.tbl = state.New(storage.TableID(tt.rel.StateTable), streamplan.TableStateSchema(tt.rel), snapshotStore{tx.snap}, tx.snap.Epoch())
			for _, w := range sp.tables[id] {
				if w.row == nil {
					tt.tbl.DeleteKey(w.key)
				} else {
					tt.tbl.InsertKey(w.key, w.row)
				}
			}
		}
	}
	ss.txWrote = sp.wrote
	ss.txFailed = false
	return pgwire.Result{Tag: "ROLLBACK"}, nil
}

// refuseSerializable fails a request for SERIALIZABLE isolation (BEGIN
// ISOLATION LEVEL ..., SET TRANSACTION ..., SET
// default_transaction_isolation): Runnel's blocks are snapshot isolation,
// which allows write skew, and running a SERIALIZABLE request with less
// would be silently wrong. READ COMMITTED and READ UNCOMMITTED requests
// run as REPEATABLE READ, which the SQL standard allows (a stronger level).
func refuseSerializable(opts []*pg_query.Node) error {
	for _, o := range opts {
		v := ""
		if d := o.GetDefElem(); d != nil {
			if d.Defname != "transaction_isolation" {
				continue
			}
			v = constText(d.Arg)
		} else {
			v = constText(o)
		}
		if strings.EqualFold(strings.TrimSpace(v), "serializable") {
			return sqlerr.New(sqlerr.FeatureNotSupported, "SERIALIZABLE isolation is not supported").
				WithDetail("Runnel's transactions are snapshot isolation (REPEATABLE READ): concurrent writers of a row get 40001, but write skew between rows only read is possible.").
				WithHint("Use REPEATABLE READ, or make conflicting transactions write a common row.")
		}
	}
	return nil
}
