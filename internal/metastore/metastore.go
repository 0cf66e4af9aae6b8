// Package metastore is Runnel's durable metadata store on database/sql:
// embedded SQLite by default (a file in the data directory), PostgreSQL in
// production. Both run one schema; SQL is written once with PostgreSQL-style
// $1 placeholders and rebound for SQLite.
//
// Everything that must survive a crash and be changed atomically lives here:
// the catalog, the storage version deltas and checkpoints, compaction job
// records, the object deletion queue and the id allocators. Multi-row
// changes go through Tx so that they commit in one metadata transaction.
//
// This package knows no Runnel concepts beyond the schema migrations that
// other packages register; it imports nothing from Runnel.
package metastore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
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
}

// Open opens the store named by url: "postgres://…" or "postgresql://…" for
// PostgreSQL, otherwise a SQLite file path (optionally "sqlite://PATH").
func Open(ctx context.Context, url string) (*DB, error) {
	var (
		db      *sql.DB
		err     error
		dialect Dialect
	)
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		dialect = Postgres
		db, err = sql.Open("pgx", url)
	default:
		path := strings.TrimPrefix(url, "sqlite://")
		// WAL for concurrent readers; a busy timeout instead of SQLITE_BUSY
		// errors; full synchronous so a committed transaction survives power
		// loss (I7 rests on it).
		dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)&_txlock=immediate"
		db, err = sql.Open("sqlite", dsn)
		if err == nil {
			// One writer at a time is SQLite's model; a single connection also
			// makes BEGIN IMMEDIATE serialise writers without busy loops.
			db.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("metastore: open %s: %w", redact(url), err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("metastore: connect %s: %w", redact(url), err)
	}
	return &DB{db: db, dialect: dialect, url: url}, nil
}

// Dialect returns the backend's SQL flavour.
func (d *DB) Dialect() Dialect { return d.dialect }

// Close closes the store.
func (d *DB) Close() error { return d.db.Close() }

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
}

// Tx runs fn in one transaction and commits it if fn returns nil. An error
// from Commit is returned as is: the caller must treat it as ambiguous (the
// transaction may have committed; invariant I2).
func (d *DB) Tx(ctx context.Context, fn func(tx *Tx) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("metastore: begin: %w", err)
	}
	if err := fn(&Tx{tx: tx, dialect: d.dialect}); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("metastore: commit: %w", err)
	}
	return nil
}

func (t *Tx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, rebind(t.dialect, query), args...)
}

func (t *Tx) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, rebind(t.dialect, query), args...)
}

func (t *Tx) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, rebind(t.dialect, query), args...)
}

// Dialect returns the backend's SQL flavour.
func (t *Tx) Dialect() Dialect { return t.dialect }

func (d *DB) rebind(q string) string { return rebind(d.dialect, q) }

// rebind turns $N placeholders into SQLite's ?N; PostgreSQL takes them as is.
func rebind(d Dialect, q string) string {
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
