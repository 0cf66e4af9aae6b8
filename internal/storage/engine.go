package storage

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// ErrTableDropped is returned (wrapped, as "table N has been dropped") by
// every read of a table that is not registered in the version (I4).
var ErrTableDropped = errors.New("has been dropped")

// ErrEpochTooOld is returned for a read below the version's safe epoch:
// compaction may already have removed the versions it needs.
var ErrEpochTooOld = errors.New("epoch is below the retention horizon")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("storage engine is closed")

// ErrSimulatedCrash, returned by a test hook, makes the engine stop at that
// point as if the process died: no cleanup, no further metastore writes.
var ErrSimulatedCrash = errors.New("simulated crash")

func tableDropped(t TableID) error { return fmt.Errorf("table %d %w", t, ErrTableDropped) }

// Options configure an Engine. Zero values take the defaults noted.
type Options struct {
	Store objstore.Store
	Meta  *metastore.DB
	// BlockCacheBytes bounds the SST block cache (default 64 MiB).
	BlockCacheBytes int64
	// WriteBufferBytes bounds ingested-but-uncommitted data held in memory;
	// beyond it data is spilled to SSTs owned by upload job records
	// (default 128 MiB).
	WriteBufferBytes int64
	Clock            func() time.Time
	Hooks            *Hooks
	Logger           *slog.Logger

	// TargetFileSize is the SST size at which outputs are cut (default 32 MiB).
	TargetFileSize int64
	// InlineMaxBytes: a commit whose data encodes to at most this many
	// bytes stores its SST in the metastore, in the transaction that
	// commits the version, instead of the object store (default 32 KiB;
	// negative: never). One durable write per small commit instead of a
	// PUT followed by the metastore write; compaction moves the data to
	// the object store.
	InlineMaxBytes int64
	// L0CompactionTrigger: L0 file count that triggers an L0->L1 compaction
	// (default 4).
	L0CompactionTrigger int
	// LevelBaseBytes is L1's target size; each deeper level is
	// LevelMultiplier times larger (defaults 128 MiB, 10).
	LevelBaseBytes  int64
	LevelMultiplier int
	// MaxConcurrentCompactions bounds background compactions (default 1).
	MaxConcurrentCompactions int
	// DisableAutoCompaction stops the background picker and the background
	// opening of compaction outputs (warmOutputs); Compact still works.
	// Tests that inject faults deterministically set it.
	DisableAutoCompaction bool
	// warmAlways (tests) warms compaction outputs even with
	// DisableAutoCompaction, so that a test can watch the warming alone.
	warmAlways bool
	// CheckpointEvery: a full version snapshot is written every N deltas
	// (default 64).
	CheckpointEvery int
	// GCGrace is the full-listing GC grace period and the commit-side fence
	// age limit (default 1 h).
	GCGrace time.Duration
	// GCInterval runs the deletion-queue fast path periodically (default
	// 30 s; negative: only when RunGC is called).
	GCInterval time.Duration
	// RemoteCompaction hands the compactions a compactor process can run
	// to compactor processes through task rows in the metastore, and
	// commits their results (compactor.go); the others still run here.
	RemoteCompaction bool
	// RemotePoll is how often a remote compaction's task is looked at
	// (default 200 ms).
	RemotePoll time.Duration
}

// HookPoint names a pause point of a compaction job.
type HookPoint string

const (
	HookBeforeFirstOutput        HookPoint = "before-first-output"
	HookBetweenOutputs           HookPoint = "between-outputs"
	HookAfterOutputsBeforeCommit HookPoint = "after-outputs-before-commit"
	HookDuringCommitWrite        HookPoint = "during-commit-write"
	HookAfterCommit              HookPoint = "after-commit"
)

// Hooks are test seams. Each may be nil.
type Hooks struct {
	// Compaction is called at each named point of a compaction job. A
	// non-nil error is injected as a failure at that point (ErrSimulatedCrash:
	// the job stops dead, leaving its durable records as they are).
	Compaction func(p HookPoint, job *CompactionJob) error
	// MetaWrite is called before each metastore write transaction (after
	// false) and after it committed (after true), with the operation name
	// ("create-job", "commit-delta", "abort-job", ...). An error before
	// fails the write (nothing persisted); an error after makes a write that
	// did land look failed: an ambiguous outcome (I2).
	MetaWrite func(op string, after bool) error
}

// ReadOptions tune a read.
type ReadOptions struct {
	// CommittedOnly hides ingested-but-uncommitted epochs.
	CommittedOnly bool
	// Reverse makes Iter iterate from upper down to lower.
	Reverse bool
	// Time, when set, skips the SSTs whose time range for the table is
	// known (SSTMeta.Times) and outside it: a scan filtered on a
	// time-series table's time index reads only the SSTs that may hold
	// matching rows. Rows of the SSTs read are all returned (the caller
	// still filters), and uncommitted data is always read.
	Time *TimeRange
}

// Engine is Runnel's LSM storage engine. See doc.go.
type Engine struct {
	opts  Options
	store objstore.Store
	meta  *metastore.DB
	log   *slog.Logger
	cache *sstCache
	tc    *tableCache

	// mu guards the fields below. Reads take it shared only to pin.
	mu   sync.RWMutex
	cur  *Version
	live map[*Version]struct{} // pinned non-current versions
	// buf: ingested-but-uncommitted data in arrival order. Items are
	// immutable; the slice is replaced, never modified in place, so readers
	// may use a copy of the header without the lock.
	buf      []*bufItem
	bufBytes int64
	dropped  map[TableID]struct{} // unregistered since Open (I4, fast check)
	snaps    map[*Snapshot]struct{}
	closed   bool
	// needReload: an ambiguous version write happened; the in-memory
	// version may be behind the metastore until reloaded (I2).
	needReload bool
	committing uint64 // epoch of the Commit in progress (Ingest refuses <= it)
	// writeFence: Ingest refuses epochs below it (FenceWritesBelow).
	writeFence uint64
	// diverged is set (for good) when the metastore's version head is not
	// the version this engine last committed (see ErrMetastoreDiverged):
	// every later metastore write and GC pass is refused with it. Atomic:
	// metaTx reads it under any lock.
	diverged       atomic.Pointer[error]
	ambiguousDelta *VersionDelta
	// orphanJobs: jobs whose abort could not be recorded yet; retried by GC.
	orphanJobs map[uint64]struct{}
	// spare is an upload job record made durable by the previous commit's
	// own metastore transaction, for the next commit's upload: the record
	// is still durable before the first PUT (I1(b)), but a commit costs
	// one metastore transaction instead of two. Guarded by writeMu.
	spare *jobRecord
	// inlineIDs are object ids allocated (durably, in an earlier commit's
	// transaction) for inline SSTs; writeMu guards them.
	inlineIDs []uint64
	// reserving tracks reserveSpare's goroutines (Close waits for them
	// with writeMu held, the lock they are started under).
	reserving sync.WaitGroup
	// tableGroup assigns tables to isolation groups (SetTableGroup).
	tableGroup func(TableID) uint64
	// ret holds the tables' retentions (retention.go).
	ret retentions
	// reads counts scans and the SSTs they opened or pruned (ReadStats).
	reads readCounters
	// leases: when each spilled upload job's record was last renewed.
	leases map[uint64]time.Time
	// unregisterHook is a test seam (testhooks.go).
	unregisterHook atomic.Pointer[func(ids []TableID)]
	// metaWriteHook is Hooks.MetaWrite installed on a running engine
	// (testhooks.go), for tests of a whole server.
	metaWriteHook atomic.Pointer[func(op string, after bool) error]

	// writeMu serialises every metastore write of a version delta, spills
	// and commits (so the delta is computed from the version it follows).
	writeMu sync.Mutex

	compactMu   sync.Mutex
	compactions map[uint64]*CompactionJob
	compacting  map[uint64]bool // input SST ids of running compactions
	compactSem  chan struct{}
	compactKick chan struct{}

	bg      sync.WaitGroup
	stop    chan struct{}
	crashed atomic.Bool
}

