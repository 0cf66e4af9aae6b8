package exec

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream"
)

// Errors a streaming job tolerates: expression errors and (non-strict
// mode) inconsistent input.
//
// A data error while evaluating a view's expression for one row (division
// by zero, overflow, a bad cast: SQLSTATE class 22) cannot fail the
// statement that wrote the row, which is long acknowledged or belongs to
// another session, and failing the job would roll back every write of the
// database's epoch and fail again on the same row after recovery. So, as
// in RisingWave, the expression yields NULL for that row (a filter or a
// join condition treats it as not true), the error is logged (rate-limited)
// and counted against the view, and the job goes on. This holds in every
// executor that evaluates expressions: Project and Filter, the join's
// non-equi condition, the select list fused into a HOP/TUMBLE window, the
// window functions of OverWindow, watermark expressions. Evaluation is
// deterministic, so a retraction of the row evaluates to the same NULL and
// stays consistent with what was emitted. Any other error (cancellation,
// internal errors) still fails the actor.
//
// Inconsistent input (I6) is counted against the view the same way when
// the executor tolerates it (consistency.go).

// ExprErrorCount is the number of expression errors turned into NULL since
// the process started (for system tables and tests).
var ExprErrorCount atomic.Int64

// JobErrors is what one streaming job tolerated since the process started
// (rw_catalog.rw_streaming_errors).
type JobErrors struct {
	Group uint64 // the job's isolation group (its database)
	Job   string // "materialized view v", "table t", "source s"
	// ExprErrors counts expression errors turned into NULL.
	ExprErrors int64
	// Inconsistencies counts inconsistent inputs tolerated in non-strict
	// mode (I6).
	Inconsistencies int64
	// LastExecutor and LastError describe the latest of either.
	LastExecutor string
	LastError    string
	LastAt       time.Time

	lastLog time.Time // rate limit of the job's log lines
	quiet   int       // lines not logged since lastLog
}

type jobKey struct {
	group uint64
	job   string
}

var jobErrors struct {
	mu     sync.Mutex
	m      map[jobKey]*JobErrors
	logger *slog.Logger
}

// SetExprErrorLogger sets the logger for tolerated errors of executors
// that have none of their own (default: slog.Default()).
func SetExprErrorLogger(l *slog.Logger) {
	jobErrors.mu.Lock()
	jobErrors.logger = l
	jobErrors.mu.Unlock()
}

// JobErrorStats returns a copy of every job's counters, by group and job.
func JobErrorStats() []JobErrors {
	jobErrors.mu.Lock()
	out := make([]JobErrors, 0, len(jobErrors.m))
	for _, e := range jobErrors.m {
		out = append(out, *e)
	}
	jobErrors.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Job < out[j].Job
	})
	return out
}

// ForgetJobErrors drops a job's counters (the job was dropped).
func ForgetJobErrors(group uint64, job string) {
	jobErrors.mu.Lock()
	delete(jobErrors.m, jobKey{group, job})
	jobErrors.mu.Unlock()
}

// errorLogInterval bounds the log lines of one job's tolerated errors: a
// view erroring on every row of a busy table would otherwise flood the log.
const errorLogInterval = time.Second

// recordJobError counts a tolerated error against the job running ctx (or
// job, when ctx runs no actor) and logs it, at most once per
// errorLogInterval per job, saying how many were not logged.
func recordJobError(ctx context.Context, job string, log *slog.Logger, inconsistency bool, where string, err error, attrs ...any) {
	k := jobKey{job: job}
	if j, g := stream.JobOf(ctx); j != "" {
		k = jobKey{g, j}
	}
	now := time.Now()
	jobErrors.mu.Lock()
	if jobErrors.m == nil {
		jobErrors.m = map[jobKey]*JobErrors{}
	}
	e := jobErrors.m[k]
	if e == nil {
		e = &JobErrors{Group: k.group, Job: k.job}
		jobErrors.m[k] = e
	}
	if inconsistency {
		e.Inconsistencies++
	} else {
		e.ExprErrors++
	}
	e.LastExecutor, e.LastError, e.LastAt = where, err.Error(), now
	logIt := now.Sub(e.lastLog) >= errorLogInterval
	quiet := e.quiet
	if logIt {
		e.lastLog, e.quiet = now, 0
	} else {
		e.quiet++
	}
	if log == nil {
		log = jobErrors.logger
	}
	jobErrors.mu.Unlock()
	if !logIt {
		return
	}
	if log == nil {
		log = slog.Default()
	}
	msg := "expression error in a streaming job; the value is NULL for this row"
	if inconsistency {
		msg = "tolerating inconsistent input (non-strict mode)"
	}
	log.Warn(msg, append([]any{"job", k.job, "executor", where, "error", err}, append(attrs, "suppressed_since_last", quiet)...)...)
}

// isDataError reports whether err is a per-row data error (class 22).
func isDataError(err error) bool {
	return strings.HasPrefix(sqlerr.Code(err), "22")
}

// exprError handles an error of expression e evaluated by executor where:
// a data error is recorded and tolerated (the caller uses NULL), anything
// else is returned wrapped.
func exprError(ctx context.Context, where string, e fmt.Stringer, err error) error {
	if !isDataError(err) || ctx.Err() != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	ExprErrorCount.Add(1)
	var attrs []any
	if e != nil {
		attrs = []any{"expression", e.String()}
	}
	recordJobError(ctx, "", nil, false, where, err, attrs...)
	return nil
}

// exprName names an expression that is not an expr.Expr (a window
// function) in exprError's log line.
type exprName string

func (n exprName) String() string { return string(n) }
