// Package tests holds Runnel's end-to-end test suites, run by `go test
// ./tests/`: the sqllogictest files under slt/ executed against a real
// Runnel server (started in-process on a loopback listener with a temporary
// data directory), and the same files cross-checked against a real
// PostgreSQL so that every expectation is what PostgreSQL returns.
//
// Conventions of the .slt files (see internal/slt for the dialect):
//   - Labels in force: "runnel" on Runnel, "postgres" on PostgreSQL. Records
//     that only make sense on Runnel (FLUSH, SET implicit_flush, SHOW JOBS)
//     carry `skipif postgres` or `onlyif runnel`.
//   - A file whose first line is "# pg: materialized-as-view" is run on
//     PostgreSQL with CREATE/DROP MATERIALIZED VIEW rewritten to plain views,
//     so a view's expected rows are the view query evaluated by PostgreSQL
//     (PostgreSQL's materialized views are not maintained incrementally).
//   - Each file runs against its own fresh server (Runnel) or database
//     (PostgreSQL), so files may reuse table names.
//   - slt/known_bugs/ holds records that fail because of a Runnel bug,
//     with the correct (PostgreSQL) expectation. They are skipped unless
//     RUNNEL_SLT_KNOWN_BUGS=1, which runs them and reports which now pass.
//
// This package guards invariant I7 at the user level (acknowledged writes
// are visible, every view equals its query) and PostgreSQL compatibility of
// results and SQLSTATEs.
package tests
