// Package chaostest runs a real `runnel` process on its production
// backends — an S3-compatible object store (versitygw) and a PostgreSQL
// metadata store — and takes each of them away under load: versitygw is
// killed or frozen (SIGSTOP: requests hang instead of failing), PostgreSQL
// crashes (immediate shutdown, WAL replay on restart), Runnel itself is
// SIGKILLed, and the data directory's disk fills up. Runnel must report
// errors and keep serving, never lose an acknowledged row (I7), recover by
// itself once its backends return, and leave no object without an owner
// (I1: `runnel ctl storage check` is clean after a final clean stop).
//
// The workload: writers insert and delete disjoint key ranges of one table
// with implicit_flush on, so a statement that returned success is
// committed; a statement that failed is "uncertain" and must afterwards be
// wholly applied or wholly absent. Two materialized views (a global and a
// grouped aggregate) must equal their queries over the recovered table.
//
// Knobs: RUNNEL_CHAOS_ITERS=N fault iterations (default 6, about a
// minute), RUNNEL_TEST_SEED=S replays the choices (not the timing),
// RUNNEL_CHAOS_BIN=path tests a prebuilt binary. Skipped with -short.
package chaostest
