// Package pgwire is Runnel's PostgreSQL wire-protocol (v3.0) server, built
// on github.com/jackc/pgx/v5/pgproto3 for message framing. It knows nothing
// of SQL: it speaks to an Engine (implemented by the frontend) and does all
// protocol work itself — startup, TLS and GSSENC negotiation, SCRAM-SHA-256
// authentication, the simple and extended query protocols, COPY FROM
// STDIN / TO STDOUT in text, CSV and binary formats, cancel requests, encoding of
// result rows in text or binary format, and mapping of errors to
// ErrorResponse.
//
// # Threading model
//
// One goroutine per connection reads a message, handles it to completion
// (calling into the Session) and reads the next. Session, Statement,
// RowIter and CopySink methods of one connection are therefore never
// called concurrently. The only cross-goroutine actions are a cancel
// request arriving on another connection, and Server.Shutdown: both cancel
// the context of the statement running at that moment (its
// context.Cause is a *sqlerr.Error: 57014 query_canceled or 57P01
// admin_shutdown). The engine observes cancellation through that ctx only;
// whatever error it then returns, the client sees the cancellation error.
// The server also checks the ctx every 256 rows while streaming.
//
// # Engine contract
//
//  1. Engine.UserAuth returns the stored SCRAM verifier ("" for a user
//     without a password). Users with a password always authenticate with
//     SCRAM-SHA-256; users without one are admitted only from loopback
//     (Config.AuthTrustLoopback) or everywhere (Config.AuthTrustAll).
//     NewSCRAMVerifier makes verifiers for CREATE USER ... PASSWORD.
//  2. Engine.NewSession receives the startup parameters and a ClientConn;
//     it may call ClientConn.SetParameterStatus to override an initial
//     parameter (TimeZone) — those join the startup ParameterStatus set.
//     An unknown database is a *sqlerr.Error with code 3D000.
//  3. Session.Parse returns zero or more Statements. The simple protocol
//     executes them in order, stopping at the first error; zero statements
//     yield EmptyQueryResponse. The extended protocol requires at most one
//     and calls Statement.Describe at Parse time.
//  4. Statement.Execute returns a Result (see its doc for the shapes). The
//     server owns the Result: it closes Rows exactly once, and calls the
//     CopySink's Finish or Abort exactly once.
//  5. Ownership of slices: a row returned by RowIter.Next is only read
//     until the next Next call, so iterators may reuse it. Rows passed to
//     CopySink.Write are only valid during the call (the datums themselves
//     are immutable and may be kept). Slices the engine returns in
//     StatementDescription, Column and Result are not modified by the server.
//  6. Session.TxStatus is asked before every ReadyForQuery. The engine
//     implements BEGIN/COMMIT/ROLLBACK itself; Session.OnError is called
//     for every error reported to the client (also those the protocol
//     layer raises, like a malformed parameter), so the engine can fail an
//     open transaction block as PostgreSQL does. At Sync outside a
//     transaction block the server drops all portals.
//  7. ClientConn methods are only called from inside a Session call (same
//     goroutine); notices and parameter changes are sent in order with the
//     statement's output.
//  8. Errors: a *sqlerr.Error anywhere in the chain gives the SQLSTATE,
//     message, detail, hint and (for syntax errors) position; any other
//     error is reported as XX000 with its text (and logged).
//
// # Protocol notes
//
//   - After an error in an extended-protocol message every message up to
//     Sync is discarded; Sync sends ReadyForQuery with the engine's status.
//   - Execute with a row limit sends PortalSuspended after that many rows
//     (like PostgreSQL, even when no row is left); the next Execute
//     resumes the same RowIter with the new message's ctx.
//   - A message larger than Config.MaxMessageSize gets FATAL 54000 and a
//     malformed message FATAL 08P01; the connection is closed and nothing
//     else is affected. A panic on a connection's goroutine (engine bug)
//     is recovered, logged with its stack, and ends that connection with
//     FATAL XX000. Only errors created here end a connection: an engine
//     error, whatever it wraps, is a statement error.
//   - Authentication: users with a stored verifier always use SCRAM;
//     others are trusted per AuthTrustLoopback / AuthTrustAll, else
//     refused with 28P01. Config.RequireTLS refuses clear-text connections
//     from non-loopback addresses.
//   - Cancel keys: process ids are unique among live connections and the
//     4-byte secret comes from crypto/rand; a mismatched cancel request is
//     ignored silently.
//   - The DataRow encoder writes each row straight into the connection's
//     output buffer (no per-row allocation beyond what the codec needs) and
//     flushes at 32 KiB.
//   - All conversions between datums and wire bytes live in codec.go.
//
// Invariants: pgwire guards I5 (prompt cancellation) at the protocol edge —
// a cancel request reaches the running statement's context at once — and
// I6 at the connection edge: a bad client (oversized, malformed or
// adversarial messages) ends only its own connection, and an error in a
// session never affects another. It must not import sql, meta, stream or
// storage: the engine reaches them.
package pgwire