// bufItem is one piece of uncommitted data: an in-memory run, or an SST
// spilled early from the write buffer (one epoch per spilled SST).
type bufItem struct {
	epoch uint64
	table TableID // runs only
	run   *run
	sst   *SSTMeta
	job   uint64 // upload job owning a spilled SST
}

func (o *Options) setDefaults() {
	if o.BlockCacheBytes <= 0 {
		o.BlockCacheBytes = 64 << 20
	}
	if o.WriteBufferBytes <= 0 {
		o.WriteBufferBytes = 128 << 20
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Hooks == nil {
		o.Hooks = &Hooks{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = 32 << 20
	}
	if o.InlineMaxBytes == 0 {
		o.InlineMaxBytes = 32 << 10
	}
	if o.L0CompactionTrigger <= 0 {
		o.L0CompactionTrigger = 4
	}
	if o.LevelBaseBytes <= 0 {
		o.LevelBaseBytes = 128 << 20
	}
	if o.LevelMultiplier <= 1 {
		o.LevelMultiplier = 10
	}
	if o.MaxConcurrentCompactions <= 0 {
		o.MaxConcurrentCompactions = 1
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 64
	}
	if o.GCGrace <= 0 {
		o.GCGrace = time.Hour
	}
	if o.GCInterval == 0 {
		o.GCInterval = 30 * time.Second
	}
	if o.RemotePoll <= 0 {
		o.RemotePoll = 200 * time.Millisecond
	}
}

// Open loads the committed version. Jobs left by a previous process are
// resolved: a job whose delta is in the version is committed; every other
// live job is aborted and its outputs go to the deletion queue. Nothing
// committed is discarded. One Engine per metastore at a time.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Store == nil || opts.Meta == nil {
		return nil, errors.New("storage: Open needs a Store and a Meta")
	}
	opts.setDefaults()
	if err := migrate(ctx, opts.Meta); err != nil {
		return nil, err
	}
	if err := opts.Meta.Prepare(ctx, commitStatements...); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	e := &Engine{
		opts:        opts,
		store:       opts.Store,
		meta:        opts.Meta,
		log:         opts.Logger,
		live:        map[*Version]struct{}{},
		dropped:     map[TableID]struct{}{},
		snaps:       map[*Snapshot]struct{}{},
		orphanJobs:  map[uint64]struct{}{},
		leases:      map[uint64]time.Time{},
		compactions: map[uint64]*CompactionJob{},
		compacting:  map[uint64]bool{},
		compactSem:  make(chan struct{}, opts.MaxConcurrentCompactions),
		compactKick: make(chan struct{}, 1),
		stop:        make(chan struct{}),
	}
	v, err := loadVersion(ctx, e.meta)
	if err != nil {
		return nil, err
	}
	e.cur = v
	e.cache = newSSTCache(opts.BlockCacheBytes)
	e.tc = newTableCache(e.store, e.meta, e.cache)
	if err := e.recoverJobs(ctx); err != nil {
		e.cache.close()
		return nil, err
	}
	if !opts.DisableAutoCompaction {
		e.bg.Add(1)
		go e.compactionLoop()
	}
	if opts.GCInterval > 0 {
		e.bg.Add(1)
		go e.gcLoop()
	}
	return e, nil
}

// recoverJobs aborts every live job left by a previous process (I1, I2:
// the version was re-read first, so a job still live did not commit:
// commit marks the job committed in the same transaction as the delta).
func (e *Engine) recoverJobs(ctx context.Context) error {
	jobs, err := loadJobs(ctx, e.meta)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if !j.live() {
			continue
		}
		e.log.Info("storage: aborting job left by a previous run", "job", j.ID, "kind", j.Kind, "state", j.State)
		if err := e.abortJob(ctx, j.ID, j.Outputs); err != nil {
			return err
		}
	}
	return nil
}

// metaTx runs a metastore write transaction with the fault hooks around it.
func (e *Engine) metaTx(ctx context.Context, op string, fn func(tx *metastore.Tx) error) error {
	if e.crashed.Load() {
		return ErrSimulatedCrash
	}
	if err := e.Diverged(); err != nil {
		return err
	}
	if err := e.callMetaWriteHook(op, false); err != nil {
		return fmt.Errorf("storage: %s: %w", op, err)
	}
	if err := e.meta.Tx(ctx, fn); err != nil {
		return fmt.Errorf("storage: %s: %w", op, err)
	}
	if err := e.callMetaWriteHook(op, true); err != nil {
		return fmt.Errorf("storage: %s: %w: %w", op, errInjectedAmbiguity, err)
	}
	return nil
}

// callMetaWriteHook runs the MetaWrite hooks (Options.Hooks, then the one
// SetMetaWriteHook installed).
func (e *Engine) callMetaWriteHook(op string, after bool) error {
	if h := e.opts.Hooks.MetaWrite; h != nil {
		if err := h(op, after); err != nil {
			return err
		}
	}
	if h := e.metaWriteHook.Load(); h != nil {
		return (*h)(op, after)
	}
	return nil
}

// abortJob moves a job's outputs to the deletion queue and marks it
// aborted, in one transaction. Outputs referenced by the version are never
// queued (defence in depth).
func (e *Engine) abortJob(ctx context.Context, id uint64, outputs []uint64) error {
	return e.abortJobIf(ctx, id, outputs, nil)
}

