// Package pgtest runs throwaway PostgreSQL clusters for tests, benchmarks and
// differential checks.
//
// Design:
//
//   - One cluster per test binary, started lazily by the first caller of
//     Shared / Start / NewDatabase and reused by every later test. initdb
//     costs seconds; a database costs milliseconds, so isolation comes from
//     NewDatabase (a fresh database per test, dropped in t.Cleanup).
//
//   - The cluster runs as the `postgres` OS user when the test runs as root
//     (initdb refuses root), listens on 127.0.0.1 on a free port, keeps its
//     unix socket inside its own temp directory and runs with fsync=off: a
//     test cluster needs no durability.
//
//   - No orphans: the postmaster is our direct child and is started from an
//     OS thread that is locked for the life of the process with
//     Pdeathsig=SIGINT, so the kernel asks it for a fast shutdown the moment
//     the test binary exits, however it exits (normal end, panic, timeout,
//     SIGKILL). Main (for TestMain) additionally stops it synchronously and
//     removes its directory; directories left behind by binaries that died
//     are swept by the next start.
//
//   - Missing binaries: with CI=true the test fails naming
//     scripts/install-deps.sh; elsewhere it is skipped.
//
//   - SharedLogical / NewLogicalDatabase: a second shared cluster started
//     with LogicalSettings (wal_level=logical, replication slots and WAL
//     senders) for change-data-capture tests; the plain cluster keeps its
//     settings. StartClusterWith passes any extra server settings.
//
// StartStandalone gives the same cluster to code that is not a test
// (benchmarks, differential commands).
//
// This package guards no Runnel invariant itself; it is the real PostgreSQL
// that the metastore, pgwire and differential tests check Runnel against.
package pgtest
