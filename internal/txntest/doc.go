// Package txntest checks Runnel's transaction blocks against PostgreSQL
// with concurrent sessions (frontend/txn.go holds the design).
//
// Several sessions run seeded random schedules of BEGIN, reads, writes,
// statements that fail (duplicate keys, division by zero), COMMIT and
// ROLLBACK, each session on both a Runnel server and a PostgreSQL
// database (blocks there run at REPEATABLE READ, which is snapshot
// isolation like Runnel's). PostgreSQL decides the interleaving: a
// statement is sent to PostgreSQL first, and only once it has finished —
// it may wait for another session's row lock — is it run on Runnel, so both
// see the same order of completed statements. Results must agree except
// where the two conflict rules differ by design: PostgreSQL fails the
// later of two writers of a row at its statement (40001, or 23505 for a
// key inserted concurrently, or 40P01 for a deadlock) where Runnel lets
// the statement run and fails the transaction at COMMIT with 40001 (first
// committer wins). Such a transaction must then fail at Runnel's COMMIT
// (a deadlock victim is rolled back on both). At the end both databases
// hold the same rows.
//
// What is generated, and why not more: inserts use keys that were never
// deleted (PostgreSQL's REPEATABLE READ lets a block insert a key its
// snapshot still shows when a concurrent transaction deleted it, where
// Runnel reports 23505 against the snapshot); statements outside blocks
// touch one row (a multi-row autocommit UPDATE could deadlock with a
// block, and Runnel has no locks to deadlock on); every block starts with
// a read, so that both systems take its snapshot at the same point.
//
// Transactions that move value between two tables under a view, and
// SIGKILL during commits, are tested in internal/server (txblock_test.go)
// and internal/crashtest (txn_test.go).
package txntest