// abortJobIf is abortJob when guard (if not nil), run first in the
// abort's transaction, passes; its error is returned as is. A job's
// compaction task row (compactor.go) goes in the same transaction: a
// compactor still working on it finds its claim gone (I1/I2).
func (e *Engine) abortJobIf(ctx context.Context, id uint64, outputs []uint64, guard func(ctx context.Context, tx *metastore.Tx) error) error {
	e.mu.RLock()
	refs := e.cur.objects()
	e.mu.RUnlock()
	var q []uint64
	for _, o := range outputs {
		if _, ok := refs[o]; !ok {
			q = append(q, o)
		}
	}
	now := e.opts.Clock()
	err := e.metaTx(ctx, "abort-job", func(tx *metastore.Tx) error {
		if guard != nil {
			if err := guard(ctx, tx); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM storage_compaction_tasks WHERE job_id = $1`, int64(id)); err != nil {
			return err
		}
		j, err := loadJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if j == nil || !j.live() {
			return nil
		}
		// Outputs reserved after the caller's snapshot of the record.
		for _, o := range j.Outputs {
			if _, ok := refs[o]; !ok && !slices.Contains(q, o) {
				q = append(q, o)
			}
		}
		if err := queueForDeletion(ctx, tx, q, now); err != nil {
			return err
		}
		return setJobState(ctx, tx, id, []string{JobPlanned, JobRunning, JobCommitting}, JobAborted, now)
	})
	if errors.Is(err, errNotReaped) {
		return err
	}
	if err != nil {
		e.mu.Lock()
		e.orphanJobs[id] = struct{}{}
		e.mu.Unlock()
		return err
	}
	e.mu.Lock()
	delete(e.orphanJobs, id)
	e.mu.Unlock()
	return nil
}

// CommittedEpoch is the newest durable, visible epoch.
func (e *Engine) CommittedEpoch() uint64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.cur.CommittedEpoch
}

// Ingest hands over one table's writes for one epoch. kvs may be unsorted;
// later writes to the same key win. The data is visible to uncommitted
// reads at once and becomes durable at Commit. Ingest copies kvs.
func (e *Engine) Ingest(epoch uint64, table TableID, kvs []KV) error {
	return e.IngestContext(context.Background(), epoch, table, kvs)
}

// IngestContext is Ingest for a caller that can be cancelled (an actor):
// when the buffer is over its bound, the spill it runs uploads under ctx,
// so an aborted actor does not hold the engine's write lock — and the
// recovery waiting for it — while an upload hangs (I5). A cancelled spill
// leaves the data buffered, as a failed one does.
func (e *Engine) IngestContext(ctx context.Context, epoch uint64, table TableID, kvs []KV) error {
	if len(kvs) == 0 {
		return nil
	}
	r := newRun(epoch, table, kvs)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	if epoch <= max(e.cur.CommittedEpoch, e.committing) {
		e.mu.Unlock()
		return fmt.Errorf("storage: ingest into table %d at epoch %d: epoch %d is already committed or committing", table, epoch, max(e.cur.CommittedEpoch, e.committing))
	}
	if epoch < e.writeFence {
		e.mu.Unlock()
		return fmt.Errorf("storage: ingest into table %d at epoch %d: %w (writes start at epoch %d)", table, epoch, ErrWriteFenced, e.writeFence)
	}
	if !e.cur.hasTable(table) {
		e.mu.Unlock()
		return tableDropped(table)
	}
	e.buf = append(e.buf, &bufItem{epoch: epoch, table: table, run: r})
	e.bufBytes += r.bytes
	over := e.bufBytes > e.opts.WriteBufferBytes
	e.mu.Unlock()
	if over {
		return e.spill(ctx)
	}
	return nil
}

// ErrWriteFenced marks a write of an actor generation that a recovery
// abandoned (see FenceWritesBelow).
var ErrWriteFenced = errors.New("fenced: written by actors a recovery abandoned")

// FenceWritesBelow makes Ingest refuse every epoch below epoch from now on.
// Recovery calls it, before it discards the uncommitted writes, with the
// first epoch of the actor generation it is about to build: every epoch an
// older generation wrote is below it, so an actor that did not exit when
// aborted (abandoned, stream.StuckActorsError) can never add to the
// buffer once it is cleared (I3: nothing the recovery did not stop
// touches state; I7: the views are their queries at each committed
// epoch). Ingest checks the fence and appends under one lock, so a write
// lands before the discard (and is discarded) or is refused.
func (e *Engine) FenceWritesBelow(epoch uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writeFence = max(e.writeFence, epoch)
}

// spill writes every buffered run to SSTs (one set per epoch) owned by an
// upload job record written before the PUT (I1(b)). The data stays
// invisible to committed reads until Commit.
func (e *Engine) spill(ctx context.Context) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.mu.RLock()
	if e.bufBytes <= e.opts.WriteBufferBytes {
		e.mu.RUnlock()
		return nil
	}
	// One set of SSTs per (epoch, table group): a group's uncommitted data
	// can then be discarded alone (DiscardUncommittedTables).
	type spillKey struct{ epoch, group uint64 }
	byKey := map[spillKey][]*bufItem{}
	var keys []spillKey
	for _, it := range e.buf {
		if it.run == nil || !e.cur.hasTable(it.table) {
			continue
		}
		k := spillKey{it.epoch, e.groupOf(it.table)}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], it)
	}
	e.mu.RUnlock()
	slices.SortFunc(keys, func(a, b spillKey) int {
		if a.epoch != b.epoch {
			return cmp.Compare(a.epoch, b.epoch)
		}
		return cmp.Compare(a.group, b.group)
	})
	for _, k := range keys {
		ep, items := k.epoch, byKey[k]
		ssts, jobID, err := e.uploadRuns(ctx, items, false)
		if err != nil {
			return fmt.Errorf("storage: spill epoch %d: %w", ep, err)
		}
		// Replace the runs by the spilled SSTs at the position of the first
		// run; the SSTs hold exactly those runs' data.
		e.mu.Lock()
		if jobID != 0 {
			e.leases[jobID] = e.opts.Clock()
		}
		nb := make([]*bufItem, 0, len(e.buf))
		spilled := map[*bufItem]bool{}
		for _, it := range items {
			spilled[it] = true
		}
		inserted := false
		for _, it := range e.buf {
			if spilled[it] {
				e.bufBytes -= it.run.bytes
				if !inserted {
					inserted = true
					for _, s := range ssts {
						nb = append(nb, &bufItem{epoch: ep, sst: s, job: jobID})
					}
				}
				continue
			}
			nb = append(nb, it)
		}
		e.buf = nb
		e.mu.Unlock()
	}
	return nil
}

// uploadRuns merges runs into SSTs uploaded under one new upload job whose
// record is durable before the first PUT (I1(b)). Runs are given oldest
// first. Memory: one SST image at a time.
//
// With useSpare the job is the spare record the previous commit wrote,
// when there is one young enough for the commit fence.
func (e *Engine) uploadRuns(ctx context.Context, items []*bufItem, useSpare bool) ([]*SSTMeta, uint64, error) {
	srcs := make([]source, 0, len(items))
	var est int64
	for i := len(items) - 1; i >= 0; i-- { // newest first = highest priority
		srcs = append(srcs, newRunSource(items[i].run, nil, nil, false))
		est += int64(len(items[i].run.arena)) + int64(len(items[i].run.ents))*(tableIDLen+suffixLen+1)
	}
	var w *outputWriter
	if useSpare {
		if j := e.takeSpare(ctx); j != nil {
			w = &outputWriter{e: e, ctx: ctx, job: j}
		}
	}
	if w == nil {
		var err error
		if w, err = e.newOutputWriter(ctx, jobKindUpload, nil, int(est/e.opts.TargetFileSize)+1, nil); err != nil {
			return nil, 0, err
		}
	}
	m := newMergeIter(srcs, false)
	defer m.close()
	if err := e.buildSSTs(ctx, m, nil, nil, w.emit); err != nil {
		if !errors.Is(err, ErrSimulatedCrash) {
			_ = e.abortJob(ctx, w.job.ID, w.job.Outputs)
		}
		return nil, 0, err
	}
	return w.metas, w.job.ID, nil
}

// inlineSST is an SST of a commit kept in the metastore.
type inlineSST struct {
	meta *SSTMeta
	data []byte
}

// inlineIDBatch is how many inline object ids a commit allocates at once.
const inlineIDBatch = 64

// buildInline builds the commit's runs as inline SSTs, or returns nil
// when they are too large (or inline commits are off, or no id is left:
// the next commit's transaction allocates more). Caller holds writeMu.
func (e *Engine) buildInline(ctx context.Context, items []*bufItem) ([]inlineSST, error) {
	if e.opts.InlineMaxBytes <= 0 || len(e.inlineIDs) == 0 {
		return nil, nil
	}
	var est int64
	srcs := make([]source, 0, len(items))
	for i := len(items) - 1; i >= 0; i-- { // newest first = highest priority
		srcs = append(srcs, newRunSource(items[i].run, nil, nil, false))
		est += int64(len(items[i].run.arena)) + int64(len(items[i].run.ents))*(tableIDLen+suffixLen+1)
	}
	if est > e.opts.InlineMaxBytes {
		return nil, nil
	}
	m := newMergeIter(srcs, false)
	defer m.close()
	var out []inlineSST
	err := e.buildSSTs(ctx, m, nil, nil, func(obj []byte, meta *SSTMeta) error {
		out = append(out, inlineSST{meta: meta, data: bytes.Clone(obj)}) // obj's buffer is a 1 MiB chunk
		return nil
	})
	if err != nil {
		return nil, err
	}
	size := 0
	for _, in := range out {
		size += len(in.data)
	}
	if int64(size) > e.opts.InlineMaxBytes || len(out) > len(e.inlineIDs) {
		return nil, nil // the estimate was low: upload instead
	}
	obs.StorageFlushed(size)
	for i := range out {
		out[i].meta.ID = e.inlineIDs[0]
		out[i].meta.Inline = true
		e.inlineIDs = e.inlineIDs[1:]
	}
	return out, nil
}

// reserveSpare makes the name of the spare job's first output durable in
// the background where the store supports it (objstore.Reserver: a local
// directory), so that the next commit's PUT is one file write and fsync,
// without the directory fsync. The job record is durable already (I1).
// writeMu is held.
func (e *Engine) reserveSpare(j *jobRecord) {
	r, ok := e.store.(objstore.Reserver)
	if !ok || len(j.Outputs) == 0 {
		return
	}
	key := objectKey(j.Outputs[0])
	done := make(chan struct{})
	j.reserved = done
	e.reserving.Add(1)
	go func() {
		defer e.reserving.Done()
		defer close(done)
		if err := e.survive("reserving "+key, func() error { return r.Reserve(context.Background(), key) }); err != nil {
			// The PUT then takes the ordinary path.
			e.log.Debug("storage: reserving the next upload's object failed", "object", key, "err", err)
		}
	}()
}

// takeSpare hands over the spare upload job, or nil when there is none or
// it is too old for the commit fence (it is then aborted). writeMu is held.
func (e *Engine) takeSpare(ctx context.Context) *jobRecord {
	j := e.spare
	e.spare = nil
	if j == nil {
		return nil
	}
	if j.reserved != nil {
		// Its object's reservation has had the time since the last
		// commit; a PUT must not race it.
		<-j.reserved
	}
	if e.opts.Clock().UnixMilli()-j.Updated > e.opts.GCGrace.Milliseconds()/2 {
		if err := e.abortJob(ctx, j.ID, nil); err != nil {
			e.log.Warn("storage: abort of an expired spare upload job deferred", "job", j.ID, "err", err)
		}
		return nil
	}
	return j
}

// outputWriter uploads the SSTs of one job, using the job's reserved ids
// in order and reserving more (in the record, before the PUT) if needed.
type outputWriter struct {
	e     *Engine
	ctx   context.Context
	job   *jobRecord
	used  int
	metas []*SSTMeta
	// windowed[i]: metas[i] goes to the window level (compactions).
	windowed []bool
	before   func(n int) error // called before output n (0-based) is written
	// claim, for a compactor process, fails unless its claim on the job
	// still holds; it runs in the transaction that reserves more ids.
	claim func(ctx context.Context, tx *metastore.Tx) error
}

func (e *Engine) newOutputWriter(ctx context.Context, kind string, inputs []LevelFile, reserve int, before func(int) error) (*outputWriter, error) {
	state := JobRunning
	if kind == jobKindCompaction {
		state = JobPlanned
	}
	var job *jobRecord
	err := e.metaTx(ctx, "create-job", func(tx *metastore.Tx) error {
		var err error
		job, err = createJob(ctx, tx, kind, state, inputs, reserve, e.opts.Clock())
		return err
	})
	if err != nil {
		// Failed or ambiguous: nothing has been PUT; a record that did land
		// names no object and is aborted at the next Open or GC.
		return nil, err
	}
	return &outputWriter{e: e, ctx: ctx, job: job, before: before}, nil
}

func (w *outputWriter) emit(obj []byte, meta *SSTMeta) error {
	if w.before != nil {
		if err := w.before(w.used); err != nil {
			return err
		}
	}
	if w.used == len(w.job.Outputs) {
		var ids []uint64
		err := w.e.metaTx(w.ctx, "extend-job", func(tx *metastore.Tx) error {
			if w.claim != nil {
				if err := w.claim(w.ctx, tx); err != nil {
					return err
				}
			}
			var err error
			ids, err = addJobOutputs(w.ctx, tx, w.job, 4, w.e.opts.Clock())
			return err
		})
		if err != nil {
			return err
		}
		w.job.Outputs = append(w.job.Outputs, ids...)
	}
	meta.ID = w.job.Outputs[w.used]
	w.used++
	if err := w.e.store.Put(w.ctx, objectKey(meta.ID), obj); err != nil {
		return fmt.Errorf("storage: upload %s: %w", objectKey(meta.ID), err)
	}
	if w.job.Kind == jobKindCompaction {
		obs.StorageCompacted(len(obj))
	} else {
		obs.StorageFlushed(len(obj))
	}
	w.metas = append(w.metas, meta)
	return nil
}

// buildSSTs drains a merge of sources (keeping, for each key and epoch,
// only the highest-priority entry; keep decides the rest) into SSTs cut at
// the target size on prefix boundaries, handing each to emit.
//
// cuts (ascending prefixes) force a new SST at the first key at or above
// each: a compaction's outputs never span a file it leaves in place.
func (e *Engine) buildSSTs(ctx context.Context, m *mergeIter, keep func(s source, first bool) (bool, error), cuts [][]byte, emit func([]byte, *SSTMeta) error) error {
	return e.buildSSTsRouted(ctx, m, keep, cuts, nil, func(obj []byte, meta *SSTMeta, _ bool) error { return emit(obj, meta) })
}

// windowKey names one window builder of buildSSTsRouted.
type windowKey struct {
	table TableID
	start int64
}

// buildSSTsRouted is buildSSTs where the keys of the tables in route go
// to SSTs of their own, one table and one time window each (emitted with
// windowed set, for the window level; window.go). Keys arrive sorted, so
// each window's subsequence is sorted too: one builder per window is open
// at a time, each cut at the target size on a prefix boundary (every
// version of a key has the key's time, hence goes to the same builder).
func (e *Engine) buildSSTsRouted(ctx context.Context, m *mergeIter, keep func(s source, first bool) (bool, error), cuts [][]byte, route map[TableID]windowSpec, emit func([]byte, *SSTMeta, bool) error) error {
	var (
		b       *sstBuilder
		key     []byte
		lastT   TableID
		lastR   []byte
		lastE   uint64
		started bool
		n       int
		wbs     map[windowKey]*sstBuilder
		wb      *sstBuilder // the builder of the current key, when routed
		routed  bool        // wb is set for the current key
	)
	defer func() {
		if b != nil { // an error left a builder open: release its writer
			b.abort()
		}
		for _, w := range wbs {
			w.abort()
		}
	}()
	timeOf := e.timeOfs() // SSTMeta.Times of time-series tables (retention.go)
	finish := func(bb *sstBuilder, windowed bool) error {
		if bb.empty() {
			bb.abort()
			return nil
		}
		obj, meta, err := bb.finish()
		if err != nil {
			return err
		}
		return emit(obj, &meta, windowed)
	}
	flush := func() error {
		if b == nil {
			return nil
		}
		bb := b
		b = nil
		return finish(bb, false)
	}
	flushWindow := func(k windowKey) error {
		bb := wbs[k]
		delete(wbs, k)
		return finish(bb, true)
	}
	ok := m.start()
	for ; ok; ok = m.advance() {
		s := m.top()
		sameKey := started && s.table() == lastT && bytes.Equal(s.rest(), lastR)
		if sameKey && s.epoch() == lastE {
			continue // a lower-priority duplicate of the same version
		}
		firstOfKey := !sameKey
		lastT, lastE, started = s.table(), s.epoch(), true
		if firstOfKey {
			lastR = append(lastR[:0], s.rest()...)
		}
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil { // I5: prompt cancellation
				return err
			}
		}
		if keep != nil {
			k, err := keep(s, firstOfKey)
			if err != nil {
				return err
			}
			if !k {
				continue
			}
		}
		if firstOfKey {
			routed = false
		}
		if !routed {
			// The key's first kept version decides its builder; its other
			// versions follow it.
			routed, wb = true, nil
			if spec, ok := route[s.table()]; ok {
				if ts, ok := spec.timeOf(s.rest()); ok {
					k := windowKey{s.table(), spec.window(ts)}
					if w := wbs[k]; w != nil && w.rawBytes >= e.opts.TargetFileSize {
						if err := flushWindow(k); err != nil {
							return err
						}
					}
					if wbs[k] == nil {
						if wbs == nil {
							wbs = map[windowKey]*sstBuilder{}
						}
						w := newSSTBuilder()
						w.timeOf = timeOf
						wbs[k] = w
					}
					wb = wbs[k]
				}
			}
		}
		if wb != nil {
			v, err := s.tagged()
			if err != nil {
				return err
			}
			key = appendSuffix(appendPrefix(key[:0], s.table(), s.rest()), s.epoch())
			if err := wb.add(key, v); err != nil {
				return err
			}
			continue
		}
		if firstOfKey && b != nil && b.rawBytes >= e.opts.TargetFileSize {
			if err := flush(); err != nil {
				return err
			}
		}
		if firstOfKey && len(cuts) > 0 {
			key = appendPrefix(key[:0], s.table(), s.rest())
			for len(cuts) > 0 && bytes.Compare(key, cuts[0]) >= 0 {
				cuts = cuts[1:]
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if b == nil {
			b = newSSTBuilder()
			b.timeOf = timeOf
		}
		v, err := s.tagged()
		if err != nil {
			return err
		}
		key = appendSuffix(appendPrefix(key[:0], s.table(), s.rest()), s.epoch())
		if err := b.add(key, v); err != nil {
			return err
		}
	}
	if m.e != nil {
		return m.e
	}
	if err := flush(); err != nil {
		return err
	}
	ks := make([]windowKey, 0, len(wbs))
	for k := range wbs {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b windowKey) int {
		if a.table != b.table {
			return cmp.Compare(a.table, b.table)
		}
		return cmp.Compare(a.start, b.start)
	})
	for _, k := range ks {
		if err := flushWindow(k); err != nil {
			return err
		}
	}
	return nil
}

// Commit makes every ingested epoch <= epoch durable and visible in one
// version delta: L0 SSTs are uploaded under an upload job, then one
// metastore transaction records the delta and retires the jobs.
func (e *Engine) Commit(ctx context.Context, epoch uint64) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.reloadIfNeeded(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	v := e.cur
	if epoch < v.CommittedEpoch {
		e.mu.Unlock()
		return fmt.Errorf("storage: commit epoch %d: already at %d", epoch, v.CommittedEpoch)
	}
	var runs, spilled []*bufItem
	e.committing = epoch
	defer func() {
		e.mu.Lock()
		e.committing = 0
		e.mu.Unlock()
	}()
	for _, it := range e.buf {
		if it.epoch > epoch {
			continue
		}
		if it.run != nil {
			if v.hasTable(it.table) {
				runs = append(runs, it)
			}
		} else {
			spilled = append(spilled, it)
		}
	}
	e.mu.Unlock()

	d := &VersionDelta{ID: v.ID + 1, CommittedEpoch: epoch, SafeEpoch: v.SafeEpoch}
	var jobs []uint64
	// ownJob is the upload job of this commit's own runs (0 for an inline
	// commit): the only job a failed commit may abort. Spilled SSTs stay
	// owned by their jobs for a retry (I2).
	var ownJob uint64
	var inline []inlineSST
	if len(runs) > 0 {
		var err error
		if inline, err = e.buildInline(ctx, runs); err != nil {
			return fmt.Errorf("storage: commit epoch %d: %w", epoch, err)
		}
		for _, in := range inline {
			d.Added = append(d.Added, LevelSST{Level: 0, SST: in.meta})
		}
	}
	if len(runs) > 0 && inline == nil {
		metas, jobID, err := e.uploadRuns(ctx, runs, true)
		if err != nil {
			return fmt.Errorf("storage: commit epoch %d: %w", epoch, err)
		}
		for _, m := range metas {
			d.Added = append(d.Added, LevelSST{Level: 0, SST: m})
		}
		if jobID != 0 {
			jobs = append(jobs, jobID)
			ownJob = jobID
		}
	}
	// Spilled SSTs are older than the runs built now: list them after
	// (newest first), most recently spilled first.
	for i := len(spilled) - 1; i >= 0; i-- {
		d.Added = append(d.Added, LevelSST{Level: 0, SST: spilled[i].sst})
		if !slices.Contains(jobs, spilled[i].job) {
			jobs = append(jobs, spilled[i].job)
		}
	}
	d.JobIDs = jobs
	if err := e.renewSpillLeases(ctx, spilled); err != nil {
		return fmt.Errorf("storage: commit epoch %d: %w", epoch, err)
	}
	var spare *jobRecord
	var newInlineIDs []uint64
	nv, err := e.commitDelta(ctx, d, func(tx *metastore.Tx) error {
		// The inline SSTs land with the version that references them.
		for _, in := range inline {
			if _, err := tx.Exec(ctx, sqlInsertInlined, int64(in.meta.ID), in.data); err != nil {
				return fmt.Errorf("storage: write inline %s: %w", objectKey(in.meta.ID), err)
			}
		}
		newInlineIDs = nil
		if e.opts.InlineMaxBytes > 0 && len(e.inlineIDs) < 2 {
			// Ids for later inline commits; unused ones are gaps (no
			// object is ever written under them outside the transaction
			// that references it).
			first, err := allocIDs(ctx, tx, inlineIDBatch)
			if err != nil {
				return err
			}
			for i := range uint64(inlineIDBatch) {
				newInlineIDs = append(newInlineIDs, first+i)
			}
		}
		if e.spare != nil {
			spare = nil
			return nil
		}
		var err error
		spare, err = createJob(ctx, tx, jobKindUpload, JobRunning, nil, 1, e.opts.Clock())
		return err
	})
	if err == nil {
		e.inlineIDs = append(e.inlineIDs, newInlineIDs...)
		for _, in := range inline {
			e.tc.putInline(in.meta.ID, in.data)
		}
	}
	if spare != nil {
		if err == nil {
			e.spare = spare
			e.reserveSpare(spare)
		} else {
			// The record may have landed: abort it later (GC retries).
			e.mu.Lock()
			e.orphanJobs[spare.ID] = struct{}{}
			e.mu.Unlock()
		}
	}
	if err != nil {
		if ownJob != 0 && !errors.Is(err, errAmbiguous) && !errors.Is(err, ErrSimulatedCrash) {
			// Definitely not committed: the commit's own upload is garbage;
			// spilled SSTs stay owned by their jobs for a retry (an inline
			// commit has no upload of its own: nothing to abort).
			_ = e.abortJob(ctx, ownJob, nil)
		}
		return fmt.Errorf("storage: commit epoch %d: %w", epoch, err)
	}
	e.mu.Lock()
	committed := map[*bufItem]bool{}
	for _, it := range runs {
		committed[it] = true
	}
	for _, it := range spilled {
		committed[it] = true
	}
	nb := make([]*bufItem, 0, len(e.buf))
	for _, it := range e.buf {
		if committed[it] || (it.run != nil && it.epoch <= epoch && !v.hasTable(it.table)) {
			if it.run != nil {
				e.bufBytes -= it.run.bytes
			}
			continue
		}
		nb = append(nb, it)
	}
	e.buf = nb
	for _, j := range jobs {
		delete(e.leases, j)
	}
	e.installLocked(nv)
	e.mu.Unlock()
	e.kickCompaction()
	return nil
}

// renewSpillLeases refreshes the records of spilled uploads that have
// waited for their commit for more than half the grace period: the fence
// measures a job's age from its last renewal, so a live writer keeps its
// objects committable while a stalled one (no renewals) is rejected.
func (e *Engine) renewSpillLeases(ctx context.Context, spilled []*bufItem) error {
	now := e.opts.Clock()
	var ids []uint64
	e.mu.RLock()
	for _, it := range spilled {
		if t, ok := e.leases[it.job]; (!ok || now.Sub(t) > e.opts.GCGrace/2) && !slices.Contains(ids, it.job) {
			ids = append(ids, it.job)
		}
	}
	e.mu.RUnlock()
	if len(ids) == 0 {
		return nil
	}
	err := e.metaTx(ctx, "renew-jobs", func(tx *metastore.Tx) error {
		for _, id := range ids {
			if err := setJobState(ctx, tx, id, []string{JobRunning}, JobRunning, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.mu.Lock()
	for _, id := range ids {
		e.leases[id] = now
	}
	e.mu.Unlock()
	return nil
}

// errPanicked marks the error of background work that panicked.
var errPanicked = errors.New("panicked")

// survive runs fn, one unit of background work (a compaction, a GC pass,
// a reservation), and turns a panic in it into an error wrapping
// errPanicked, logged with its stack (I6: no goroutine outside the actors
// takes the process down). Locks fn holds under a defer are released; the
// work's durable records keep owning what it wrote (I1).
func (e *Engine) survive(what string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("storage: background work panicked", "work", what, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("storage: %s %w: %v", what, errPanicked, p)
		}
	}()
	return fn()
}

// errInjectedAmbiguity marks a MetaWrite-hook error after a write that
// landed: the metastore knows nothing of it, so it is ambiguous.
var errInjectedAmbiguity = errors.New("outcome unknown")

// errAmbiguous marks a version write whose outcome is unknown and could not
// be resolved by re-reading (I2): its objects stay owned by their jobs.
var errAmbiguous = errors.New("version write outcome unknown")

// commitDelta writes d in one metastore transaction, with the commit-side
// fence (I1), and returns the new version. Caller holds writeMu. An error
// after which the delta may have landed is resolved by re-reading the
// version (I2); if that fails too, the error wraps errAmbiguous and the
// engine reloads before its next write.
// The statements every epoch's commit runs (commitDelta, an inline SST),
// compiled once at Open.
const (
	sqlReadCounter   = `SELECT value FROM storage_counters WHERE name = $1`
	sqlInsertDelta   = `INSERT INTO storage_deltas (id, data) VALUES ($1, $2)`
	sqlSetVersionID  = `UPDATE storage_counters SET value = $1 WHERE name = 'version_id'`
	sqlInsertInlined = `INSERT INTO storage_inline_objects (id, data) VALUES ($1, $2)`
)

var commitStatements = []string{sqlReadCounter, sqlInsertDelta, sqlSetVersionID, sqlInsertInlined}

func (e *Engine) commitDelta(ctx context.Context, d *VersionDelta, inTx ...func(tx *metastore.Tx) error) (*Version, error) {
	e.mu.RLock()
	base := e.cur
	e.mu.RUnlock()
	nv, err := base.apply(d)
	if err != nil {
		return nil, err
	}
	checkpoint := d.ID%uint64(e.opts.CheckpointEvery) == 0
	now := e.opts.Clock()
	err = e.metaTx(ctx, "commit-delta", func(tx *metastore.Tx) error {
		head, err := readCounter(ctx, tx, "version_id")
		if err != nil {
			return err
		}
		if head != base.ID {
			return divergence(head, base)
		}
		if err := e.fence(ctx, tx, d, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlInsertDelta, int64(d.ID), encodeDelta(d)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlSetVersionID, int64(d.ID)); err != nil {
			return err
		}
		var removed []uint64
		for _, r := range d.Removed {
			removed = append(removed, r.ID)
		}
		if err := queueForDeletion(ctx, tx, removed, now); err != nil {
			return err
		}
		for _, j := range d.JobIDs {
			if err := setJobState(ctx, tx, j, []string{JobRunning, JobCommitting}, JobCommitted, now); err != nil {
				return err
			}
		}
		if checkpoint {
			if _, err := tx.Exec(ctx, `INSERT INTO storage_checkpoints (id, data) VALUES ($1, $2)`, int64(nv.ID), encodeCheckpoint(nv)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM storage_deltas WHERE id <= $1`, int64(nv.ID)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM storage_checkpoints WHERE id < $1`, int64(nv.ID)); err != nil {
				return err
			}
		}
		for _, f := range inTx {
			if err := f(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		return nv, nil
	}
	if errors.Is(err, ErrMetastoreDiverged) {
		if e.diverged.CompareAndSwap(nil, &err) {
			e.log.Error("storage: stopped writing: " + err.Error())
		}
		return nil, err
	}
	if errors.Is(err, ErrSimulatedCrash) || errors.Is(err, errFenced) || metastore.IsDefinitelyNotCommitted(err) && !errors.Is(err, errInjectedAmbiguity) {
		return nil, err
	}
	// I2: the write may have landed. Re-read the version before anyone
	// treats the delta's objects as garbage.
	got, rerr := e.rereadVersion(ctx)
	if rerr != nil {
		e.mu.Lock()
		e.needReload = true
		e.ambiguousDelta = d
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %w (re-read failed: %v)", errAmbiguous, err, rerr)
	}
	if got.ID >= d.ID {
		e.log.Warn("storage: version write reported an error but landed", "delta", d.ID, "err", err)
		return got, nil
	}
	return nil, err
}

var errFenced = errors.New("rejected by the commit fence")

// ErrMetastoreDiverged marks a commit that found the metastore's version
// head elsewhere than the version this engine committed last. Behind: the
// metastore lost deltas this engine wrote and acknowledged (a restore from
// a backup, an asynchronous standby promoted, a crash of a metastore that
// did not sync its commits). Ahead: another server writes to the same
// metastore. Neither heals by retrying, and reloading the metastore's
// version in place is not safe:
//   - I7: epochs acknowledged to clients (FLUSH returned) are missing from
//     the older version; serving it would take them back silently.
//   - I1: the lost deltas may have queued objects for deletion that GC then
//     deleted; the older version can reference them (reads would fail), and
//     objects written since are owned by nothing the metastore knows of.
//   - I3: another writer's actors write the same state tables.
//
// So the engine stops writing for good (every later metastore write fails
// with this error, GC stops) and says which versions disagree; the barrier
// loop stops with it instead of recovering in a loop. An operator checks
// the metastore (`runnel ctl storage check`) and restarts Runnel, which
// then serves the metastore's state.
var ErrMetastoreDiverged = errors.New("the metastore's version diverged from this server's")

// divergence is the error of a commit that found the metastore's head at
// head instead of base: SQLSTATE XX001, as PostgreSQL reports data it
// finds damaged, with a message that names both versions.
func divergence(head uint64, base *Version) error {
	if head < base.ID {
		return sqlerr.Wrap(ErrMetastoreDiverged, sqlerr.DataCorrupted, fmt.Sprintf(
			"the metastore's version head is %d but this server committed version %d (epoch %d): "+
				"the metastore lost commits that were acknowledged (restored from a backup, or a standby promoted without them); "+
				"this server stops committing: check the metastore, then restart Runnel to serve its state",
			head, base.ID, base.CommittedEpoch))
	}
	return sqlerr.Wrap(ErrMetastoreDiverged, sqlerr.DataCorrupted, fmt.Sprintf(
		"the metastore's version head is %d, ahead of version %d this server committed last (epoch %d): "+
			"another server writes to the same metastore; this server stops committing",
		head, base.ID, base.CommittedEpoch))
}

// Diverged returns the ErrMetastoreDiverged error that stopped the engine's
// writes, or nil.
func (e *Engine) Diverged() error {
	if p := e.diverged.Load(); p != nil {
		return *p
	}
	return nil
}

// fence rejects a delta that adds an object already queued for deletion,
// not named by one of the delta's live jobs, or whose job is older than
// the GC grace period (I1: a stalled writer cannot resurrect an object GC
// may have deleted).
func (e *Engine) fence(ctx context.Context, tx *metastore.Tx, d *VersionDelta, now time.Time) error {
	if len(d.Added) == 0 {
		return nil
	}
	owned := map[uint64]*jobRecord{}
	for _, id := range d.JobIDs {
		j, err := loadJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if j == nil || !j.live() {
			return fmt.Errorf("%w: job %d is not live", errFenced, id)
		}
		if now.UnixMilli()-j.Updated > e.opts.GCGrace.Milliseconds() {
			return fmt.Errorf("%w: job %d was last renewed more than the GC grace period %s ago", errFenced, id, e.opts.GCGrace)
		}
		for _, o := range j.Outputs {
			owned[o] = j
		}
	}
	for _, a := range d.Added {
		if a.SST.Inline {
			// Written by this very transaction under a fresh id: GC
			// cannot have seen it.
			continue
		}
		if owned[a.SST.ID] == nil {
			return fmt.Errorf("%w: %s is not an output of the delta's jobs", errFenced, objectKey(a.SST.ID))
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM storage_deletion_queue WHERE object_id = $1`, int64(a.SST.ID)).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: %s is queued for deletion", errFenced, objectKey(a.SST.ID))
		}
	}
	return nil
}

