// Package crashtest kills a real `runnel` process under load and checks
// what comes back (invariant I7: acknowledged means durable, and every view
// equals its query evaluated over the recovered tables).
//
// The test builds cmd/runnel, starts it as a subprocess on a free loopback
// port with a temporary data directory, and runs a few writer goroutines,
// each owning a disjoint key range of two tables (acct, ev) and keeping an
// exact model of its rows. Every statement runs with SET implicit_flush =
// true, so a statement that returned success is committed. Statements are
// multi-row INSERTs of fresh keys (some of 64–263 rows, which take the bulk insert path), single-row UPDATEs that move a row
// between groups, multi-row UPDATEs and DELETEs, so a partially applied
// statement would be visible. Three materialized views sit on the tables:
// an aggregate (count/sum/min/max/count DISTINCT per group), an inner join,
// and an aggregate over a left join.
//
// At a seeded random instant the process is SIGKILLed (the seed is printed;
// RUNNEL_CRASH_SEED replays the choices, though not the timing). The
// statement each writer had in flight is "uncertain": after restart on the
// same data directory it must be either wholly applied or wholly absent.
// Then every writer's model must equal the recovered rows exactly (nothing
// acknowledged lost, nothing unacknowledged invented), each view must equal
// its defining query run as a batch query on the recovered server and the
// same query evaluated by a real PostgreSQL loaded with the recovered rows. A final clean stop by
// SIGTERM must exit 0 and lose nothing, and `runnel ctl storage check` on
// the stopped data directory must succeed.
//
// TestRecoverUnderLoad runs the same writers and checks without killing
// anything: another session issues RECOVER every 50–300 ms, and after each
// round every acknowledged statement must be there and every view must
// equal its query.
//
// TestKafkaSourceSIGKILL and TestPostgresCDCSIGKILL do the same to
// sources (I7, I8): the upstream (a kfake broker in the test process, the
// wal_level=logical PostgreSQL cluster) keeps producing while Runnel is
// SIGKILLed at seeded moments and restarted; in the end a table without a
// key fed by Kafka holds every produced id exactly once (views over the
// source and the table agree), and a CDC table and its view equal the
// upstream table and its query (RUNNEL_SOURCE_CRASH_KILLS=N, default 3).
//
// TestKafkaViewSinksSIGKILL is the whole pipeline (I7, I8 end to end): a
// Kafka source, a view over it, an upsert jdbc sink into PostgreSQL and an
// is_exactly_once kafka sink, Runnel SIGKILLed while the producer runs;
// after catch-up the view and the PostgreSQL target equal what PostgreSQL
// computes over the produced input, and the read_committed topic's counts
// rise strictly per group (no epoch twice) up to the view's
// (RUNNEL_PIPELINE_CRASH_KILLS=N, default 3). TestKafkaEOSSinkCrashPoints
// kills the server from inside at each point of an exactly-once Kafka
// delivery (sink.CrashPoint: records produced, epoch offset staged, Kafka
// committed but the log not truncated): read_committed sees every row once.
//
// TestDDLCrashPoints kills the server from inside at each step of CREATE
// and DROP TABLE / MATERIALIZED VIEW / SINK (RUNNEL_TEST_CRASH_POINT=
// point@relation; the points are in internal/server statecatalog.go),
// restarts it and requires the object to work or to be wholly gone, and
// `ctl storage check --grace 0s` to be clean after a SIGTERM: catalog and
// storage agree, nothing leaked (issue 13 item 6).
// RUNNEL_DDL_CRASH_ITERS=N repeats every point N times (default 1).
// TestStateTableOwnership plants a state table no catalog object owns
// (the check reports it, the next start unregisters it) and removes a
// view's tables from the version (the check reports it, the server
// refuses the view with XX001, DROP cleans up).
//
// Knobs: RUNNEL_CRASH_ITERS=N SIGKILL iterations (default 20, about a
// minute), RUNNEL_RECOVER_ROUNDS=N (default 6), RUNNEL_CRASH_SEED=S,
// RUNNEL_CRASH_BIN=path to test a prebuilt binary instead of building
// ./cmd/runnel. On failure the whole server log (with a goroutine dump if
// the server was still running) is copied to $TMPDIR/runnel-crashtest-SEED.log.
// Both tests are skipped with -short.
package crashtest
