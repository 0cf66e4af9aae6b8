// Package wiretest holds the client side of tests that talk to a Postgres
// wire-protocol server: serving a server on a loopback listener until the
// test ends, connecting with pgx, and rendering result rows as strings for
// compact assertions.
//
// It deliberately does not import internal/server, so that the server
// package's own (in-package) tests can use it without an import cycle.
// Tests outside internal/server should use internal/testutil/servertest,
// which opens a real Runnel server with test defaults and builds on this
// package.
//
// This package guards no Runnel invariant; it only removes the copies of
// the same twenty lines that every server-level test suite used to carry.
package wiretest
