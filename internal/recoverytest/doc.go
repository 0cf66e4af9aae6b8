// Package recoverytest holds the acceptance tests of recovery (issue 6):
// a real Runnel server (server.Open on a loopback port) driven over pgwire
// while test hooks pause actors, inject actor failures and record the
// order in which actors exit and state tables are purged.
//
// What it proves:
//   - I3: a dropped view's state tables are unregistered only when no
//     actor of the view is running (checked by the storage unregister hook
//     against the live actors the actor hook tracks), and later collected
//     by compaction and GC (I1: storage.Check is clean).
//   - I5: DROP and RECOVER abort an actor paused inside a window
//     recompute instead of waiting for it (the pause observes the actor's
//     context).
//   - I6/I7: under seeded interleavings of DML, CREATE/DROP VIEW, RECOVER
//     and injected actor failures from several sessions the server stays
//     up and, after every round, every view equals PostgreSQL's answer
//     over the acknowledged writes.
//   - DDL during recovery: a view whose actor fails at every start can be
//     dropped, after which recoveries stop.
//
// The seams it uses are test-only and cost an atomic load when unset:
// stream.ArmFailpoint and stream.SetActorHook, exec.SetOverWindowHook,
// storage.Engine.SetUnregisterHook, and server.Server.Internals.
//
// Knobs: RUNNEL_RECOVERY_SEEDS=N interleavings (default 100),
// RUNNEL_RECOVERY_SEED=S (or RUNNEL_TEST_SEED) replays the
// choices of a run (not its timing), RUNNEL_RECOVERY_LOG=1 shows server
// warnings, RUNNEL_RECOVERY_BENCH=1 runs the recovery-time benchmark
// (RUNNEL_RECOVERY_BENCH_MB sizes its state).
package recoverytest
