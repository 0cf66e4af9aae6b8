// Package parser turns SQL text into statements: PostgreSQL syntax is parsed
// by pg_query_go (PostgreSQL's own grammar, protobuf AST); the few statements
// PostgreSQL lacks (FLUSH, RECOVER, SHOW TABLES, DESCRIBE, CANCEL JOBS, ...)
// are recognised by a small front before pg_query sees the text.
//
// Design:
//
//   - Split first, using PostgreSQL's scanner (so semicolons inside quotes,
//     dollar quotes and comments are handled), then parse each piece alone.
//     Every Statement remembers its text and its offset in the original
//     string so that later errors can report positions in the client's text.
//
//   - Syntax errors become sqlerr 42601 with PostgreSQL's cursor position
//     (1-based, in characters, relative to the whole string).
//
//   - Nothing reaches pg_query's C parser unchecked (I9): the scanner's
//     tokens bound each statement's nesting (MaxNesting, 54001) and size
//     (MaxTokens, 54000) first (nesting.go), because the C code recurses
//     over the tree without a depth check and a SIGSEGV there kills the
//     process. The scanner itself is a flat state machine.
//
//   - ViewQueryText / ColumnExprText cut a definition out of the user's
//     text; SameTree checks a cut against the tree that was bound.
//
// Invariants: I9 as above; the package is pure (no I/O, no shared state)
// and never panics on bad input.
package parser
