package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
)

// Committer makes an epoch durable and visible (the storage engine).
type Committer interface {
	Commit(ctx context.Context, epoch uint64) error
	CommittedEpoch() uint64
	DiscardUncommitted()
}

// Actors is the meta → compute seam of the barrier loop: the actors of
// the compute node(s) that barriers flow through (stream.BarrierManager
// in-process). The loop injects a barrier into the source actors and
// waits for its collection from every actor, learns of actor failures,
// and resets actors (all, or one group's) when it recovers. A Collection
// is a handle that completes when every actor passed the barrier; a
// cluster's meta node would fill it from the compute nodes' reports.
type Actors interface {
	Inject(b *stream.Barrier) (*stream.Collection, error)
	Failures() <-chan *stream.ActorFailure
	Has(id stream.ActorID) bool
	Reset(ctx context.Context) error
	ResetGroup(ctx context.Context, group uint64) error
	Forget()
}

var _ Actors = (*stream.BarrierManager)(nil)

// Rebuilder recreates every streaming job's actors at the start of epoch
// curr after recovery (the DDL layer implements it from the catalog).
type Rebuilder interface {
	Rebuild(ctx context.Context, curr uint64) error
}

// GroupRebuilder is a Rebuilder that can also recover one isolation
// group (a database) alone, so that a failing job does not stop the jobs
// of other databases.
type GroupRebuilder interface {
	Rebuilder
	// GroupTables lists the state tables of the group's jobs.
	GroupTables(group uint64) []storage.TableID
	// TearDownGroup forgets the group's running jobs; their actors have
	// been joined (I3). DML to the group's tables fails until the rebuild.
	TearDownGroup(group uint64)
	// RebuildGroup recreates the group's jobs at the start of epoch curr.
	RebuildGroup(ctx context.Context, group uint64, curr uint64) error
}

// CommitResolver is a Committer whose commit can end with an unknown
// outcome (the metastore write may have landed, and re-reading it failed).
// ResolveCommit settles it, so that CommittedEpoch is the truth; it fails
// while the outcome stays unknown.
type CommitResolver interface {
	ResolveCommit(ctx context.Context) error
}

// WriteFencer is a Committer that can refuse writes of epochs below a
// bound (the storage engine): recovery fences the epochs of the actor
// generation it replaces, so that an actor it had to abandon cannot add
// to the state the next generation builds on.
type WriteFencer interface {
	FenceWritesBelow(epoch uint64)
}

// resolveRetryMax bounds the wait between two attempts of recovery to
// settle an unknown commit outcome.
const resolveRetryMax = 2 * time.Second

// GroupCommitter is a Committer that can drop one group's uncommitted
// writes while the others' commit.
type GroupCommitter interface {
	Committer
	DiscardUncommittedTables(ids []storage.TableID) error
}

// groupState tracks a group (database) that failed recently.
type groupState struct {
	down     bool      // its jobs are torn down, waiting for the rebuild
	failures int       // consecutive failures (backoff)
	retryAt  time.Time // when to rebuild
	upSince  time.Time // last successful rebuild
	// isolatedAt is the epoch being written when the group was reset: its
	// old actors may have written in it, so the rebuild waits for a later
	// epoch (writes of the new actors must not share an epoch with
	// discarded ones).
	isolatedAt uint64
	rec        RecoveryRecord
}

// groupHealthy is how long a rebuilt group must run without failing
// before its backoff is forgotten.
const groupHealthy = 2 * time.Second

// BarrierLoop advances and commits epochs.
type BarrierLoop struct {
	log      *slog.Logger
	interval time.Duration
	// slowBarrier: a barrier round slower than this logs a slow_barrier
	// event (SetSlowBarrierThreshold; 0 turns the event off).
	slowBarrier atomic.Int64
	local       Actors
	store       Committer

	// mu serialises barrier injection with graph changes: DDL holds it while
	// it spawns actors so that they start at a well-defined epoch.
	mu        sync.Mutex
	curr      uint64
	rebuilder Rebuilder

	committedMu sync.Mutex
	committed   uint64
	commitCond  *sync.Cond
	loopErr     error // set when the loop has stopped
	// discarded holds the epoch ranges (lo, hi] that recoveries rolled
	// back: writes made in them were lost, so waiting for them must fail
	// rather than be satisfied by a later commit (I7).
	discarded [][2]uint64
	// discardCause[i] is the failure that made the recovery roll back
	// discarded[i] (nil for RECOVER or an actor failure): a session whose
	// writes were lost is told why, e.g. a full disk.
	discardCause []error
	// failure is the barrier failure the next recovery rolls back for.
	failure error
	// groupDiscarded holds, per group, the epoch ranges in which that
	// group's writes were rolled back by a group recovery; a range is open
	// (hi = MaxUint64) while the group is down.
	groupDiscarded map[uint64][][2]uint64

	// groups: groups that failed recently (loop goroutine only).
	groups map[uint64]*groupState

	kick     chan struct{}
	requests chan *barrierRequest
	// deferred: mutation requests that arrived while a barrier was being
	// collected (loop goroutine only).
	deferred []*barrierRequest
	stop     chan struct{}
	stopped  chan struct{}

	recoveries []RecoveryRecord
	history    barrierHistory // the last committed rounds (history.go)

	// serving is the request the loop goroutine is serving (loop
	// goroutine only): a panic answers it with the panic.
	serving *barrierRequest

	// requestHook is a test seam (SetRequestHook).
	requestHook atomic.Pointer[func(kind string)]
}

