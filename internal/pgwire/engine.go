package pgwire

import (
	"context"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/types"
)

// Engine is what the server needs from the SQL layer. It is implemented
// outside this package (the frontend wires the SQL engine in). Its methods may
// be called from many connection goroutines at once.
type Engine interface {
	// UserAuth returns how user must authenticate. An unknown user is an
	// error; a *sqlerr.Error's code is sent to the client (use 28000
	// invalid_authorization_specification, as PostgreSQL does).
	UserAuth(ctx context.Context, user string) (AuthInfo, error)
	// NewSession opens a session for an authenticated user. An unknown
	// database is a *sqlerr.Error with code 3D000. client is the session's
	// way back to the client (notices, ParameterStatus); see ClientConn.
	// Startup settings (params.Options, params.Other["TimeZone"], ...) are
	// the engine's to apply; it reports those that change a reported
	// parameter with client.SetParameterStatus, and they join the initial
	// ParameterStatus set. The reported TimeZone is also the zone the
	// server uses for timestamptz text I/O.
	NewSession(ctx context.Context, params StartupParams, client ClientConn) (Session, error)
}

// AuthInfo describes a user's credentials.
type AuthInfo struct {
	// SCRAMVerifier is the stored SCRAM-SHA-256 verifier
	// ("SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>", see
	// NewSCRAMVerifier), or "" for a user without a password.
	SCRAMVerifier string
	// Superuser is reported to the client as is_superuser.
	Superuser bool
}

// StartupParams are the parameters of the client's StartupMessage.
type StartupParams struct {
	User            string
	Database        string // defaults to User when the client sent none
	ApplicationName string
	// Options holds the "-c name=value" settings from the options parameter.
	Options map[string]string
	// Other holds every other startup parameter (client_encoding,
	// DateStyle, TimeZone, extra_float_digits, ...) as sent.
	Other      map[string]string
	RemoteAddr net.Addr
	// Backend is the connection's handle for other sessions: its process
	// id (the one in BackendKeyData, which cancel requests name), what it
	// runs now, cancel and terminate (pg_stat_activity, pg_backend_pid,
	// pg_cancel_backend, pg_terminate_backend). Nil for sessions that do
	// not come over this server's connections.
	Backend Backend
}

// ClientConn is the session's handle on its client connection. Its methods
// must only be called from inside a call the server makes into the Session
// (or from NewSession), on that goroutine; they buffer messages, which the
// server sends in order with the statement's own output.
type ClientConn interface {
	// Notice sends a NoticeResponse. Code, Message, Detail and Hint of n are
	// used; Severity defaults to NOTICE.
	Notice(n Notice)
	// SetParameterStatus reports a run-time parameter change (for example
	// after SET TimeZone). Parameters PostgreSQL reports automatically are
	// server_version, server_encoding, client_encoding, application_name,
	// is_superuser, session_authorization, DateStyle, IntervalStyle,
	// TimeZone, integer_datetimes and standard_conforming_strings.
	SetParameterStatus(name, value string)
}

// Notice is a non-error message for the client.
type Notice struct {
	Severity string // NOTICE (default), WARNING, INFO, LOG, DEBUG
	Code     string // SQLSTATE; 00000 when empty
	Message  string
	Detail   string
	Hint     string
}

// TxStatus is the transaction status reported in ReadyForQuery.
type TxStatus byte

const (
	TxIdle   TxStatus = 'I' // not in a transaction block
	TxActive TxStatus = 'T' // in a transaction block
	TxFailed TxStatus = 'E' // in a failed transaction block
)

// Session is one client's SQL session. The server calls its methods from
// the connection's goroutine only, never concurrently. Statement
// cancellation reaches the engine through the ctx given to Execute and
// RowIter.Next (its cause is a *sqlerr.Error with code 57014).
type Session interface {
	// Parse splits and parses sql into statements. The simple protocol
	// passes a whole Query message (any number of statements; a parse
	// error rejects all of it, nothing runs). The extended protocol
	// passes a Parse message with paramOIDs (0 = unspecified); more than
	// one statement there is an error the server reports (42601).
	// An empty or all-comment string yields zero statements.
	Parse(ctx context.Context, sql string, paramOIDs []uint32) ([]Statement, error)
	// TxStatus is called before each ReadyForQuery.
	TxStatus() TxStatus
	// OnError is called after the server reported err to the client for
	// a request (a Query, or an extended-protocol message), whether the
	// error came from the engine or from the protocol layer (a bad
	// parameter, an unknown portal, a failed COPY). PostgreSQL aborts an
	// open transaction block on any error: the engine marks it failed.
	OnError(err error)
	// Close releases the session when the connection ends; it rolls back
	// an open transaction.
	Close()
}

