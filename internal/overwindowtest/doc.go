// Package overwindowtest holds end-to-end tests of window functions in
// materialized views: a real Runnel server (server.Open + Serve on a
// loopback listener) driven through pgx, with expected results computed by
// a real PostgreSQL (internal/testutil/pgtest) running the same statements.
//
// It has no non-test code; it guards I7 for window functions: after every
// FLUSH a view equals its query evaluated over the base tables.
package overwindowtest
