package metastore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	neturl "net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/obs"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// Dialect is the SQL flavour of the backend.
type Dialect int

const (
	SQLite Dialect = iota
	Postgres
)

func (d Dialect) String() string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// DB is an open metadata store.
type DB struct {
	db      *sql.DB
	dialect Dialect
	url     string
	fault   atomic.Pointer[func(point string) error]
	fence   atomic.Pointer[Fence]
	// ckpt (SQLite) checkpoints the WAL in the background on a connection
	// of its own, so that no commit pays for it.
	ckpt *checkpointer
	// stmts holds statements compiled once (Prepare), by their rebound
	// text; written only before concurrent use begins.
	stmtsMu sync.RWMutex
	stmts   map[string]*sql.Stmt
}

// Prepare compiles queries once so that transactions running them skip
// compiling them again (Tx.Exec/QueryRow look them up by text). On SQLite
// compiling is a good part of a small statement's cost: the storage
// engine's commit runs four such statements per epoch. PostgreSQL's driver
// caches prepared statements itself, so there it does nothing. Call it
// outside any transaction: with SQLite's single connection, preparing
// waits for that connection.
func (d *DB) Prepare(ctx context.Context, queries ...string) error {
	if d.dialect != SQLite {
		return nil
	}
	for _, q := range queries {
		rq := d.rebind(q)
		d.stmtsMu.RLock()
		_, done := d.stmts[rq]
		d.stmtsMu.RUnlock()
		if done {
			continue
		}
		st, err := d.db.PrepareContext(ctx, rq)
		if err != nil {
			return fmt.Errorf("metastore: prepare %q: %w", q, err)
		}
		d.stmtsMu.Lock()
		if d.stmts == nil {
			d.stmts = map[string]*sql.Stmt{}
		}
		if _, dup := d.stmts[rq]; dup {
			st.Close()
		} else {
			d.stmts[rq] = st
		}
		d.stmtsMu.Unlock()
	}
	return nil
}

// prepared returns the compiled statement for a rebound query, or nil.
func (d *DB) prepared(rq string) *sql.Stmt {
	d.stmtsMu.RLock()
	defer d.stmtsMu.RUnlock()
	return d.stmts[rq]
}

// sqliteBusyTimeout is how long a SQLite writer waits for another process's
// write lock before SQLITE_BUSY. Within one process writers queue on the
// single connection instead.
const sqliteBusyTimeout = 10 * time.Second

// Open opens the store named by url: "postgres://…" or "postgresql://…" for
// PostgreSQL, otherwise a SQLite file path (optionally "sqlite://PATH").
func Open(ctx context.Context, url string) (*DB, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		return openPostgres(ctx, url)
	}
	return openSQLite(ctx, url, sqliteBusyTimeout)
}

func openSQLite(ctx context.Context, url string, busy time.Duration) (*DB, error) {
	path := strings.TrimPrefix(url, "sqlite://")
	// WAL for concurrent readers; a busy timeout instead of SQLITE_BUSY
	// errors; full synchronous so a committed transaction survives power
	// loss (I7 rests on it).
	//
	// No automatic checkpoints: SQLite runs them in the connection that
	// commits, so every thousandth page written made one commit (a FLUSH)
	// copy 4 MB into the database file and fsync it — 50-100 ms. The
	// checkpointer runs them on its own connection instead.
	//
	// The path is percent-escaped into the file: URI: a '#' or '?' in a
	// directory name (Go's t.TempDir() of a subtest named "x#01" has one)
	// would otherwise end the file name there, and the metastore would
	// silently be another file, outside the data directory, possibly
	// another server's.
	dsn := fmt.Sprintf("%s?_pragma=journal_mode(WAL)&_pragma=busy_timeout(%d)&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)&_pragma=wal_autocheckpoint(0)&_txlock=immediate",
		sqliteFileURI(path), busy.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("metastore: open %s: %w", url, err)
	}
	// One writer at a time is SQLite's model; a single connection also
	// makes BEGIN IMMEDIATE serialise writers without busy loops.
	db.SetMaxOpenConns(1)
	d, err := finishOpen(ctx, db, SQLite, url)
	if err != nil {
		return nil, err
	}
	cdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("metastore: open %s: %w", url, err)
	}
	cdb.SetMaxOpenConns(1)
	d.ckpt = startCheckpointer(cdb, walCheckpointInterval)
	return d, nil
}

