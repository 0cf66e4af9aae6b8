package compute

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// txPart is the write of one table in a transaction's commit.
type txPart struct {
	rel   *catalog.Relation
	apply func(ctx context.Context, w *exec.TableWriter) error
}

// txCommits serialises commits that span several tables: two of them
// preparing on the same actors in opposite orders would each hold one
// actor and wait for the other (until the round timeout) over and over.
var txCommits sync.Mutex

// Bounds of the rounds of a multi-table commit. A round ends unprepared
// when an actor does not answer in time — it may be blocked sending to a
// view that aligns a barrier which another actor of this commit holds
// back while prepared — and the next round waits twice as long.
const (
	txRoundTimeout    = 100 * time.Millisecond
	txRoundTimeoutMax = 5 * time.Second
	txMaxRounds       = 100
)

// TxRoundHook, when set by a test, runs after each round of a multi-table
// commit with the epochs the prepared parts reported.
var TxRoundHook func(epochs []uint64)

// commitParts commits writes to several tables in one epoch (I7): every
// actor applies and validates its part, reports its epoch and waits;
// if all parts prepared in the same epoch they are told to apply,
// otherwise (a barrier passed some actors but not yet others, or a part
// timed out) they are told to discard and the round is retried.
func (s *Node) commitParts(ctx context.Context, parts []txPart) (uint64, error) {
	txCommits.Lock()
	defer txCommits.Unlock()
	timeout := txRoundTimeout
	for round := 0; ; round++ {
		if round == txMaxRounds {
			return 0, sqlerr.Errorf(sqlerr.SerializationFailure, "could not commit the transaction's writes to %d tables in one epoch after %d attempts", len(parts), round)
		}
		epoch, retry, err := s.commitRound(ctx, parts, timeout)
		if !retry {
			return epoch, err
		}
		if errors.Is(err, errRoundTimeout) {
			timeout = min(2*timeout, txRoundTimeoutMax)
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

var errRoundTimeout = errors.New("a transaction part did not prepare in time")

// partResult is what one part of a round reports.
type partResult struct {
	i        int
	sent     bool
	prepared bool
	epoch    uint64
	err      error
}

// commitRound runs one prepare/decide round. retry reports that nothing
// was applied and the round may run again.
func (s *Node) commitRound(ctx context.Context, parts []txPart, timeout time.Duration) (epoch uint64, retry bool, err error) {
	n := len(parts)
	reqs := make([]*exec.DMLRequest, n)
	decide := make([]chan bool, n)
	results := make(chan partResult, n)
	abort := make(chan struct{})
	for i, p := range parts {
		j, err := s.tableJobFor(ctx, p.rel)
		if err != nil {
			return 0, false, err
		}
		prepared := make(chan uint64, 1)
		decide[i] = make(chan bool, 1)
		reqs[i] = &exec.DMLRequest{Apply: p.apply, Done: make(chan error, 1), Prepared: prepared, Decide: decide[i]}
		go func(i int, req *exec.DMLRequest) {
			select {
			case j.dml <- req:
			case <-j.replaced:
				results <- partResult{i: i, err: errReplaced}
				return
			case <-abort:
				results <- partResult{i: i}
				return
			}
			select {
			case e := <-prepared:
				results <- partResult{i: i, sent: true, prepared: true, epoch: e}
			case err := <-req.Done:
				results <- partResult{i: i, sent: true, err: err}
			}
		}(i, reqs[i])
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	res := make([]partResult, n)
	aborted := false
	doAbort := func() {
		if !aborted {
			aborted = true
			close(abort)
			for _, d := range decide {
				d <- false // buffered, written once: a part not yet prepared aborts at once
			}
		}
	}
	var firstErr error
	timedOut := false
	done := ctx.Done()
	for got := 0; got < n; {
		select {
		case r := <-results:
			got++
			res[r.i] = r
			if r.err != nil && firstErr == nil {
				firstErr = r.err
				doAbort()
			}
		case <-timer.C:
			timedOut = true
			doAbort()
		case <-done:
			// Abort, but wait for every part to answer: a part handed
			// over must be decided before the statement returns.
			done = nil
			if firstErr == nil {
				firstErr = ctx.Err()
			}
			doAbort()
		}
	}
	epochs := make([]uint64, 0, n)
	for _, r := range res {
		if r.prepared {
			epochs = append(epochs, r.epoch)
		}
	}
	if TxRoundHook != nil {
		TxRoundHook(epochs)
	}
	same := len(epochs) == n
	for _, e := range epochs {
		same = same && e == epochs[0]
	}
	if aborted || !same {
		doAbort()
		// Wait for the prepared parts to discard, so that a retry finds
		// the actors free.
		for i, r := range res {
			if r.prepared {
				<-reqs[i].Done
			}
		}
		switch {
		case firstErr != nil && (errors.Is(firstErr, errReplaced) || errors.Is(firstErr, context.Canceled) && ctx.Err() == nil):
			// An actor was replaced by a recovery: retry on the new ones
			// (tableJobFor waits for the rebuild).
			return 0, true, firstErr
		case firstErr != nil:
			return 0, false, firstErr
		case timedOut:
			return 0, true, errRoundTimeout
		}
		return 0, true, nil
	}
	// Commit point: every part holds its actor in the same epoch.
	for _, d := range decide {
		d <- true
	}
	var applyErr error
	for i := range reqs {
		if err := <-reqs[i].Done; err != nil && applyErr == nil {
			applyErr = err
		}
	}
	if applyErr != nil {
		// Only an actor aborted by a recovery of the database fails here;
		// the recovery discards the epoch's writes of every table of the
		// transaction, so it is lost whole.
		return 0, false, sqlerr.Wrap(applyErr, sqlerr.SerializationFailure,
			"the transaction was rolled back by a recovery while it committed; retry it")
	}
	return epochs[0], false, nil
}

var errReplaced = fmt.Errorf("table actor replaced by a recovery")
