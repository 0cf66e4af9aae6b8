package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/obs"
)

// Compaction by compactor nodes (issue 16 item 5).
//
// With Options.RemoteCompaction the engine (the meta leader) does not
// merge a picked compaction itself: it writes the job record (inputs,
// reserved output ids; state Planned) and a task row holding the plan —
// everything the merge needs, as data — in one metastore transaction, and
// waits. A compactor process (Compactor) claims the task, merges, uploads
// the outputs and hands the result back in the task row; the engine then
// commits the delta itself, through its fenced metastore handle, exactly
// as an in-process compaction commits (commitCompaction). The task row:
//
//	storage_compaction_tasks (job_id, plan, state, claimed_by, attempt, lease_ms, result, created_ms)
//
//	queued ──claim (FOR UPDATE SKIP LOCKED)──▶ claimed ──hand back──▶ done ──▶ (row deleted with the commit)
//	   │                                         │  └──merge failed──▶ failed ─┐
//	   └── nobody claimed it in GCGrace/2 ──┐    └── lease lapsed ──┐          │
//	                                        ▼                       ▼          ▼
//	                                   the engine aborts the job: outputs → deletion queue, row deleted
//
// Invariants:
//   - I1(b): every output id is reserved in the job record before the
//     compactor's PUT (by the engine when it plans, or by the compactor
//     extending the record under its claim); a compactor killed at any
//     instant leaves objects owned by a live record, which the engine
//     aborts when the claim's lease lapses (outputs → deletion queue,
//     then GC). A paused compactor resumed after that can still PUT an
//     object under an id it reserved: nothing references it, the commit
//     fence refuses it (its job is not live), and full GC deletes it after
//     the grace period; the compactor deletes what it wrote itself when
//     it finds its claim gone.
//   - I1/I2 one writer: a compactor never writes the version. Its writes
//     (claim, lease renewal, output reservation, hand-back) touch only its
//     task row and its job record, each conditioned on its claim (job id,
//     node, attempt, state claimed) in the same transaction; the engine's
//     abort of a lapsed claim and the compactor's hand-back lock the same
//     row (PostgreSQL row lock; SQLite's write transactions are
//     exclusive), so exactly one of them wins: an aborted job is never
//     handed back, a handed-back job is committed (or aborted by the
//     engine itself, as an in-process one).
//   - I2: Cancel of a remote job and its commit-start share j.mu as for an
//     in-process job; a cancel that wins aborts the job (outputs queued)
//     before it returns.
//
// What a compactor cannot do (it has no catalog): compactions that route
// keys to time windows or drop keys past a TTL need the tables' time
// decoders, and drop-only compactions need no merge; the engine runs
// those itself.

// Task states.
const (
	taskQueued  = "queued"
	taskClaimed = "claimed"
	taskDone    = "done"
	taskFailed  = "failed"
)

// compactionTaskMigration creates the task table (storage migration 5).
const compactionTaskMigration = `CREATE TABLE storage_compaction_tasks (job_id BIGINT PRIMARY KEY, plan {{BLOB}} NOT NULL,
	state TEXT NOT NULL, claimed_by TEXT NOT NULL, attempt BIGINT NOT NULL, lease_ms BIGINT NOT NULL,
	result {{BLOB}}, created_ms BIGINT NOT NULL)`

// taskPlan is what a compactor needs to run a job: its inputs (newest
// data first), the tables live when it was planned, and the merge's
// parameters.
type taskPlan struct {
	outLevel       int
	bottommost     bool
	horizon        uint64
	targetFileSize int64
	files          []LevelSST
	cuts           [][]byte
	live           []TableID
}

const taskPlanFormat = 1

func encodeTaskPlan(p *taskPlan) []byte {
	e := &encoder{}
	e.uvarint(taskPlanFormat)
	e.uvarint(uint64(p.outLevel))
	if p.bottommost {
		e.uvarint(1)
	} else {
		e.uvarint(0)
	}
	e.uvarint(p.horizon)
	e.uvarint(uint64(p.targetFileSize))
	e.uvarint(uint64(len(p.files)))
	for _, f := range p.files {
		e.uvarint(uint64(f.Level))
		e.sst(f.SST)
	}
	e.uvarint(uint64(len(p.cuts)))
	for _, c := range p.cuts {
		e.bytes(c)
	}
	e.tables(p.live)
	return e.b
}