func finishOpen(ctx context.Context, db *sql.DB, dialect Dialect, url string) (*DB, error) {
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("metastore: connect %s: %w", redact(url), err)
	}
	return &DB{db: db, dialect: dialect, url: url}, nil
}

// Dialect returns the backend's SQL flavour.
func (d *DB) Dialect() Dialect { return d.dialect }

// Close closes the store.
func (d *DB) Close() error {
	if d.ckpt != nil {
		d.ckpt.stop()
	}
	d.stmtsMu.Lock()
	for _, st := range d.stmts {
		st.Close()
	}
	d.stmts = nil
	d.stmtsMu.Unlock()
	return d.db.Close()
}

// Exec runs a statement written with $N placeholders.
func (d *DB) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return d.db.ExecContext(ctx, d.rebind(query), args...)
}

// Query runs a query written with $N placeholders.
func (d *DB) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return d.db.QueryContext(ctx, d.rebind(query), args...)
}

// QueryRow runs a query expected to return at most one row.
func (d *DB) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return d.db.QueryRowContext(ctx, d.rebind(query), args...)
}

// Tx is a metadata transaction.
type Tx struct {
	tx      *sql.Tx
	dialect Dialect
	db      *DB
}

// Tx runs fn in one transaction and commits it if fn returns nil.
//
// The error says what happened (see the package comment and
// IsDefinitelyNotCommitted): an error from fn is returned unchanged in
// message and identity (errors.Is / errors.As see through), marked as not
// committed; a COMMIT whose outcome is unknown wraps ErrAmbiguousCommit and
// the caller must treat the transaction as possibly committed (I2).
//
// A BEGIN that fails because the database is busy is retried (fn has not
// run, so this is always safe); nothing else is.
func (d *DB) Tx(ctx context.Context, fn func(tx *Tx) error) error {
	return d.runTx(ctx, 1, nil, false, fn)
}

// SnapshotTx is TxRetry in a transaction whose reads all see one
// snapshot: REPEATABLE READ on PostgreSQL (whose default, READ COMMITTED,
// gives each statement its own snapshot, so a multi-statement read can
// straddle a concurrent commit); SQLite's transactions already are one.
// A write in fn that conflicts with a commit after the snapshot fails
// with a serialization failure, and fn runs again.
func (d *DB) SnapshotTx(ctx context.Context, attempts int, fn func(tx *Tx) error) error {
	var opts *sql.TxOptions
	if d.dialect == Postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead}
	}
	return d.runTx(ctx, max(attempts, 1), opts, false, fn)
}

// TxRetry is Tx that also re-runs fn, up to attempts times in all, when an
// attempt failed with a transient conflict (SQLite busy/locked, PostgreSQL
// serialization failure 40001 or deadlock 40P01) that definitely did not
// commit. fn must be safe to run again: no effects outside the transaction
// except values the next attempt overwrites.
func (d *DB) TxRetry(ctx context.Context, attempts int, fn func(tx *Tx) error) error {
	if attempts < 1 {
		attempts = 1
	}
	return d.runTx(ctx, attempts, nil, false, fn)
}

// beginAttempts bounds retries of a busy BEGIN; with SQLite's 10 s busy
// timeout per attempt, that is about a minute of contention.
const beginAttempts = 6

func (d *DB) runTx(ctx context.Context, fnAttempts int, opts *sql.TxOptions, unfenced bool, fn func(tx *Tx) error) error {
	beginFailures, fnRuns := 0, 0
	for {
		err := d.txOnce(ctx, opts, unfenced, fn)
		if err == nil {
			return nil
		}
		var te *txError
		if !errors.As(err, &te) || !te.definite || !isTransient(te.cause) {
			return err
		}
		if te.stage == stageBegin {
			beginFailures++
			if beginFailures >= beginAttempts {
				return err
			}
		} else {
			fnRuns++
			if fnRuns >= fnAttempts {
				return err
			}
		}
		backoff := time.Duration(5<<min(beginFailures+fnRuns, 8)) * time.Millisecond
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
	}
}

