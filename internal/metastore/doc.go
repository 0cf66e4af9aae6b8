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
// Schema: each component (catalog, storage, …) registers numbered
// Migrations and calls DB.Migrate at startup. Applied steps are recorded in
// runnel_schema_migrations (component, version, checksum); a step runs once,
// in its own transaction together with its record, under a lock (a
// PostgreSQL advisory lock; SQLite's BEGIN IMMEDIATE) so that concurrent
// starters apply it once. An applied step whose text changed, or a database
// newer than the binary, is an error, never silently accepted.
//
// Dialect placeholders: SQL passed to Migrate, Exec, Query and QueryRow may
// use {{BLOB}} (SQLite BLOB, PostgreSQL BYTEA), {{BIGINT}}, {{TEXT}},
// {{BOOLEAN}} (SQLite INTEGER) and {{DOUBLE}} (SQLite REAL, PostgreSQL DOUBLE
// PRECISION); see ExpandSQL. Where the dialects differ beyond types, a
// Migration carries one text per dialect.
//
// Commit outcomes (invariant I2): Tx classifies its errors. An error for
// which IsDefinitelyNotCommitted is true proves that nothing of the
// transaction persisted: BEGIN failed, fn failed (including a constraint
// violation inside it), the context ended before COMMIT was sent, or the
// server answered COMMIT with an error (PostgreSQL rolls back; SQLite
// constraint failures at COMMIT). Every other failure of COMMIT — a broken
// connection, an I/O error, a lost reply — is ambiguous: errors.Is(err,
// ErrAmbiguousCommit), and the caller must treat the change as possibly
// committed until it re-reads the state.
//
// Retries happen only where provably safe: Tx retries a BEGIN that failed
// because the database was busy (fn has not run); TxRetry additionally
// re-runs fn after a definitely-not-committed busy / serialization /
// deadlock failure, for callers whose fn has no effects outside the
// transaction.
//
// Snapshots: SnapshotTx runs fn in one snapshot (REPEATABLE READ on
// PostgreSQL, whose default READ COMMITTED gives each statement its own;
// SQLite's transactions already are one), for readers that must see
// several tables, or several statements, at one commit point while a
// server writes (ctl storage check, backups).
//
// Fault injection for tests: SetFaultHook installs a function called at
// "begin", "before-commit" and "after-commit"; an error there makes the
// transaction fail before it started, fail before COMMIT (not committed), or
// report failure after COMMIT succeeded (committed, but the caller hears an
// ambiguous error).
//
// Fencing: SetFence installs a check that every transaction (Tx, TxRetry,
// SnapshotTx, Migrate) runs on its own connection after fn and just before
// COMMIT; its error rolls the transaction back (definitely not committed).
// A meta leader installs its term check there (internal/cluster), so the
// catalog and the storage version have one writer (I1/I2). UnfencedTx
// skips it, for the bookkeeping that decides who leads.
//
// This package knows no Runnel concepts; it imports nothing from Runnel.
package metastore