func decodeTaskPlan(b []byte) (*taskPlan, error) {
	d := &decoder{b: b}
	if f := d.uvarint(); d.err == nil && f != taskPlanFormat {
		return nil, fmt.Errorf("storage: compaction task plan format %d: %w", f, ErrCorrupt)
	}
	p := &taskPlan{}
	p.outLevel = int(d.uvarint())
	p.bottommost = d.uvarint() == 1
	p.horizon = d.uvarint()
	p.targetFileSize = int64(d.uvarint())
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		l := int(d.uvarint())
		p.files = append(p.files, LevelSST{Level: l, SST: d.sst(deltaFormatV3)})
	}
	n = d.count()
	for i := 0; i < n && d.err == nil; i++ {
		p.cuts = append(p.cuts, d.bytes())
	}
	p.live = d.tables()
	if d.err != nil {
		return nil, fmt.Errorf("storage: compaction task plan: %w: %w", ErrCorrupt, d.err)
	}
	if p.outLevel < 0 || p.outLevel >= NumLevels {
		return nil, fmt.Errorf("storage: compaction task plan: output level %d: %w", p.outLevel, ErrCorrupt)
	}
	return p, nil
}

func encodeTaskResult(metas []*SSTMeta) []byte {
	e := &encoder{}
	e.uvarint(deltaFormatV3)
	e.uvarint(uint64(len(metas)))
	for _, m := range metas {
		e.sst(m)
	}
	return e.b
}

func decodeTaskResult(b []byte) ([]*SSTMeta, error) {
	d := &decoder{b: b}
	format := d.uvarint()
	n := d.count()
	var out []*SSTMeta
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.sst(format))
	}
	if d.err != nil {
		return nil, fmt.Errorf("storage: compaction task result: %w: %w", ErrCorrupt, d.err)
	}
	return out, nil
}

// offloadable reports whether a compactor process can run the pick: a
// merge that needs no table's time decoder (no window routing, no TTL;
// see the comment at the top).
func (e *Engine) offloadable(p *compactionPick) bool {
	if p.dropOnly || p.route != nil || p.outLevel == WindowLevel {
		return false
	}
	decoders := e.timeOfs()
	for _, f := range p.files {
		for _, t := range f.Tables {
			if _, ok := decoders[t]; ok {
				return false
			}
		}
	}
	return true
}