// rereadVersion loads the committed version from the metastore (the
// MetaWrite hook sees it as "reread-version" so tests can fail it).
func (e *Engine) rereadVersion(ctx context.Context) (*Version, error) {
	if e.crashed.Load() {
		return nil, ErrSimulatedCrash
	}
	if err := e.callMetaWriteHook("reread-version", false); err != nil {
		return nil, err
	}
	return loadVersion(ctx, e.meta)
}

// ResolveCommit settles the outcome of an ambiguous version write (one
// whose re-read failed, see commitDelta) by re-reading the version now; it
// is a no-op when there is none. Recovery calls it before it takes
// CommittedEpoch as the epoch it rolls back to (I2, I7): an epoch whose
// commit may have landed is neither reported committed nor rolled back
// until the re-read tells which.
func (e *Engine) ResolveCommit(ctx context.Context) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	return e.reloadIfNeeded(ctx)
}

// installLocked makes nv current; the old version stays alive while pinned.
func (e *Engine) installLocked(nv *Version) {
	old := e.cur
	e.cur = nv
	if old != nil && old.refs.Load() > 0 {
		e.live[old] = struct{}{}
	}
}

// reloadIfNeeded re-reads the version after an unresolved ambiguous write.
// Caller holds writeMu.
func (e *Engine) reloadIfNeeded(ctx context.Context) error {
	e.mu.RLock()
	need := e.needReload
	e.mu.RUnlock()
	if !need {
		return nil
	}
	v, err := e.rereadVersion(ctx)
	if err != nil {
		return fmt.Errorf("storage: reload version: %w", err)
	}
	e.mu.Lock()
	e.needReload = false
	d := e.ambiguousDelta
	e.ambiguousDelta = nil
	e.installLocked(v)
	// Buffered data now covered by the committed epoch landed with the
	// ambiguous delta.
	nb := make([]*bufItem, 0, len(e.buf))
	spilledJobs := map[uint64]bool{}
	for _, it := range e.buf {
		if it.epoch <= v.CommittedEpoch {
			if it.run != nil {
				e.bufBytes -= it.run.bytes
			}
			continue
		}
		if it.sst != nil {
			spilledJobs[it.job] = true
		}
		nb = append(nb, it)
	}
	e.buf = nb
	e.mu.Unlock()
	if d != nil && v.ID < d.ID {
		// The delta did not land: its jobs' outputs are garbage, except
		// spilled SSTs still waiting in the buffer for a retry.
		for _, j := range d.JobIDs {
			if !spilledJobs[j] {
				_ = e.abortJob(ctx, j, nil)
			}
		}
	}
	return nil
}