// SetRequestHook installs fn, called on the loop goroutine with the kind
// ("mutation" or "recover") of every request the loop takes, before it
// serves or defers it. Race tests wait on it rather than sleep: once it
// fired, the statement that sent the request is waiting on the loop. It
// returns a function that removes it.
func (l *BarrierLoop) SetRequestHook(fn func(kind string)) (remove func()) {
	l.requestHook.Store(&fn)
	return func() { l.requestHook.CompareAndSwap(&fn, nil) }
}

func (l *BarrierLoop) took(r *barrierRequest) {
	if h := l.requestHook.Load(); h != nil {
		kind := "mutation"
		if r.recoverReason != "" {
			kind = "recover"
		}
		(*h)(kind)
	}
}

type barrierRequest struct {
	mutation *stream.Mutation
	// prepare runs under the graph lock just before the barrier is
	// injected (it spawns the actors the mutation connects, so that they
	// take part in exactly the barriers from this one on).
	prepare       func(curr uint64) error
	recoverReason string // set for a recovery request
	group         uint64 // a recovery of this group alone (0: everything)
	done          chan error
	epoch         uint64 // the Prev epoch of the barrier that carried it
}

// RecoveryRecord describes one recovery for the system table.
type RecoveryRecord struct {
	Start  time.Time
	Reason string
	// Database is the isolation group recovered alone; 0 when the whole
	// graph was recovered.
	Database uint64
	Reset    time.Duration
	Rebuild  time.Duration
	Err      string
	Epoch    uint64
	// Abandoned reports the actors the recovery abandoned because they
	// did not exit when aborted (which actor, of which job, doing what).
	Abandoned string
}

// NewBarrierLoop creates the loop; Start runs it.
func NewBarrierLoop(log *slog.Logger, interval time.Duration, local Actors, store Committer) *BarrierLoop {
	if log == nil {
		log = slog.Default()
	}
	l := &BarrierLoop{
		log:      log,
		interval: interval,
		local:    local,
		store:    store,
		kick:     make(chan struct{}, 1),
		requests: make(chan *barrierRequest, 64),
		stop:     make(chan struct{}),
		stopped:  make(chan struct{}),

		groupDiscarded: map[uint64][][2]uint64{},
		groups:         map[uint64]*groupState{},
	}
	l.commitCond = sync.NewCond(&l.committedMu)
	l.slowBarrier.Store(int64(DefaultSlowBarrier(interval)))
	l.committed = store.CommittedEpoch()
	l.curr = nextEpoch(l.committed)
	return l
}

// DefaultSlowBarrier is the slow_barrier threshold for a barrier
// interval: ten intervals, at least a second. A barrier round (inject,
// collect, commit) normally takes milliseconds to a fraction of the
// interval; ten intervals means epochs fall visibly behind.
func DefaultSlowBarrier(interval time.Duration) time.Duration {
	return max(time.Second, 10*interval)
}

// SetSlowBarrierThreshold sets how slow a barrier round must be to log a
// slow_barrier event; 0 turns the event off.
func (l *BarrierLoop) SetSlowBarrierThreshold(d time.Duration) { l.slowBarrier.Store(int64(d)) }

// nextEpoch returns an epoch after prev. Epochs embed wall-clock
// milliseconds (<<16) so that they are meaningful in logs and grow across
// restarts, and are strictly increasing regardless of the clock.
func nextEpoch(prev uint64) uint64 {
	e := uint64(time.Now().UnixMilli()) << 16
	if e <= prev {
		e = prev + 1
	}
	return e
}

// SetRebuilder installs the recovery callback.
func (l *BarrierLoop) SetRebuilder(r Rebuilder) { l.rebuilder = r }

// Start runs the loop in the background.
func (l *BarrierLoop) Start() { go l.run() }