// createTask writes the job record and its task row in one transaction
// (the record is durable before any output, I1(b)).
func (e *Engine) createTask(ctx context.Context, p *compactionPick, v *Version, reserve int, horizon uint64) (*jobRecord, error) {
	plan := &taskPlan{outLevel: p.outLevel, bottommost: p.bottommost, horizon: horizon,
		targetFileSize: e.opts.TargetFileSize, cuts: p.cuts}
	for i, f := range p.files {
		plan.files = append(plan.files, LevelSST{Level: p.inputs[i].Level, SST: f})
	}
	seen := map[TableID]bool{}
	for _, f := range p.files {
		for _, t := range f.Tables {
			if !seen[t] && v.hasTable(t) {
				seen[t] = true
				plan.live = append(plan.live, t)
			}
		}
	}
	slices.Sort(plan.live)
	var rec *jobRecord
	now := e.opts.Clock()
	err := e.metaTx(ctx, "create-job", func(tx *metastore.Tx) error {
		var err error
		if rec, err = createJob(ctx, tx, jobKindCompaction, JobPlanned, p.inputs, reserve, now); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO storage_compaction_tasks (job_id, plan, state, claimed_by, attempt, lease_ms, result, created_ms)
			VALUES ($1, $2, $3, '', 0, 0, NULL, $4)`, int64(rec.ID), encodeTaskPlan(plan), taskQueued, now.UnixMilli())
		return err
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// taskRow is the engine's view of a task.
type taskRow struct {
	state, claimedBy string
	leaseMS          int64
	result           []byte
	createdMS        int64
}

func loadTask(ctx context.Context, q querier, id uint64, lock string) (*taskRow, error) {
	var t taskRow
	err := q.QueryRow(ctx, `SELECT state, claimed_by, lease_ms, result, created_ms FROM storage_compaction_tasks WHERE job_id = $1`+lock, int64(id)).
		Scan(&t.state, &t.claimedBy, &t.leaseMS, &t.result, &t.createdMS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: read compaction task %d: %w", id, err)
	}
	return &t, nil
}

// forUpdate is the row-lock clause of a SELECT on PostgreSQL (SQLite's
// write transactions hold the database's write lock).
func forUpdate(tx *metastore.Tx, clause string) string {
	if tx.Dialect() == metastore.Postgres {
		return " " + clause
	}
	return ""
}

// errNotReaped: the guard of a reap found the task moved on (handed back
// meanwhile); the engine looks again.
var errNotReaped = errors.New("task moved on")

// awaitRemote is a remote job's life on the engine: poll the task until a
// compactor hands it back, then commit it; abort it when it is cancelled,
// when its claim's lease lapses, when the compactor reports a failure, or
// when nobody claims it for half the grace period (its record would soon
// be too old for the commit fence).
func (e *Engine) awaitRemote(ctx context.Context, j *CompactionJob, p *compactionPick, horizon uint64) (bool, error) {
	abort := func(cause error) (bool, error) {
		if errors.Is(cause, ErrSimulatedCrash) || e.crashed.Load() {
			return false, cause
		}
		if err := e.abortJob(context.Background(), j.ID, nil); err != nil {
			return false, fmt.Errorf("compaction %d: %w (%w: %v)", j.ID, cause, ErrAbortDeferred, err)
		}
		return false, fmt.Errorf("compaction %d: %w", j.ID, cause)
	}
	// reap aborts the job if the task is still as seen (guard, checked
	// under the row lock in the abort's own transaction).
	reap := func(cause error, guard func(t *taskRow) bool) (bool, error, bool) {
		err := e.abortJobIf(context.Background(), j.ID, nil, func(ctx context.Context, tx *metastore.Tx) error {
			t, err := loadTask(ctx, tx, j.ID, forUpdate(tx, "FOR UPDATE"))
			if err != nil {
				return err
			}
			if t != nil && !guard(t) {
				return errNotReaped
			}
			return nil
		})
		if errors.Is(err, errNotReaped) {
			return false, nil, false
		}
		if err != nil {
			return false, fmt.Errorf("compaction %d: %w (%w: %v)", j.ID, cause, ErrAbortDeferred, err), true
		}
		return false, fmt.Errorf("compaction %d: %w", j.ID, cause), true
	}
	poll := e.opts.RemotePoll
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return abort(errCancelled)
		case <-t.C:
		}
		task, err := loadTask(ctx, e.meta, j.ID, "")
		if err != nil {
			if ctx.Err() != nil {
				return abort(errCancelled)
			}
			e.log.Warn("storage: reading a compaction task failed; retrying", "job", j.ID, "err", err)
			continue
		}
		now := e.opts.Clock().UnixMilli()
		switch {
		case task == nil:
			// Only an abort deletes a task before its commit.
			return abort(errors.New("its task row is gone"))
		case task.state == taskQueued && now-task.createdMS > e.opts.GCGrace.Milliseconds()/2:
			if ok, err, done := reap(errors.New("no compactor claimed it"), func(t *taskRow) bool { return t.state == taskQueued }); done {
				return ok, err
			}
		case task.state == taskClaimed && task.leaseMS < now:
			cause := fmt.Errorf("the lease of its claim by compactor %s lapsed", task.claimedBy)
			if ok, err, done := reap(cause, func(t *taskRow) bool {
				return t.state == taskClaimed && t.leaseMS < e.opts.Clock().UnixMilli()
			}); done {
				return ok, err
			}
		case task.state == taskFailed:
			return abort(fmt.Errorf("compactor %s failed: %s", task.claimedBy, task.result))
		case task.state == taskDone:
			metas, err := decodeTaskResult(task.result)
			if err != nil {
				return abort(err)
			}
			j.mu.Lock()
			j.executedBy = task.claimedBy
			if j.cancelled {
				j.mu.Unlock()
				return abort(errCancelled)
			}
			j.commitStarted = true // I2: commit-start, linearised with cancel
			j.mu.Unlock()
			outs := map[uint64]bool{}
			for _, m := range metas {
				outs[m.ID] = true
			}
			return e.commitCompaction(ctx, j, p, horizon, metas, nil, abort, func(tx *metastore.Tx) error {
				// The record's ids the compactor did not use (it may
				// have reserved more) are closed out; the task goes
				// with the delta that commits its result.
				rec, err := loadJob(ctx, tx, j.ID)
				if err != nil {
					return err
				}
				if rec == nil {
					return fmt.Errorf("storage: job %d: record missing", j.ID)
				}
				var unused []uint64
				for _, o := range rec.Outputs {
					if !outs[o] {
						unused = append(unused, o)
					}
				}
				for id := range outs {
					if !slices.Contains(rec.Outputs, id) {
						return fmt.Errorf("%w: compactor %s handed back %s, not an output of job %d", errFenced, task.claimedBy, objectKey(id), j.ID)
					}
				}
				if err := queueForDeletion(ctx, tx, unused, e.opts.Clock()); err != nil {
					return err
				}
				_, err = tx.Exec(ctx, `DELETE FROM storage_compaction_tasks WHERE job_id = $1`, int64(j.ID))
				return err
			})
		}
	}
}

// CompactorOptions configure a Compactor.
type CompactorOptions struct {
	Store objstore.Store
	Meta  *metastore.DB
	// Node names this compactor in its claims ("node 3").
	Node string
	// Lease is how long a claim lives without renewal (renewed every
	// third of it); the engine aborts a job whose claim lapsed (default
	// 10 s).
	Lease time.Duration
	// Poll is how often an idle compactor looks for a task (default 1 s).
	Poll            time.Duration
	BlockCacheBytes int64
	Clock           func() time.Time
	// Hooks.Compaction is called at the merge's pause points, as in the
	// engine (the compactor hands back after HookAfterOutputsBeforeCommit).
	Hooks  *Hooks
	Logger *slog.Logger
}

// Compactor runs compaction tasks claimed from the metastore (a
// `--role compactor` process). It never writes the version; see the
// comment at the top of this file.
type Compactor struct {
	opts CompactorOptions
	mu   sync.Mutex // one task at a time
	e    *Engine    // a shell: table cache, merge, uploads; no version
}

// NewCompactor prepares a compactor on the cluster's stores.
func NewCompactor(ctx context.Context, opts CompactorOptions) (*Compactor, error) {
	if opts.Store == nil || opts.Meta == nil {
		return nil, errors.New("storage: a compactor needs a Store and a Meta")
	}
	if opts.Lease <= 0 {
		opts.Lease = 10 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Node == "" {
		opts.Node = "compactor"
	}
	eo := Options{Store: opts.Store, Meta: opts.Meta, BlockCacheBytes: opts.BlockCacheBytes, Clock: opts.Clock, Hooks: opts.Hooks, Logger: opts.Logger}
	eo.setDefaults()
	opts.Clock, opts.Logger = eo.Clock, eo.Logger
	if err := migrate(ctx, opts.Meta); err != nil {
		return nil, err
	}
	e := &Engine{opts: eo, store: opts.Store, meta: opts.Meta, log: eo.Logger, stop: make(chan struct{})}
	e.cache = newSSTCache(eo.BlockCacheBytes)
	e.tc = newTableCache(e.store, e.meta, e.cache)
	return &Compactor{opts: opts, e: e}, nil
}

// Close releases the caches.
func (c *Compactor) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.e.tc.close()
	c.e.cache.close()
}

// Run claims and runs tasks until ctx ends.
func (c *Compactor) Run(ctx context.Context) {
	for ctx.Err() == nil {
		ran, err := c.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			c.opts.Logger.Warn("storage: compaction task", "err", err)
		}
		if ran {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.opts.Poll):
		}
	}
}

// ErrClaimLost: the engine aborted the job (the claim's lease lapsed, or
// the engine restarted) before the compactor handed it back.
var ErrClaimLost = errors.New("the compaction task's claim was lost")

// claim is one claimed task.
type claim struct {
	job     *jobRecord
	plan    *taskPlan
	attempt int64
}

// check fails unless the task is still claimed by this attempt (run in
// the transaction of each compactor write, I1/I2).
func (c *Compactor) check(ctx context.Context, tx *metastore.Tx, cl *claim) error {
	var id int64
	err := tx.QueryRow(ctx, `SELECT job_id FROM storage_compaction_tasks WHERE job_id = $1 AND state = $2 AND claimed_by = $3 AND attempt = $4`+forUpdate(tx, "FOR UPDATE"),
		int64(cl.job.ID), taskClaimed, c.opts.Node, cl.attempt).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("job %d: %w", cl.job.ID, ErrClaimLost)
	}
	return err
}

// claimOne takes the oldest queued task (PostgreSQL: FOR UPDATE SKIP
// LOCKED, so compactors claiming at once take different tasks; SQLite:
// the write transaction is exclusive) and marks its job running.
func (c *Compactor) claimOne(ctx context.Context) (*claim, error) {
	var cl *claim
	now := c.opts.Clock()
	err := c.e.metaTx(ctx, "claim-task", func(tx *metastore.Tx) error {
		cl = nil
		var id, attempt int64
		var plan []byte
		err := tx.QueryRow(ctx, `SELECT job_id, plan, attempt FROM storage_compaction_tasks WHERE state = $1 ORDER BY job_id LIMIT 1`+forUpdate(tx, "FOR UPDATE SKIP LOCKED"), taskQueued).
			Scan(&id, &plan, &attempt)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		p, err := decodeTaskPlan(plan)
		if err != nil {
			return err
		}
		attempt++
		if _, err := tx.Exec(ctx, `UPDATE storage_compaction_tasks SET state = $1, claimed_by = $2, attempt = $3, lease_ms = $4 WHERE job_id = $5`,
			taskClaimed, c.opts.Node, attempt, now.Add(c.opts.Lease).UnixMilli(), id); err != nil {
			return err
		}
		if err := setJobState(ctx, tx, uint64(id), []string{JobPlanned}, JobRunning, now); err != nil {
			return err
		}
		rec, err := loadJob(ctx, tx, uint64(id))
		if err != nil {
			return err
		}
		cl = &claim{job: rec, plan: p, attempt: attempt}
		return nil
	})
	return cl, err
}

// renew extends the claim's lease and the job record's renewal time (the
// commit fence measures a job's age from it).
func (c *Compactor) renew(ctx context.Context, cl *claim) error {
	now := c.opts.Clock()
	return c.e.metaTx(ctx, "renew-task", func(tx *metastore.Tx) error {
		if err := c.check(ctx, tx, cl); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE storage_compaction_tasks SET lease_ms = $1 WHERE job_id = $2`, now.Add(c.opts.Lease).UnixMilli(), int64(cl.job.ID)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE storage_jobs SET updated_ms = $1 WHERE id = $2`, now.UnixMilli(), int64(cl.job.ID))
		return err
	})
}

// RunOnce claims one queued task and runs it: it merges the inputs,
// uploads the outputs under the job's reserved ids and hands the result
// back; the meta leader commits it. It reports whether it claimed a task.
func (c *Compactor) RunOnce(ctx context.Context) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, err := c.claimOne(ctx)
	if err != nil || cl == nil {
		return false, err
	}
	start := time.Now()
	log := c.opts.Logger.With("job", cl.job.ID, "node", c.opts.Node)
	log.Info("compaction task claimed", "inputs", len(cl.plan.files), "output_level", cl.plan.outLevel, "attempt", cl.attempt)
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(c.opts.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-jctx.Done():
				return
			case <-t.C:
			}
			if err := c.renew(jctx, cl); err != nil {
				if errors.Is(err, ErrClaimLost) || errors.Is(err, ErrSimulatedCrash) {
					cancel(err)
					return
				}
				log.Warn("renewing a compaction claim failed; retrying", "err", err)
			}
		}
	}()
	err = c.run(jctx, cl)
	cancel(nil)
	<-renewed
	if errors.Is(err, ErrSimulatedCrash) {
		return true, err
	}
	if err != nil {
		log.Warn("compaction task failed", "err", err, "duration_seconds", time.Since(start).Seconds())
	} else {
		log.Info("compaction task handed back", "duration_seconds", time.Since(start).Seconds())
	}
	return true, err
}

// run merges and hands back (or reports a failure).
func (c *Compactor) run(ctx context.Context, cl *claim) error {
	e := c.e
	e.opts.TargetFileSize = cl.plan.targetFileSize
	if e.opts.TargetFileSize <= 0 {
		e.opts.TargetFileSize = 32 << 20
	}
	j := &CompactionJob{ID: cl.job.ID, Level: cl.plan.outLevel, e: e, started: time.Now()}
	files := make([]*SSTMeta, len(cl.plan.files))
	for i, f := range cl.plan.files {
		j.Inputs = append(j.Inputs, LevelFile{Level: f.Level, ID: f.SST.ID})
		files[i] = f.SST
	}
	// The inputs leave the version with this job (or are merged by a
	// later one): a long-running compactor keeps no reader of them.
	defer func() {
		for _, f := range files {
			e.tc.evict(f.ID)
		}
	}()
	live := map[TableID]bool{}
	for _, t := range cl.plan.live {
		live[t] = true
	}
	w := &outputWriter{e: e, ctx: ctx, job: cl.job, claim: func(ctx context.Context, tx *metastore.Tx) error { return c.check(ctx, tx, cl) },
		before: func(n int) error {
			if n == 0 {
				return e.compactionHook(HookBeforeFirstOutput, j)
			}
			return e.compactionHook(HookBetweenOutputs, j)
		}}
	spec := mergeSpec{files: files, live: func(t TableID) bool { return live[t] }, horizon: cl.plan.horizon,
		bottommost: cl.plan.bottommost, cuts: cl.plan.cuts, outLevel: cl.plan.outLevel}
	err := e.mergeInputs(ctx, j, spec, w, func() bool { return ctx.Err() != nil })
	if err == nil {
		err = e.compactionHook(HookAfterOutputsBeforeCommit, j)
	}
	if errors.Is(err, ErrSimulatedCrash) {
		return err // stop dead: the engine reaps the claim when its lease lapses
	}
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrClaimLost) {
		err = cause
	}
	if err != nil {
		if errors.Is(err, ErrClaimLost) {
			c.discard(w.metas)
			return err
		}
		// Hand the failure back: the engine aborts the job (its outputs
		// go to the deletion queue with it).
		cause := err
		ferr := e.metaTx(context.Background(), "fail-task", func(tx *metastore.Tx) error {
			bg := context.Background()
			if err := c.check(bg, tx, cl); err != nil {
				return err
			}
			_, err := tx.Exec(bg, `UPDATE storage_compaction_tasks SET state = $1, result = $2 WHERE job_id = $3`, taskFailed, []byte(cause.Error()), int64(cl.job.ID))
			return err
		})
		if ferr != nil {
			c.opts.Logger.Warn("storage: reporting a failed compaction task", "job", cl.job.ID, "err", ferr)
		}
		return err
	}
	var outBytes uint64
	for _, m := range w.metas {
		outBytes += m.Size
	}
	err = e.metaTx(context.Background(), "hand-back-task", func(tx *metastore.Tx) error {
		if err := c.check(context.Background(), tx, cl); err != nil {
			return err
		}
		_, err := tx.Exec(context.Background(), `UPDATE storage_compaction_tasks SET state = $1, result = $2 WHERE job_id = $3`,
			taskDone, encodeTaskResult(w.metas), int64(cl.job.ID))
		return err
	})
	if errors.Is(err, ErrClaimLost) {
		c.discard(w.metas)
		return err
	}
	if err != nil {
		// Unknown outcome: the outputs stay owned by the live record; the
		// engine commits a hand-back that landed, or aborts the job when
		// the lease lapses.
		return fmt.Errorf("storage: hand back compaction %d: %w", cl.job.ID, err)
	}
	obs.Event(c.opts.Logger, slog.LevelInfo, obs.EventCompaction, slog.Uint64("job", cl.job.ID), slog.String("result", "handed back"),
		slog.String("node", c.opts.Node), slog.Int("output_level", cl.plan.outLevel), slog.Int("inputs", len(files)),
		slog.Int("outputs", len(w.metas)), slog.Uint64("output_bytes", outBytes), obs.Seconds("duration_seconds", time.Since(j.started)))
	return nil
}

// discard deletes the outputs of a job whose claim was lost: the engine
// aborted it, so nothing references them and nothing ever will (its
// record is not live, the commit fence refuses them). Best effort: what
// is left is on the deletion queue or, if written after the abort, for
// full GC (I1).
func (c *Compactor) discard(metas []*SSTMeta) {
	for _, m := range metas {
		if err := c.e.store.Delete(context.Background(), objectKey(m.ID)); err != nil {
			c.opts.Logger.Warn("storage: deleting an output of a lost compaction claim", "object", objectKey(m.ID), "err", err)
		}
	}
}
