package exec

import (
	"context"
	"log/slog"
)

// consistency is an executor's policy for input that contradicts its
// state (I6): a delete of a row it never saw, a retraction of an aggregate
// input never added, a degree going negative. Strict (the default, and
// streaming_strict_consistency = true) returns the error, built by
// inconsistent() naming the state table, the key and the row, which fails
// the actor and so the job (recovery), never the process. Non-strict
// counts the violation against the view (rw_catalog.rw_streaming_errors),
// logs it with its context (rate-limited per view, evalerr.go), and the
// executor repairs its state toward the input — each call site says how —
// so that it stays sane: no negative count or degree, no output for a row
// it never emitted.
type consistency struct {
	tolerate bool
	log      *slog.Logger
}

// SetStrict sets the policy: strict fails the actor on inconsistent
// input; otherwise it is logged to log (nil: the default logger) and
// tolerated.
func (c *consistency) SetStrict(strict bool, log *slog.Logger) {
	c.tolerate, c.log = !strict, log
}

// violation returns err (from inconsistent()) in strict mode; in non-strict
// mode it records err and returns nil, and the caller repairs and goes on.
func (c *consistency) violation(ctx context.Context, where string, err error) error {
	if !c.tolerate {
		return err
	}
	recordJobError(ctx, "", c.log, true, where, err)
	return nil
}