func (d *DB) txOnce(ctx context.Context, opts *sql.TxOptions, unfenced bool, fn func(tx *Tx) error) (err error) {
	start := time.Now()
	defer func() { obs.MetastoreTx(time.Since(start), err != nil) }()
	if err := d.faultAt(PointBegin); err != nil {
		return &txError{stage: stageBegin, definite: true, cause: fmt.Errorf("metastore: begin: %w", err)}
	}
	tx, err := d.db.BeginTx(ctx, opts)
	if err != nil {
		return &txError{stage: stageBegin, definite: true, cause: fmt.Errorf("metastore: begin: %w", err)}
	}
	mtx := &Tx{tx: tx, dialect: d.dialect, db: d}
	if err := fn(mtx); err != nil {
		tx.Rollback()
		return &txError{stage: stageFn, definite: true, cause: err, bare: true}
	}
	if err := d.faultAt(PointBeforeCommit); err != nil {
		tx.Rollback()
		// A hook error that wraps ErrAmbiguousCommit simulates a commit
		// that did not land but whose outcome the caller cannot know.
		definite := !errors.Is(err, ErrAmbiguousCommit)
		return &txError{stage: stageCommit, definite: definite, cause: fmt.Errorf("metastore: before commit: %w", err)}
	}
	// The fence runs last before COMMIT (after the before-commit fault
	// point, where tests pause a leader), so that the lock it takes on
	// the term row is held only for the COMMIT itself.
	if !unfenced {
		if err := d.checkFence(ctx, mtx); err != nil {
			tx.Rollback()
			return &txError{stage: stageFn, definite: true, cause: err, bare: true}
		}
		if err := d.faultAt(PointFenced); err != nil {
			tx.Rollback()
			return &txError{stage: stageCommit, definite: true, cause: fmt.Errorf("metastore: before commit: %w", err)}
		}
	}
	// Past this check COMMIT may reach the server; before it, a cancelled
	// caller gets a clean "not committed".
	if err := ctx.Err(); err != nil {
		tx.Rollback()
		return &txError{stage: stageCommit, definite: true, cause: fmt.Errorf("metastore: before commit: %w", err)}
	}
	if err := tx.Commit(); err != nil {
		return &txError{stage: stageCommit, definite: commitErrorIsDefinite(d.dialect, err), cause: fmt.Errorf("metastore: commit: %w", err)}
	}
	if err := d.faultAt(PointAfterCommit); err != nil {
		return &txError{stage: stageCommit, definite: false, cause: fmt.Errorf("metastore: after commit: %w", err)}
	}
	return nil
}

func (t *Tx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	rq := rebind(t.dialect, query)
	if st := t.db.prepared(rq); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, rq, args...)
}

func (t *Tx) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, rebind(t.dialect, query), args...)
}

func (t *Tx) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	rq := rebind(t.dialect, query)
	if st := t.db.prepared(rq); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, rq, args...)
}

// Dialect returns the backend's SQL flavour.
func (t *Tx) Dialect() Dialect { return t.dialect }

func (d *DB) rebind(q string) string { return rebind(d.dialect, q) }

// rebind expands dialect placeholders ({{BLOB}}, …) and turns $N
// parameters into SQLite's ?N; PostgreSQL takes them as is. An unknown
// {{NAME}} is left in place for the database to reject.
func rebind(d Dialect, q string) string {
	if strings.Contains(q, "{{") {
		if e, err := ExpandSQL(d, q); err == nil {
			q = e
		}
	}
	if d == Postgres || !strings.Contains(q, "$") {
		return q
	}
	return strings.ReplaceAll(q, "$", "?")
}

// redact hides a password in a connection URL for logs and errors.
func redact(url string) string {
	at := strings.LastIndex(url, "@")
	scheme := strings.Index(url, "://")
	if at < 0 || scheme < 0 {
		return url
	}
	creds := url[scheme+3 : at]
	if colon := strings.Index(creds, ":"); colon >= 0 {
		return url[:scheme+3] + creds[:colon] + ":***" + url[at:]
	}
	return url
}

// sqliteFileURI is path as an SQLite file: URI, every character that URI
// syntax gives a meaning ('#', '?', '%', and the others url.PathEscape
// escapes within a segment) percent-escaped; SQLite decodes the escapes.
func sqliteFileURI(path string) string {
	segs := strings.Split(filepath.ToSlash(path), "/")
	for i, s := range segs {
		segs[i] = neturl.PathEscape(s)
	}
	return "file:" + strings.Join(segs, "/")
}