// pin returns the current version with a reference held, plus the buffer,
// after checking the table (I4). Readers share the lock: the reference is
// atomic, and a version can only be replaced under the exclusive lock.
func (e *Engine) pin(table TableID) (*Version, []*bufItem, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, nil, ErrClosed
	}
	if _, dropped := e.dropped[table]; dropped || !e.cur.hasTable(table) {
		return nil, nil, tableDropped(table)
	}
	e.cur.refs.Add(1)
	return e.cur, e.buf, nil
}

func (e *Engine) unpin(v *Version) {
	if v.refs.Add(-1) > 0 {
		return
	}
	e.mu.Lock()
	if v.refs.Load() == 0 && v != e.cur {
		delete(e.live, v)
	}
	e.mu.Unlock()
}

// checkTable enforces I4 against the version read and the live
// registration.
func (e *Engine) checkTable(v *Version, t TableID) error {
	if !v.hasTable(t) {
		return tableDropped(t)
	}
	e.mu.RLock()
	_, dropped := e.dropped[t]
	e.mu.RUnlock()
	if dropped {
		return tableDropped(t)
	}
	return nil
}

// Get returns the newest value of key <= epoch.
func (e *Engine) Get(ctx context.Context, table TableID, key []byte, epoch uint64, opt ReadOptions) ([]byte, bool, error) {
	v, buf, err := e.pin(table)
	if err != nil {
		return nil, false, err
	}
	defer e.unpin(v)
	if opt.CommittedOnly {
		buf = nil
	}
	return e.get(ctx, v, buf, table, key, epoch)
}

