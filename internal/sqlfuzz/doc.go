// Package sqlfuzz throws random SQL at a real Runnel server and checks that
// nothing a client sends can end the process (ARCHITECTURE.md I9): every
// statement either succeeds or fails with an error that carries a
// PostgreSQL SQLSTATE, and the session and the server stay up.
//
//   - TestInputCannotKillServer runs `runnel serve` as a subprocess and
//     sends it the statements that killed it before issue 13 (a
//     materialized view over a subquery without an alias, which segfaulted
//     in pg_query's Deparse; 30,000-term expressions that overflowed the C
//     parser's stack; a view dependency cycle that DROP ... CASCADE walked
//     until the Go stack overflowed). A subprocess, so that a crash is seen
//     as an exit rather than killing the test binary.
//   - TestRandomSQL runs Gen's statements (SELECT, views, DML, DROP,
//     nesting thousands deep, multi-megabyte literals, mangled statements)
//     against an in-process server through the real parse → bind → plan →
//     execute path and pgwire. RUNNEL_SQLFUZZ_STATEMENTS scales it; the
//     seed is logged and RUNNEL_TEST_SEED replays it.
//   - FuzzSQL is the same check as a Go fuzz target (go test -fuzz), seeded
//     from Gen.
//
// This package guards I9 by test only; it has no production code.
package sqlfuzz
