package exec

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Expression errors in streaming jobs.
//
// A data error while evaluating a view's expression for one row (division
// by zero, overflow, a bad cast: SQLSTATE class 22) cannot fail the
// statement that wrote the row, which is long acknowledged or belongs to
// another session, and failing the job would roll back every write of the
// database's epoch and fail again on the same row after recovery. So, as
// in RisingWave, the expression yields NULL for that row (a filter treats
// it as not true), the error is logged (rate-limited) and counted, and the
// job goes on. Evaluation is deterministic, so a retraction of the row
// evaluates to the same NULL and stays consistent with what was emitted.
// Any other error (cancellation, internal errors) still fails the actor.

// ExprErrorCount is the number of expression errors turned into NULL since
// the process started (for system tables and tests).
var ExprErrorCount atomic.Int64

var exprErrLog struct {
	mu     sync.Mutex
	last   time.Time
	quiet  int // errors not logged since last
	logger *slog.Logger
}

// SetExprErrorLogger sets the logger for expression errors (default:
// slog.Default()).
func SetExprErrorLogger(l *slog.Logger) {
	exprErrLog.mu.Lock()
	exprErrLog.logger = l
	exprErrLog.mu.Unlock()
}

// isDataError reports whether err is a per-row data error (class 22).
func isDataError(err error) bool {
	return strings.HasPrefix(sqlerr.Code(err), "22")
}

// exprError handles an evaluation error of executor where: a data error is
// recorded and tolerated (the caller uses NULL), anything else is returned
// wrapped.
func exprError(ctx context.Context, where string, err error) error {
	if !isDataError(err) || ctx.Err() != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	ExprErrorCount.Add(1)
	exprErrLog.mu.Lock()
	defer exprErrLog.mu.Unlock()
	// At most one line per second, saying how many were suppressed.
	if now := time.Now(); now.Sub(exprErrLog.last) >= time.Second {
		l := exprErrLog.logger
		if l == nil {
			l = slog.Default()
		}
		l.Warn("expression error in a streaming job; the value is NULL for this row",
			"executor", where, "err", err, "suppressed_since_last", exprErrLog.quiet)
		exprErrLog.last, exprErrLog.quiet = now, 0
	} else {
		exprErrLog.quiet++
	}
	return nil
}