func (e *Engine) get(ctx context.Context, v *Version, buf []*bufItem, table TableID, key []byte, epoch uint64) ([]byte, bool, error) {
	if epoch < v.SafeEpoch {
		return nil, false, fmt.Errorf("storage: read table %d at epoch %d: %w (%d)", table, epoch, ErrEpochTooOld, v.SafeEpoch)
	}
	if exp := e.expiry(table); exp != nil && exp(key) {
		return nil, false, nil // past the table's TTL: gone at once (retention.go)
	}
	var (
		found   bool
		bestE   uint64
		bestVal []byte
		bestDel bool
		owned   bool // bestVal is already a private copy
		prefix  []byte
	)
	// Uncommitted data: the newest epoch <= epoch wins; among equal epochs
	// the later arrival (we scan newest first, so the first seen).
	for i := len(buf) - 1; i >= 0; i-- {
		it := buf[i]
		if it.epoch > epoch || (found && it.epoch <= bestE) {
			continue
		}
		if it.run != nil {
			if it.table != table {
				continue
			}
			if j := it.run.find(key); j >= 0 {
				found, bestE = true, it.epoch
				bestDel = it.run.ents[j].del
				bestVal, owned = it.run.value(j), false
			}
			continue
		}
		if prefix == nil {
			prefix = appendPrefix(nil, table, key)
		}
		if !sstMayContain(it.sst, prefix, table) {
			continue
		}
		val, ep, ok, err := e.sstLookup(ctx, it.sst, prefix, epoch)
		if err != nil {
			return nil, false, err
		}
		if ok {
			found, bestE = true, ep
			bestDel = val[0] == tagDelete
			bestVal, owned = val[1:], true
		}
	}
	if found {
		if !owned {
			bestVal = bytes.Clone(bestVal)
		}
		return result(bestVal, bestDel)
	}
	if prefix == nil {
		prefix = appendPrefix(nil, table, key)
	}
	// newestIn looks the key up in files that may interleave epochs (L0,
	// a window's files) and keeps the newest version across them.
	newestIn := func(files []*SSTMeta) error {
		for _, f := range files {
			if (found && f.MaxEpoch <= bestE) || !sstMayContain(f, prefix, table) {
				continue
			}
			val, ep, ok, err := e.sstLookup(ctx, f, prefix, epoch)
			if err != nil {
				return err
			}
			if ok && (!found || ep > bestE) {
				found, bestE = true, ep
				bestDel = val[0] == tagDelete
				bestVal = val[1:]
			}
		}
		return nil
	}
	if err := newestIn(v.Levels[0]); err != nil {
		return nil, false, err
	}
	if found {
		return result(bestVal, bestDel)
	}
	// The window level (window.go): a key's versions may be in several
	// files of its window; take the newest. L1..L6 normally hold only
	// older versions of the table, but not when the table had no time
	// decoder at an L0->L1 compaction, so their answer is compared too.
	if err := newestIn(windowFiles(v, table)); err != nil {
		return nil, false, err
	}
	// L1..: versions of a key in a shallower level are newer than in a
	// deeper one, and a prefix lives in at most one file per level.
	for l := 1; l < NumLevels; l++ {
		files := v.Levels[l]
		i := searchLevel(files, prefix)
		if i < 0 || !sstMayContain(files[i], prefix, table) {
			continue
		}
		val, ep, ok, err := e.sstLookup(ctx, files[i], prefix, epoch)
		if err != nil {
			return nil, false, err
		}
		if ok {
			if found && bestE > ep {
				break
			}
			return result(val[1:], val[0] == tagDelete)
		}
	}
	if found {
		return result(bestVal, bestDel)
	}
	return nil, false, nil
}

