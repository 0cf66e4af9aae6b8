// Package servertest starts real Runnel servers for tests and talks to them
// with pgx.
//
// Two ways to run a server:
//   - In process: Start opens internal/server.Server with test defaults
//     (a temporary data directory, 50 ms barriers, parallelism 2, logs
//     discarded unless RUNNEL_TEST_LOG is set) on a loopback port and stops
//     it when the test ends. Restart stops it and opens a new server on
//     the same data directory. Options adjust the configuration.
//   - As a process: BuildBinary compiles cmd/runnel and StartProcess runs
//     `runnel serve` on a data directory, so that tests can SIGKILL it
//     (crash and recovery tests). The process dies with the test binary.
//
// The client helpers (Connect, Exec, QueryStrings, QueryText) come from
// internal/testutil/wiretest and are forwarded here so that callers need
// one import. internal/server's own in-package tests cannot import this
// package (it imports internal/server) and use wiretest directly.
//
// This package guards no Runnel invariant; it is the harness the server,
// differential, crash and sqllogictest suites share.
package servertest
