// Package protocoltest is the Postgres wire-protocol acceptance suite run
// against a real Runnel server (internal/server over internal/pgwire), as a
// client application or psql would meet it.
//
// Where PostgreSQL defines the answer, a throwaway PostgreSQL
// (internal/testutil/pgtest) is the oracle: the same statements go to both
// servers and the bytes that come back — text and binary values, row
// descriptions, parameter types, SQLSTATEs, error positions, transaction
// status — must be equal. Where Runnel differs from PostgreSQL on purpose
// (unsupported features, RisingWave's session variables), the expected
// answer is written in the test.
//
// What is covered:
//   - types_test.go: every supported type through prepared INSERTs with
//     text and binary parameters (edge values, NULLs) and SELECTs in text
//     and binary result formats, extended and simple protocol.
//   - pipeline_test.go: an error in the middle of a pipeline, the
//     discard-until-Sync rule and the session's recovery; transaction
//     status in ReadyForQuery.
//   - cancel_test.go: cancelling a running query, after which the session
//     still works.
//   - concurrent_test.go: 50 concurrent sessions doing DML and SELECT.
//   - session_test.go: SET/SHOW of session variables.
//   - badinput_test.go: bad input gives the right SQLSTATE and position,
//     and the session stays usable.
//   - psql_test.go: the real psql binary (\d, \dt, \l, \dn, \copy).
//
// The package guards no invariant of its own; it checks the client-facing
// contract of issue 3 (pgwire, SQL errors, psql) end to end.
package protocoltest