// result turns a found version into Get's answer; val must be owned by
// the caller already (sstLookup copies).
func result(val []byte, del bool) ([]byte, bool, error) {
	if del {
		return nil, false, nil
	}
	return val, true, nil
}

// sstMayContain checks the file's key range (on prefixes) and table set.
func sstMayContain(f *SSTMeta, prefix []byte, table TableID) bool {
	smallest, largest, ok := f.tableRange(table)
	return ok && bytes.Compare(prefix, smallest) >= 0 && bytes.Compare(prefix, largest) <= 0
}

// searchLevel returns the index of the only file of a sorted level whose
// prefix range may hold prefix, or -1.
func searchLevel(files []*SSTMeta, prefix []byte) int {
	lo, hi := 0, len(files)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		lg := files[m].Largest
		if bytes.Compare(lg[:epochSplit(lg)], prefix) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(files) {
		return -1
	}
	return lo
}

// sstLookup finds the newest version of prefix with epoch <= epoch in f.
// The returned value (tag first) is owned by the caller only until the next
// read; callers copy.
func (e *Engine) sstLookup(ctx context.Context, f *SSTMeta, prefix []byte, epoch uint64) (val []byte, ep uint64, ok bool, err error) {
	r, err := e.tc.get(ctx, f)
	if err != nil {
		return nil, 0, false, err
	}
	// The object's name is formatted only for errors (objectKey): doing
	// it on every lookup was ~10 % of a last-write-wins ingest's
	// existence reads.
	defer func() {
		if p := recover(); p != nil {
			val, ok, err = nil, false, fmt.Errorf("read %s: %v: %w", objectKey(f.ID), p, ErrCorrupt)
		}
	}()
	it, err := r.NewPointIter(ctx, sstable.IterOptions{
		FilterBlockSizeLimit: sstable.AlwaysUseFilterBlock,
		ReaderProvider:       sstable.MakeTrivialReaderProvider(r),
	})
	if err != nil {
		return nil, 0, false, fmt.Errorf("read %s: %w", objectKey(f.ID), err)
	}
	defer it.Close()
	seek := appendSuffix(append(make([]byte, 0, len(prefix)+suffixLen), prefix...), epoch)
	kv := it.SeekPrefixGE(prefix, seek, 0)
	if kv == nil {
		if err := it.Error(); err != nil {
			return nil, 0, false, fmt.Errorf("read %s: %w", objectKey(f.ID), err)
		}
		return nil, 0, false, nil
	}
	k := kv.K.UserKey
	n := epochSplit(k)
	if !bytes.Equal(k[:n], prefix) || len(k)-n != suffixLen {
		return nil, 0, false, nil
	}
	_, _, ep, _ = splitKey(k)
	v, _, err := kv.Value(nil)
	if err != nil {
		return nil, 0, false, fmt.Errorf("read %s: %w", objectKey(f.ID), err)
	}
	if len(v) == 0 || v[0] > tagDelete {
		return nil, 0, false, fmt.Errorf("read %s: bad value tag: %w", objectKey(f.ID), ErrCorrupt)
	}
	return bytes.Clone(v), ep, true, nil
}

