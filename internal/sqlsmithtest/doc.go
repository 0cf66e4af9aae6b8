// Package sqlsmithtest points sqlsmith (Debian's package: a random query
// generator that builds its queries from the server's own catalog —
// pg_type, pg_proc, pg_operator, pg_class, pg_attribute, pg_namespace,
// information_schema.tables) at a running Runnel and checks invariant I9:
// no input ends the process, and every error is a PostgreSQL error with a
// SQLSTATE that names the user's mistake, never XX000.
//
// Design:
//   - Runnel runs as a subprocess (servertest.StartProcess), so a crash —
//     a Go panic that escapes, a fatal stack overflow, a SIGSEGV in cgo —
//     is seen from outside as an exited process instead of killing the
//     test binary with it.
//   - sqlsmith talks to Runnel through a recording proxy (Proxy): it
//     relays the wire protocol unchanged and pairs every simple Query
//     with the SQLSTATE of its ErrorResponse, so the test knows each
//     failing statement's text and code without relying on sqlsmith's own
//     report (which prints messages, not codes).
//   - The fixture (Load) is a few tables of every value type with NULLs
//     and a few thousand rows, materialized views over them and a plain
//     view, so that the catalog sqlsmith reads has several types and its
//     queries reach joins, aggregates and the streaming engine's state.
//
// The bounded run is part of the default test run; RUNNEL_SQLSMITH_QUERIES
// scales it (docs/testing.md). This package guards I9 through the server;
// it owns no Runnel code.
package sqlsmithtest
