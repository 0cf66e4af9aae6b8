// Package parser turns SQL text into statements: PostgreSQL syntax is parsed
// by pg_query_go (PostgreSQL's own grammar, protobuf AST); the few statements
// PostgreSQL lacks (FLUSH, RECOVER, SHOW TABLES, DESCRIBE, CANCEL JOBS, ...)
// are recognised by a small front before pg_query sees the text.
//
// Design:
//   - Split first, using PostgreSQL's scanner (so semicolons inside quotes,
//     dollar quotes and comments are handled), then parse each piece alone.
//     Every Statement remembers its text and its offset in the original
//     string so that later errors can report positions in the client's text.
//   - Syntax errors become sqlerr 42601 with PostgreSQL's cursor position
//     (1-based, in characters, relative to the whole string).
//
// Invariants: none of ARCHITECTURE.md §3 live here; the package is pure
// (no I/O, no shared state) and never panics on bad input.
package parser