// Stop ends the loop after the barrier in progress.
func (l *BarrierLoop) Stop() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.stopped
}

// CurrentEpoch is the epoch being written now.
func (l *BarrierLoop) CurrentEpoch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.curr
}

// CommittedEpoch is the last committed epoch.
func (l *BarrierLoop) CommittedEpoch() uint64 {
	l.committedMu.Lock()
	defer l.committedMu.Unlock()
	return l.committed
}

// WithGraphLock runs fn while no barrier can be injected; fn gets the epoch
// being written, at which new actors start.
func (l *BarrierLoop) WithGraphLock(fn func(curr uint64) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fn(l.curr)
}

// errRecoverRequested ends a barrier round aborted by a RECOVER (which
// already ran).
var errRecoverRequested = errors.New("barrier aborted by RECOVER")

// errStopping ends a barrier round that was waiting when Stop was called:
// the epoch is abandoned whole (it was never acknowledged).
var errStopping = errors.New("barrier loop is stopping")

// ErrWritesDiscarded is returned (wrapped) when writes being waited for
// were in an epoch that a recovery rolled back.
var ErrWritesDiscarded = errors.New("writes were rolled back by a recovery")

// Flush returns once every write made before the call is committed: it
// asks for a barrier now and waits for the commit of the epoch that was
// current at the call (I7: acknowledged means durable).
func (l *BarrierLoop) Flush(ctx context.Context) error {
	target := l.CurrentEpoch()
	l.kickBarrier()
	return l.waitCommitted(ctx, target, nil)
}

// WaitWritten returns once the epochs [lo, hi] in which a session wrote are
// committed (and the epoch current now, so that FLUSH covers everything
// before it), or fails with ErrWritesDiscarded if a recovery rolled back
// any epoch in [lo, hi].
func (l *BarrierLoop) WaitWritten(ctx context.Context, lo, hi uint64) error {
	return l.WaitWrittenIn(ctx, 0, lo, hi)
}

// WaitWrittenIn is WaitWritten for writes to the jobs of one group: it
// also fails if a recovery of that group alone rolled them back.
func (l *BarrierLoop) WaitWrittenIn(ctx context.Context, group, lo, hi uint64) error {
	target := max(hi, l.CurrentEpoch())
	l.kickBarrier()
	return l.waitCommitted(ctx, target, func() error { return l.lostLocked(group, lo, hi) })
}

