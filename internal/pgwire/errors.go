package pgwire

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/runneldb/runnel/internal/sqlerr"
)

var (
	errQueryCanceled    = sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
	errStatementTimeout = sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to statement timeout")
	errAdminShutdown    = sqlerr.New(sqlerr.AdminShutdown, "terminating connection due to administrator command")
	errClientGone       = sqlerr.New(sqlerr.QueryCanceled, "canceling statement because the client closed the connection")

	// errTerminated ends a connection that Backend.Terminate ended
	// (pg_terminate_backend): PostgreSQL's message, also that of a
	// shutdown.
	errTerminated = sqlerr.New(sqlerr.AdminShutdown, "terminating connection due to administrator command")
)

// fatalError is an error after which the connection is closed: the client
// gets it as a FATAL ErrorResponse.
type fatalError struct{ err *sqlerr.Error }

func (f *fatalError) Error() string { return f.err.Error() }
func (f *fatalError) Unwrap() error { return f.err }

func fatal(code, msg string) error { return &fatalError{sqlerr.New(code, msg)} }

// toSQLError maps any error to the *sqlerr.Error the client sees. A
// statement whose context was cancelled (by a cancel request or shutdown)
// reports the cancellation's cause, whatever error the engine returned.
func toSQLError(ctx context.Context, err error) *sqlerr.Error {
	if ctx != nil && ctx.Err() != nil {
		if e := sqlerr.From(context.Cause(ctx)); e != nil {
			return e
		}
	}
	if e := sqlerr.From(err); e != nil {
		return e
	}
	if errors.Is(err, context.Canceled) {
		return errQueryCanceled
	}
	return sqlerr.New(sqlerr.InternalError, err.Error())
}

func errorResponse(severity string, e *sqlerr.Error) *pgproto3.ErrorResponse {
	return &pgproto3.ErrorResponse{
		Severity:            severity,
		SeverityUnlocalized: severity,
		Code:                e.Code,
		Message:             e.Message,
		Detail:              e.Detail,
		Hint:                e.Hint,
		Position:            int32(e.Position),
		SchemaName:          e.SchemaName,
		TableName:           e.TableName,
		ConstraintName:      e.ConstraintName,
	}
}
