package metastore

import (
	"errors"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// ErrAmbiguousCommit is wrapped by a Tx error when COMMIT may or may not
// have persisted the transaction (invariant I2: treat it as committed until
// the state is re-read).
var ErrAmbiguousCommit = errors.New("metastore: commit outcome unknown")

// Fault points passed to the hook installed with SetFaultHook.
const (
	PointBegin        = "begin"         // before BEGIN
	PointBeforeCommit = "before-commit" // fn succeeded, COMMIT not yet sent
	PointFenced       = "fenced"        // the fence (SetFence) passed, COMMIT not yet sent
	PointAfterCommit  = "after-commit"  // COMMIT succeeded
)

type txStage int

const (
	stageBegin txStage = iota
	stageFn
	stageCommit
)

// txError carries Tx's verdict on whether the transaction persisted.
type txError struct {
	stage    txStage
	definite bool  // proven not committed
	cause    error // what failed
	bare     bool  // print cause unchanged (fn's own error)
}

func (e *txError) Error() string { return e.cause.Error() }

func (e *txError) Unwrap() []error {
	errs := []error{e.cause}
	if !e.definite {
		errs = append(errs, ErrAmbiguousCommit)
	}
	if isDiskFull(e.cause) {
		errs = append(errs, syscall.ENOSPC)
	}
	return errs
}

// isDiskFull reports whether the store failed because its disk is full
// (SQLite's SQLITE_FULL, PostgreSQL's 53100): a Tx error then also matches
// syscall.ENOSPC, so callers can say "disk full" whatever the backend.
func isDiskFull(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "53100"
	}
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteFull
}

// IsDefinitelyNotCommitted reports whether err, returned by DB.Tx or
// DB.TxRetry (possibly wrapped further), proves that the transaction did not
// persist: BEGIN failed, fn failed, the context ended before COMMIT, or the
// server rejected the COMMIT. It is false for nil, for an ambiguous commit
// (errors.Is(err, ErrAmbiguousCommit)), and for any error that did not come
// from a transaction — nothing is proven about those.
func IsDefinitelyNotCommitted(err error) bool {
	var te *txError
	return errors.As(err, &te) && te.definite
}

// commitErrorIsDefinite reports whether an error from COMMIT proves the
// transaction rolled back. Only an ordinary error answer from the server is
// proof: PostgreSQL rolls a transaction back when COMMIT fails with
// severity ERROR (deferred constraint, serialization failure), and SQLite
// leaves nothing behind when a deferred constraint fails the COMMIT. A
// FATAL answer (the backend may be terminated after its commit record is
// flushed), a broken connection or an I/O error proves nothing.
func commitErrorIsDefinite(d Dialect, err error) bool {
	if errors.Is(err, pgx.ErrTxCommitRollback) {
		return true
	}
	if d == Postgres {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Severity == "ERROR"
	}
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteConstraint
}

// SQLite primary result codes (the low byte of extended codes).
const (
	sqliteBusy       = 5
	sqliteLocked     = 6
	sqliteFull       = 13
	sqliteConstraint = 19
)

// isTransient reports whether err is a conflict that a new attempt of the
// same transaction may not meet: SQLite busy/locked, PostgreSQL
// serialization failure or deadlock.
func isTransient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqliteBusy || c == sqliteLocked
	}
	return false
}

// SetFaultHook installs fn, which Tx calls at PointBegin, PointBeforeCommit,
// PointFenced (only when a fence is installed) and PointAfterCommit. An
// error at PointBegin, PointBeforeCommit or PointFenced fails the
// transaction before anything persisted; an error at PointAfterCommit is
// returned although the transaction committed, as an ambiguous error — the
// lost-acknowledgement case. An error at PointBeforeCommit that wraps
// ErrAmbiguousCommit is reported as ambiguous although nothing persisted, so
// a test can cover both outcomes an ambiguous commit may hide. A test may also block in fn to pause a
// transaction at that point. nil removes the hook. For tests only.
func (d *DB) SetFaultHook(fn func(point string) error) {
	if fn == nil {
		d.fault.Store(nil)
		return
	}
	d.fault.Store(&fn)
}

func (d *DB) faultAt(point string) error {
	if fn := d.fault.Load(); fn != nil {
		return (*fn)(point)
	}
	return nil
}