// RegisterTables adds tables to the version in one delta.
func (e *Engine) RegisterTables(ctx context.Context, ids ...TableID) error {
	return e.RegisterTablesWith(ctx, ids, nil)
}

// RegisterTablesWith adds tables to the version in one delta and runs
// inTx (when not nil) in the same metastore transaction. The catalog
// passes the write of the relation that owns the tables, so that a table
// is registered exactly when its owner exists: a crash cannot leave a
// registered table that no catalog object owns, nor an object whose
// tables are missing (issue 13 item 6; the tables' objects stay owned by
// the version, I1). inTx runs even when every table is registered already.
func (e *Engine) RegisterTablesWith(ctx context.Context, ids []TableID, inTx func(tx *metastore.Tx) error) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.reloadIfNeeded(ctx); err != nil {
		return err
	}
	e.mu.RLock()
	v := e.cur
	e.mu.RUnlock()
	d := &VersionDelta{ID: v.ID + 1, CommittedEpoch: v.CommittedEpoch, SafeEpoch: v.SafeEpoch}
	for _, t := range ids {
		if !v.hasTable(t) {
			d.AddTables = append(d.AddTables, t)
		}
	}
	if len(d.AddTables) == 0 {
		if inTx == nil {
			return nil
		}
		return e.metaTx(ctx, "register-tables", inTx)
	}
	now := e.opts.Clock().UnixMilli()
	nv, err := e.commitDelta(ctx, d, func(tx *metastore.Tx) error {
		// The registration time lets `ctl storage check --grace` tell a
		// table just registered from one left without owner.
		for _, t := range d.AddTables {
			if _, err := tx.Exec(ctx, `DELETE FROM storage_table_registrations WHERE table_id = $1`, int64(t)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO storage_table_registrations (table_id, registered_ms) VALUES ($1, $2)`, int64(t), now); err != nil {
				return err
			}
		}
		if inTx != nil {
			return inTx(tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storage: register tables %v: %w", ids, err)
	}
	e.mu.Lock()
	for _, t := range d.AddTables {
		delete(e.dropped, t)
	}
	e.installLocked(nv)
	e.mu.Unlock()
	return nil
}

// UnregisterTables removes tables from the version in one delta. From then
// on every read of them fails with ErrTableDropped (I4); their data is
// removed by later compactions. Buffered writes to them are discarded.
func (e *Engine) UnregisterTables(ctx context.Context, ids ...TableID) error {
	return e.UnregisterTablesWith(ctx, ids, nil)
}

// UnregisterTablesWith is UnregisterTables running inTx (when not nil) in
// the delta's metastore transaction: the catalog removes the tables'
// owner in it, so the owner and its tables go together (issue 13 item 6).
// The caller has stopped everything that could touch the tables (I3).
func (e *Engine) UnregisterTablesWith(ctx context.Context, ids []TableID, inTx func(tx *metastore.Tx) error) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.reloadIfNeeded(ctx); err != nil {
		return err
	}
	e.mu.RLock()
	v := e.cur
	e.mu.RUnlock()
	d := &VersionDelta{ID: v.ID + 1, CommittedEpoch: v.CommittedEpoch, SafeEpoch: v.SafeEpoch}
	for _, t := range ids {
		if v.hasTable(t) {
			d.RemoveTables = append(d.RemoveTables, t)
		}
	}
	if len(d.RemoveTables) == 0 {
		if inTx == nil {
			return nil
		}
		return e.metaTx(ctx, "unregister-tables", inTx)
	}
	e.callUnregisterHook(d.RemoveTables) // testhooks.go
	nv, err := e.commitDelta(ctx, d, func(tx *metastore.Tx) error {
		for _, t := range d.RemoveTables {
			if _, err := tx.Exec(ctx, `DELETE FROM storage_table_registrations WHERE table_id = $1`, int64(t)); err != nil {
				return err
			}
		}
		if inTx != nil {
			return inTx(tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storage: unregister tables %v: %w", ids, err)
	}
	e.mu.Lock()
	nb := make([]*bufItem, 0, len(e.buf))
	for _, it := range e.buf {
		if it.run != nil && slices.Contains(d.RemoveTables, it.table) {
			e.bufBytes -= it.run.bytes
			continue
		}
		nb = append(nb, it)
	}
	e.buf = nb
	for _, t := range d.RemoveTables {
		e.dropped[t] = struct{}{}
	}
	e.installLocked(nv)
	e.mu.Unlock()
	e.kickCompaction()
	return nil
}

// Tables returns the registered table ids, ascending.
func (e *Engine) Tables() []TableID {
	e.mu.RLock()
	defer e.mu.RUnlock()
	ts := make([]TableID, 0, len(e.cur.Tables))
	for t := range e.cur.Tables {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// DiscardUncommitted drops every ingested-but-uncommitted epoch (compute
// reset). Spilled SSTs go to the deletion queue with their jobs aborted; if
// that write fails the jobs stay live (still owning their objects, I1) and
// are retried by GC.
func (e *Engine) DiscardUncommitted() {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.mu.Lock()
	var jobs []uint64
	for _, it := range e.buf {
		if it.sst != nil && !slices.Contains(jobs, it.job) {
			jobs = append(jobs, it.job)
		}
	}
	e.buf = nil
	e.bufBytes = 0
	e.mu.Unlock()
	for _, j := range jobs {
		if err := e.abortJob(context.Background(), j, nil); err != nil {
			e.log.Warn("storage: abort of spilled upload deferred", "job", j, "err", err)
		}
	}
}

// Close stops background work and releases readers. Uncommitted data is
// dropped (it was never acknowledged).
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	close(e.stop)
	e.cancelAllCompactions()
	e.bg.Wait()
	// The spare upload record names no object; without this the next
	// Open would abort it (recoverJobs) and log it as left behind.
	e.writeMu.Lock()
	e.reserving.Wait()
	if j := e.spare; j != nil && !e.crashed.Load() {
		e.spare = nil
		_ = e.abortJob(context.Background(), j.ID, nil)
	}
	e.writeMu.Unlock()
	e.tc.close()
	e.cache.close()
	return nil
}