// WaitEpochsWritten returns once the epochs a session wrote in (each one,
// not the range between them) and the epoch current now are committed, or
// fails with ErrWritesDiscarded if a recovery of everything or of group
// rolled back any of them. Epochs committed before a later recovery are
// never reported lost.
func (l *BarrierLoop) WaitEpochsWritten(ctx context.Context, group uint64, epochs []uint64) error {
	target := l.CurrentEpoch()
	for _, e := range epochs {
		target = max(target, e)
	}
	l.kickBarrier()
	return l.waitCommitted(ctx, target, func() error {
		for _, e := range epochs {
			if err := l.lostLocked(group, e, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// lostLocked reports (as ErrWritesDiscarded) whether a recovery rolled
// back an epoch in [lo, hi]. committedMu is held.
func (l *BarrierLoop) lostLocked(group, lo, hi uint64) error {
	if lo == 0 {
		return nil
	}
	for i, r := range l.discarded {
		// [lo, hi] meets the rolled-back range (r0, r1]?
		if from, to := max(lo, r[0]+1), min(hi, r[1]); from <= to {
			if cause := l.discardCause[i]; cause != nil {
				return fmt.Errorf("epochs %d..%d: %w: %w", from, to, ErrWritesDiscarded, cause)
			}
			return fmt.Errorf("epochs %d..%d: %w", from, to, ErrWritesDiscarded)
		}
	}
	if group != 0 {
		for _, r := range l.groupDiscarded[group] {
			if from, to := max(lo, r[0]+1), min(hi, r[1]); from <= to {
				return fmt.Errorf("epochs %d..%d of database %d: %w", from, to, group, ErrWritesDiscarded)
			}
		}
	}
	return nil
}

func (l *BarrierLoop) kickBarrier() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// waitCommitted waits until epoch is committed. lost, when not nil, is
// checked (with committedMu held) at every wake-up: the writes waited for
// were rolled back by a recovery.
func (l *BarrierLoop) waitCommitted(ctx context.Context, epoch uint64, lost func() error) error {
	stopWake := context.AfterFunc(ctx, func() {
		l.committedMu.Lock()
		l.commitCond.Broadcast()
		l.committedMu.Unlock()
	})
	defer stopWake()
	l.committedMu.Lock()
	defer l.committedMu.Unlock()
	for {
		if lost != nil {
			if err := lost(); err != nil {
				return err
			}
		}
		if l.committed >= epoch {
			return nil
		}
		if l.loopErr != nil {
			return l.loopErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		l.commitCond.Wait()
	}
}

// InjectMutation sends a barrier carrying mutation and returns once that
// barrier's epoch is committed. prepare, when not nil, runs first with the
// graph locked and the epoch being written; if it fails, no barrier is
// sent.
func (l *BarrierLoop) InjectMutation(ctx context.Context, m *stream.Mutation, prepare func(curr uint64) error) error {
	req := &barrierRequest{mutation: m, prepare: prepare, done: make(chan error, 1)}
	select {
	case l.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-l.stopped:
		return l.stoppedErr()
	}
	select {
	case err := <-req.done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	case <-l.stopped:
		return l.stoppedErr()
	}
	return l.waitCommitted(ctx, req.epoch, nil)
}

func (l *BarrierLoop) run() {
	defer close(l.stopped)
	ticker := time.NewTicker(l.interval)
	defer ticker.Stop()
	backoff := 100 * time.Millisecond
	for !l.step(ticker, &backoff) {
	}
}

// step runs one round of the loop and reports whether the loop must end.
// A panic anywhere in it (a committer, a rebuilder, the loop itself)
// becomes a failed round followed by a recovery (I6: no goroutine outside
// the actors takes the process down); every lock the round held is
// released on the way out, since each is held under a defer.
func (l *BarrierLoop) step(ticker *time.Ticker, backoff *time.Duration) (stop bool) {
	defer func() {
		if p := recover(); p != nil {
			l.survivePanic(p, backoff)
		}
	}()
	l.serving = nil
	l.rebuildDueGroups()
	var req *barrierRequest
	if len(l.deferred) > 0 {
		// A mutation that arrived while a barrier was being collected.
		req, l.deferred = l.deferred[0], l.deferred[1:]
	} else {
		select {
		case <-l.stop:
			l.setLoopErr(errors.New("server is shutting down"))
			return true
		case <-ticker.C:
		case <-l.kick:
		case <-l.nextGroupRetry():
			return false
		case req = <-l.requests:
			l.took(req)
		case f := <-l.local.Failures():
			if err := l.isolate(f); err != nil {
				l.recover(fmt.Sprintf("actor failure: %v", err))
			}
			return false
		}
	}
	l.serving = req // the next round replaces it; survivePanic answers it
	if req != nil && req.recoverReason != "" {
		l.serveRecovery(req)
		return false
	}
	if err := l.barrier(req); err != nil {
		if errors.Is(err, errStopping) {
			l.setLoopErr(errors.New("server is shutting down"))
			return true
		}
		if errors.Is(err, errRecoverRequested) {
			// RECOVER while a barrier was stuck: it aborts the barrier.
			return false
		}
		if errors.Is(err, storage.ErrMetastoreDiverged) {
			l.stopDiverged(err)
			return true
		}
		l.log.Error("barrier failed; recovering", "err", err)
		l.mu.Lock()
		l.failure = err
		l.mu.Unlock()
		l.recover(err.Error())
		l.backOff(backoff)
		return false
	}
	*backoff = 100 * time.Millisecond
	return false
}

// stopDiverged ends the loop for good when the metastore's version is not
// the one this server committed last (storage.ErrMetastoreDiverged):
// recovering cannot help (every commit would find the same head) and
// reloading in place is unsafe (I1, I7; see the error's comment). The
// actors are stopped, and every FLUSH, DML and DDL waiting on the loop or
// arriving later fails with err, which names both versions.
func (l *BarrierLoop) stopDiverged(err error) {
	l.log.Error("barrier loop stopped: the metastore diverged; restart Runnel once the metastore is checked", "err", err)
	func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		// Reset's wait is bounded by the actors' StopTimeout
		// (--actor-stop-timeout).
		if rerr := l.local.Reset(context.Background()); rerr != nil {
			l.log.Error("stopping the actors after the metastore diverged", "err", rerr)
		}
	}()
	for _, r := range l.deferred {
		r.done <- err
	}
	l.deferred = nil
	l.setLoopErr(err)
}

// stoppedErr is what a request to a stopped loop fails with.
func (l *BarrierLoop) stoppedErr() error {
	l.committedMu.Lock()
	defer l.committedMu.Unlock()
	if l.loopErr != nil {
		return l.loopErr
	}
	return errors.New("barrier loop stopped")
}

// backOff waits before the next round after a failed one, longer after
// each failure in a row.
func (l *BarrierLoop) backOff(backoff *time.Duration) {
	select {
	case <-time.After(*backoff):
	case <-l.stop:
	}
	*backoff = min(*backoff*2, 10*time.Second)
}

// survivePanic handles a panic of one round of the loop: it is logged
// with its stack, the request being served (if any) fails with it, and
// everything is recovered — a recovery that panics too is logged and the
// next round tries again after the backoff.
func (l *BarrierLoop) survivePanic(p any, backoff *time.Duration) {
	err := fmt.Errorf("panic in the barrier loop: %v", p)
	l.log.Error("barrier loop panicked; recovering", "panic", p, "stack", string(debug.Stack()))
	if r := l.serving; r != nil {
		l.serving = nil
		select {
		case r.done <- err:
		default: // answered already
		}
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				l.log.Error("recovery after a barrier loop panic panicked too; retrying after the backoff", "panic", p, "stack", string(debug.Stack()))
			}
		}()
		l.mu.Lock()
		l.failure = err
		l.mu.Unlock()
		l.recover(err.Error())
	}()
	l.backOff(backoff)
}

// isolate handles an actor failure by recovering only the actor's group:
// reset (its actors aborted and joined, I3), then its uncommitted writes
// discarded, while barriers of the other groups go on. The rebuild follows
// at the group's next retry time (rebuildDueGroups). It returns an error
// when only a full recovery can handle the failure.
func (l *BarrierLoop) isolate(f *stream.ActorFailure) error {
	if f.Group == 0 || !l.groupRecovery() {
		return f
	}
	if !l.local.Has(f.Actor) {
		return nil // stale: its group was reset since
	}
	if err := l.isolateGroup(f.Group, fmt.Sprintf("actor failure: %v", f), true); err != nil {
		return fmt.Errorf("%v; recovering everything: %w", f, err)
	}
	return nil
}

// groupRecovery reports whether groups can be recovered alone.
func (l *BarrierLoop) groupRecovery() bool {
	_, ok1 := l.rebuilder.(GroupRebuilder)
	_, ok2 := l.store.(GroupCommitter)
	return ok1 && ok2
}

// isolateGroup resets group g alone (see isolate). failed counts it as a
// failure for the backoff; a requested reset (RecoverGroup) does not.
func (l *BarrierLoop) isolateGroup(g uint64, reason string, failed bool) error {
	gr := l.rebuilder.(GroupRebuilder)
	gc := l.store.(GroupCommitter)
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := RecoveryRecord{Start: time.Now(), Reason: reason, Database: g}
	l.log.Warn("recovering one database", "database", g, "reason", reason)
	if err := l.local.ResetGroup(context.Background(), g); err != nil {
		return err
	}
	gr.TearDownGroup(g)
	if err := gc.DiscardUncommittedTables(gr.GroupTables(g)); err != nil {
		return err
	}
	rec.Reset = time.Since(rec.Start)
	committed := l.store.CommittedEpoch()
	rec.Epoch = committed
	l.committedMu.Lock()
	if rs := l.groupDiscarded[g]; len(rs) == 0 || rs[len(rs)-1][1] != math.MaxUint64 {
		l.groupDiscarded[g] = append(rs, [2]uint64{committed, math.MaxUint64})
	}
	l.commitCond.Broadcast()
	l.committedMu.Unlock()
	st := l.groups[g]
	if st == nil {
		st = &groupState{}
		l.groups[g] = st
	}
	if failed {
		if !st.upSince.IsZero() && time.Since(st.upSince) > groupHealthy {
			st.failures = 0
		}
		st.failures++
		st.retryAt = time.Now().Add(groupBackoff(st.failures))
	} else if !st.down {
		st.retryAt = time.Now()
	}
	st.down = true
	st.isolatedAt = l.curr
	st.rec = rec
	l.kickBarrier() // the rebuild waits for the next epoch
	return nil
}

// RecoverGroup recovers one database alone (reset, discard, rebuild at the
// next epoch), e.g. to abort a job that does not pass barriers so that it
// can be dropped (I5). It returns once the group is reset; the rebuild
// follows. Without group recovery it recovers everything.
func (l *BarrierLoop) RecoverGroup(ctx context.Context, group uint64, reason string) error {
	return l.call(ctx, &barrierRequest{recoverReason: reason, group: group, done: make(chan error, 1)})
}

// serveRecovery runs a recovery request on the loop goroutine: of one
// group, or (group 0, or when that fails) of everything.
func (l *BarrierLoop) serveRecovery(req *barrierRequest) {
	if req.group != 0 && l.groupRecovery() {
		err := l.isolateGroup(req.group, req.recoverReason, false)
		if err == nil {
			req.done <- nil
			return
		}
		l.log.Warn("recovery of one database failed; recovering everything", "database", req.group, "err", err)
	}
	err := func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.recoverLocked(req.recoverReason)
	}()
	req.done <- err
}

// groupBackoff is the wait before the n-th consecutive rebuild of a
// failing group: none for the first, then exponential up to 10 s.
func groupBackoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return min(100*time.Millisecond<<min(n-2, 10), 10*time.Second)
}

// nextGroupRetry fires when the next down group is due for its rebuild
// (one waiting for the next epoch is woken by the barrier it kicked).
func (l *BarrierLoop) nextGroupRetry() <-chan time.Time {
	var next time.Time
	for _, st := range l.groups {
		if st.down && l.curr > st.isolatedAt && (next.IsZero() || st.retryAt.Before(next)) {
			next = st.retryAt
		}
	}
	if next.IsZero() {
		return nil
	}
	return time.After(time.Until(next))
}

// rebuildDueGroups rebuilds the down groups whose retry time has come, at
// the epoch being written (their new actors take part in the next
// barrier), and forgets the backoff of groups healthy for long enough.
func (l *BarrierLoop) rebuildDueGroups() {
	now := time.Now()
	var stuck error // an abandoned actor that a full recovery must fence
	defer func() {
		if stuck != nil {
			l.recover(fmt.Sprintf("a database's rebuild left actors that did not stop: %v", stuck))
		}
	}()
	for g, st := range l.groups {
		if !st.down {
			if now.Sub(st.upSince) > groupHealthy {
				delete(l.groups, g)
			}
			continue
		}
		if now.Before(st.retryAt) || l.curr <= st.isolatedAt {
			continue
		}
		gr := l.rebuilder.(GroupRebuilder)
		t := time.Now()
		err := l.rebuildGroup(gr, g)
		rec := st.rec
		rec.Rebuild = time.Since(t)
		if err != nil {
			if se := (*stream.StuckActorsError)(nil); errors.As(err, &se) {
				stuck = se
			}
			rec.Err = err.Error()
			st.failures++
			st.retryAt = time.Now().Add(groupBackoff(st.failures))
			l.log.Error("rebuild of one database failed", "database", g, "err", err, "retry_in", groupBackoff(st.failures))
		} else {
			st.down = false
			st.upSince = time.Now()
			l.log.Info("database recovered", "database", g, "reset", rec.Reset, "rebuild", rec.Rebuild, "epoch", rec.Epoch)
		}
		l.mu.Lock()
		l.addRecovery(rec)
		l.mu.Unlock()
	}
}

// rebuildGroup rebuilds group g at the epoch being written, under the
// graph lock (released by a defer, so that a panicking rebuilder leaves it
// free for the recovery that follows, survivePanic).
func (l *BarrierLoop) rebuildGroup(gr GroupRebuilder, g uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := gr.RebuildGroup(context.Background(), g, l.curr)

	if err == nil {
		// Writes of the group before l.curr were rolled back; its new
		// actors write from l.curr on.
		l.committedMu.Lock()
		rs := l.groupDiscarded[g]
		if n := len(rs); n > 0 && rs[n-1][1] == math.MaxUint64 {
			rs[n-1][1] = l.curr - 1
		}
		l.committedMu.Unlock()
	} else {
		// Half-built: tear it down again and retry later.
		if rerr := l.local.ResetGroup(context.Background(), g); rerr != nil {
			// An actor of the half-built group did not stop: only a
			// full recovery fences its epochs (I3); the caller runs one.
			err = fmt.Errorf("%w; %w", err, rerr)
		}
		gr.TearDownGroup(g)
	}
	return err
}

func (l *BarrierLoop) setLoopErr(err error) {
	l.committedMu.Lock()
	l.loopErr = err
	l.commitCond.Broadcast()
	l.committedMu.Unlock()
}

// barrier runs one barrier round: inject, collect, commit.
func (l *BarrierLoop) barrier(req *barrierRequest) error {
	var (
		b       *stream.Barrier
		prev    uint64
		tInj    time.Time
		coll    *stream.Collection
		prepErr error
		tStart  = time.Now()
	)
	err := func() error {
		l.mu.Lock()
		defer l.mu.Unlock() // a panicking prepare must not keep the graph locked
		if req != nil && req.prepare != nil {
			if prepErr = req.prepare(l.curr); prepErr != nil {
				return nil
			}
		}
		prev = l.curr
		l.curr = nextEpoch(prev)
		b = &stream.Barrier{Prev: prev, Curr: l.curr}
		if req != nil {
			b.Mutation = req.mutation
			req.epoch = prev
		}
		var err error
		coll, err = l.local.Inject(b)
		tInj = time.Now()
		if err == nil {
			obs.BarrierInjected()
		}
		return err
	}()
	if prepErr != nil {
		req.done <- prepErr
		// The graph is unchanged: nothing to recover from.
		return nil
	}
	if req != nil {
		req.done <- err
	}
	if err != nil {
		return err
	}
	ctx := context.Background()
	for collected := false; !collected; {
		select {
		case <-coll.Done():
			if err := coll.Err(); err != nil {
				return fmt.Errorf("collect %s: %w", b, err)
			}
			collected = true
		case <-l.stop:
			return errStopping
		case r := <-l.requests:
			l.took(r)
			if r.recoverReason != "" {
				l.serving = r // req was answered at injection
			}
			switch {
			case r.recoverReason != "" && r.group != 0 && l.groupRecovery():
				// Resetting a group may be what unblocks this barrier
				// (an actor that does not pass it).
				l.serveRecovery(r)
			case r.recoverReason != "":
				// RECOVER of everything aborts this barrier.
				l.serveRecovery(r)
				return errRecoverRequested
			default:
				l.deferred = append(l.deferred, r)
			}
		case f := <-l.local.Failures():
			// One group failed: reset it alone; the barrier completes
			// with the others (or everything is recovered).
			if err := l.isolate(f); err != nil {
				return fmt.Errorf("collect %s: %w", b, err)
			}
		}
	}
	// An actor that failed before this barrier was injected is not waited
	// for (Inject skips exited actors), so its failure may still be queued:
	// handle it before committing, or its group's epoch would commit
	// without that actor's writes.
	for pending := true; pending; {
		select {
		case f := <-l.local.Failures():
			if err := l.isolate(f); err != nil {
				return fmt.Errorf("collect %s: %w", b, err)
			}
		default:
			pending = false
		}
	}
	l.local.Forget()
	tCol := time.Now()
	if err := l.store.Commit(ctx, prev); err != nil {
		return fmt.Errorf("commit epoch %d: %w", prev, err)
	}
	tDone := time.Now()
	obs.BarrierCommitted(tStart, tInj, tCol, tDone)
	l.history.add(BarrierTiming{Epoch: prev, Committed: tDone, Inject: tInj.Sub(tStart), Collect: tCol.Sub(tInj), Commit: tDone.Sub(tCol)})
	l.log.Debug("barrier committed", "epoch", prev, "collect", tCol.Sub(tInj), "commit", tDone.Sub(tCol))
	if slow := time.Duration(l.slowBarrier.Load()); slow > 0 && tDone.Sub(tStart) >= slow {
		obs.Event(l.log, slog.LevelWarn, obs.EventSlowBarrier, slog.Uint64("epoch", prev),
			obs.Seconds("inject_seconds", tInj.Sub(tStart)), obs.Seconds("collect_seconds", tCol.Sub(tInj)),
			obs.Seconds("commit_seconds", tDone.Sub(tCol)), obs.Seconds("total_seconds", tDone.Sub(tStart)),
			obs.Seconds("threshold_seconds", slow))
	}
	l.committedMu.Lock()
	l.committed = prev
	l.commitCond.Broadcast()
	l.committedMu.Unlock()
	return nil
}

// Recover runs recovery now (the RECOVER statement) and returns when the
// graph is rebuilt. It runs on the loop goroutine, so it never overlaps a
// barrier round.
func (l *BarrierLoop) Recover(ctx context.Context, reason string) error {
	return l.call(ctx, &barrierRequest{recoverReason: reason, done: make(chan error, 1)})
}

// call hands a request to the loop goroutine and waits for its answer.
func (l *BarrierLoop) call(ctx context.Context, req *barrierRequest) error {
	select {
	case l.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-l.stopped:
		return l.stoppedErr()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-l.stopped:
		return l.stoppedErr()
	}
}

func (l *BarrierLoop) recover(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.recoverLocked(reason); err != nil {
		l.log.Error("recovery failed", "reason", reason, "err", err)
	}
}

// recoverLocked: reset → (purge) → rebuild, in that order (I3).
func (l *BarrierLoop) recoverLocked(reason string) error {
	rec := RecoveryRecord{Start: time.Now(), Reason: reason}
	l.log.Warn("recovery started", "reason", reason)
	ctx := context.Background()
	if err := l.local.Reset(ctx); err != nil {
		var stuck *stream.StuckActorsError
		if !errors.As(err, &stuck) {
			rec.Err = err.Error()
			l.addRecovery(rec)
			return err
		}
		// Escalation: actors that ignored their abort within the bound
		// are abandoned rather than waited for forever; the fence below
		// keeps whatever they still do out of the state the new
		// generation builds on (I3, I7).
		rec.Abandoned = err.Error()
		l.log.Error("recovery: abandoning actors that did not stop; their writes are fenced", "err", err)
	}
	if err := l.resolveCommit(ctx); err != nil {
		rec.Err = err.Error()
		l.addRecovery(rec)
		return err
	}
	// The new generation writes from next on; every epoch an old actor
	// (an abandoned one included) could write is at most l.curr < next.
	// Fence first, then discard: a late write is either discarded or
	// refused, never committed (I3, I7).
	next := nextEpoch(max(l.store.CommittedEpoch(), l.curr))
	if f, ok := l.store.(WriteFencer); ok {
		f.FenceWritesBelow(next)
	}
	l.store.DiscardUncommitted()
	rec.Reset = time.Since(rec.Start)
	committed := l.store.CommittedEpoch()
	l.committedMu.Lock()
	l.committed = committed
	if l.curr > committed {
		l.discarded = append(l.discarded, [2]uint64{committed, l.curr})
		l.discardCause = append(l.discardCause, l.failure)
	}
	l.failure = nil
	for _, rs := range l.groupDiscarded {
		if n := len(rs); n > 0 && rs[n-1][1] == math.MaxUint64 {
			rs[n-1][1] = l.curr
		}
	}
	clear(l.groups) // the rebuild below covers every group
	l.commitCond.Broadcast()
	l.committedMu.Unlock()
	l.curr = next
	rec.Epoch = committed
	t := time.Now()
	if l.rebuilder != nil {
		if err := l.rebuilder.Rebuild(ctx, l.curr); err != nil {
			rec.Err = err.Error()
			l.addRecovery(rec)
			return fmt.Errorf("rebuild: %w", err)
		}
	}
	rec.Rebuild = time.Since(t)
	l.addRecovery(rec)
	l.log.Info("recovery done", "reason", reason, "reset", rec.Reset, "rebuild", rec.Rebuild, "epoch", committed)
	return nil
}

// resolveCommit settles a commit whose outcome is unknown before recovery
// takes the committed epoch as the point it rolls back to (I7): an epoch
// that may have committed must not be reported rolled back (a false 40001
// makes clients write twice), nor committed before it is known. While the
// metastore cannot tell, recovery waits (barriers cannot commit then
// anyway) and retries until it can, or until the loop stops.
func (l *BarrierLoop) resolveCommit(ctx context.Context) error {
	r, ok := l.store.(CommitResolver)
	if !ok {
		return nil
	}
	wait := 50 * time.Millisecond
	for {
		err := r.ResolveCommit(ctx)
		if err == nil {
			return nil
		}
		l.log.Error("recovery: the outcome of the last commit is unknown; retrying before rolling back", "err", err, "retry_in", wait)
		select {
		case <-time.After(wait):
		case <-l.stop:
			return fmt.Errorf("recovery stopped while the outcome of a commit was unknown: %w", err)
		}
		wait = min(wait*2, resolveRetryMax)
	}
}

// addRecovery records a finished recovery (l.mu held): in the history
// (rw_recovery_history) and in the metrics.
func (l *BarrierLoop) addRecovery(rec RecoveryRecord) {
	l.recoveries = append(l.recoveries, rec)
	obs.RecoveryDone(rec.Reason, rec.Database != 0, rec.Reset, rec.Rebuild, rec.Err != "")
	// One recovery event per recovery, whatever its outcome.
	scope, result, level := "all", "ok", slog.LevelInfo
	if rec.Database != 0 {
		scope = "database"
	}
	if rec.Err != "" {
		result, level = "failed", slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("reason", rec.Reason), slog.String("reason_class", obs.RecoveryReason(rec.Reason)),
		slog.String("scope", scope), slog.Uint64("database", rec.Database), slog.String("result", result),
		obs.Seconds("reset_seconds", rec.Reset), obs.Seconds("rebuild_seconds", rec.Rebuild), slog.Uint64("epoch", rec.Epoch),
	}
	if rec.Err != "" {
		attrs = append(attrs, slog.String("error", rec.Err))
	}
	if rec.Abandoned != "" {
		attrs = append(attrs, slog.String("abandoned", rec.Abandoned))
	}
	obs.Event(l.log, level, obs.EventRecovery, attrs...)
}

// Recoveries lists past recoveries.
func (l *BarrierLoop) Recoveries() []RecoveryRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]RecoveryRecord(nil), l.recoveries...)
}
