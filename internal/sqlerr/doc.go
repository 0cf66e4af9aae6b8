// Package sqlerr is Runnel's user-facing SQL error: a message plus the
// PostgreSQL SQLSTATE code that pgwire sends in the ErrorResponse 'C' field.
//
// Design: every layer that produces an error a SQL user may see (types,
// sql, expr, batch, stream, meta) returns or wraps an *Error; pgwire finds it
// with errors.As and falls back to XX000 internal_error for anything else.
// Internal context added with fmt.Errorf("...: %w", err) is kept for logs,
// while the client sees only the *Error's own Message, Detail and Hint.
//
// This package imports nothing from Runnel.
package sqlerr