// StatementTimeouter is implemented by a Session with a statement timeout
// (statement_timeout): each client request is cancelled with 57014 once it
// has run that long; 0 means no timeout.
type StatementTimeouter interface {
	StatementTimeout() time.Duration
}

// Statement is one parsed statement.
type Statement interface {
	// Describe binds the statement (resolving names and parameter types)
	// and returns its shape. The extended protocol calls it right after
	// Parse so that binding errors are reported at Parse, as PostgreSQL
	// does; the simple protocol never calls it (a statement in a
	// multi-statement string may depend on an earlier one having run).
	Describe(ctx context.Context) (StatementDescription, error)
	// Execute runs the statement. params has one datum per parameter,
	// typed as Describe reported (nil in the simple protocol). The
	// returned Result is owned by the server, which closes its Rows.
	// Execute may be called more than once (a prepared statement bound
	// again).
	Execute(ctx context.Context, params []types.Datum) (Result, error)
	// Close releases the statement (Close message, statement replaced,
	// end of session).
	Close()
}

// StatementDescription is a bound statement's shape.
type StatementDescription struct {
	// ParamTypes has one entry per $n parameter.
	ParamTypes []types.Type
	// Columns is nil for a statement that returns no rows.
	Columns []Column
}

// Column describes one result column.
type Column struct {
	Name string
	Type types.Type
	// TableOID and AttNum identify the source column when there is one
	// (0 otherwise).
	TableOID uint32
	AttNum   uint16
}

// Result is the outcome of executing one statement. Exactly one of the
// following shapes applies:
//
//   - no rows: Rows and Copy are nil; Tag is the command tag
//     ("INSERT 0 3", "CREATE TABLE", "BEGIN").
//   - rows: Rows is set and Columns describes them. The server streams the
//     rows; if Tag is "", the tag is "SELECT <n>" with n the number of
//     rows sent by this Execute, otherwise Tag is sent as is ("SHOW").
//   - COPY FROM STDIN: Copy is set with Copy.In; the server runs the COPY
//     sub-protocol, parses the data with Copy.Options into rows of
//     Copy.Columns' types and hands them to Copy.Sink.
//   - COPY TO STDOUT: Copy is set without Copy.In and Rows supplies the
//     rows, which the server formats per Copy.Options. Tag "" means
//     "COPY <n>".
type Result struct {
	Tag     string
	Columns []Column
	Rows    RowIter
	Copy    *Copy
}

// RowIter yields result rows.
type RowIter interface {
	// Next returns the next row, or (nil, nil) after the last one. The
	// returned row is read by the server before the next call to Next and
	// not kept, so the iterator may reuse its backing array. ctx is the
	// context of the Execute message being served: a suspended portal's
	// iterator sees a different ctx on each Execute.
	Next(ctx context.Context) (types.Row, error)
	// Close releases the iterator; called exactly once, also when the
	// rows were not all read (portal closed, error, connection lost).
	Close()
}

// Copy describes a COPY ... FROM STDIN or TO STDOUT in progress.
type Copy struct {
	In      bool
	Options CopyOptions
	// Columns are the columns being copied, in data order.
	Columns []Column
	// Sink receives the parsed rows of COPY FROM STDIN.
	Sink CopySink
}

// CopySink consumes the rows of a COPY FROM STDIN.
type CopySink interface {
	// Write consumes a batch of rows. The server reuses the slice and
	// rows after Write returns; the sink copies what it keeps (datums
	// themselves are immutable and may be kept).
	Write(ctx context.Context, rows []types.Row) error
	// Finish is called after the last Write when the client ended the
	// data successfully; it returns the command tag ("COPY <n>" when "").
	Finish(ctx context.Context) (tag string, err error)
	// Abort is called instead of Finish when the COPY fails (client
	// CopyFail, a bad row, a Write error, connection lost).
	Abort()
}

// AffectedRows reads the row count of a command tag ("INSERT 0 3",
// "UPDATE 2", "DELETE 1", "SELECT 5"), for protocols that report counts
// rather than tags (MySQL's OK packet, SQL over HTTP); other commands
// affect no rows.
func AffectedRows(tag string) uint64 {
	f := strings.Fields(tag)
	if len(f) < 2 {
		return 0
	}
	switch f[0] {
	case "INSERT", "UPDATE", "DELETE", "MERGE", "COPY", "SELECT":
		n, _ := strconv.ParseUint(f[len(f)-1], 10, 64)
		return n
	}
	return 0
}
