package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/panics"
)

// ErrTooLate is returned by CompactionJob.Cancel when the job had already
// started to commit; Cancel returns it after the commit finished.
var ErrTooLate = errors.New("compaction already committing")

// compactionPick is the picker's choice.
type compactionPick struct {
	inputs     []LevelFile
	files      []*SSTMeta // same order as inputs: newest data first
	outLevel   int
	bottommost bool
	// cuts are the smallest prefixes of the output level's files that are
	// not inputs, ascending: an output SST never spans one, so outputs
	// stay disjoint from the files left in place (buildSSTs).
	cuts     [][]byte
	dropOnly bool // every input belongs to unregistered tables only, or is past its tables' TTL whole
	// route, when set, sends the keys of these tables to one output per
	// (table, time window) in the window level (window.go): L0->L1 and
	// window compactions.
	route map[TableID]windowSpec
}

// CompactionJob is one running compaction. Cancel and commit-start are
// linearised under mu (I2): exactly one of them wins.
type CompactionJob struct {
	ID     uint64
	Inputs []LevelFile
	Level  int // output level

	e             *Engine
	mu            sync.Mutex
	cancelled     bool
	commitStarted bool
	cancel        context.CancelFunc
	done          chan struct{}
	started       time.Time
	err           error // result, valid after done
	committed     bool
	// Sizes for the compaction log event (set once the outputs are written).
	inputBytes, outputBytes uint64
	outputs                 int
	// remote: a compactor process runs the merge (compactor.go);
	// executedBy names the one whose result was taken (under mu).
	remote     bool
	executedBy string
}

// ExecutedBy names the compactor process that ran a remote job's merge
// ("" for a job run in this process, or before a result was handed back).
func (j *CompactionJob) ExecutedBy() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.executedBy
}

// logCompaction logs the finished job's event (obs.EventCompaction):
// result committed, aborted (cancelled or failed; its outputs are on the
// deletion queue) or unknown (an ambiguous commit or a panic: the record
// stays live until the version is re-read, I2).
func (e *Engine) logCompaction(j *CompactionJob) {
	if errors.Is(j.err, ErrSimulatedCrash) {
		return
	}
	result, level := "committed", slog.LevelInfo
	switch {
	case j.committed:
	case errors.Is(j.err, errAmbiguous) || errors.Is(j.err, errPanicked):
		result, level = "unknown", slog.LevelWarn
	default:
		result = "aborted"
	}
	attrs := []slog.Attr{
		slog.Uint64("job", j.ID), slog.String("result", result), slog.Int("output_level", j.Level),
		slog.Int("inputs", len(j.Inputs)), slog.Uint64("input_bytes", j.inputBytes),
		slog.Int("outputs", j.outputs), slog.Uint64("output_bytes", j.outputBytes),
		obs.Seconds("duration_seconds", time.Since(j.started)),
	}
	if j.err != nil && !j.committed {
		attrs = append(attrs, slog.String("error", j.err.Error()))
	}
	if j.remote {
		attrs = append(attrs, slog.String("executed_by", j.ExecutedBy()))
	}
	obs.Event(e.log, level, obs.EventCompaction, attrs...)
}

// Done is closed when the job has finished (committed, aborted or failed).
func (j *CompactionJob) Done() <-chan struct{} { return j.done }

// Result is the job's outcome after Done: committed or the error.
func (j *CompactionJob) Result() (committed bool, err error) { return j.committed, j.err }

// RequestCancel asks the job to stop without waiting. It returns false if
// the job has already started to commit (too late).
func (j *CompactionJob) RequestCancel() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.commitStarted {
		return false
	}
	if !j.cancelled {
		j.cancelled = true
		if j.cancel != nil {
			j.cancel()
		}
	}
	return true
}

// Cancel stops the job and returns once its outputs are owned by the
// deletion queue (I2), or ErrTooLate once the commit that won finished.
func (j *CompactionJob) Cancel(ctx context.Context) error {
	won := j.RequestCancel()
	select {
	case <-j.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !won {
		return ErrTooLate
	}
	if j.committed {
		return ErrTooLate
	}
	if errors.Is(j.err, ErrAbortDeferred) {
		// I2: the job stopped, but its abort record could not be written:
		// its outputs are owned by its live record (I1, GC retries the
		// abort), not by the deletion queue, so the cancel is not done.
		return fmt.Errorf("storage: cancel compaction %d: %w", j.ID, j.err)
	}
	if j.err != nil && !errors.Is(j.err, context.Canceled) && !errors.Is(j.err, errCancelled) {
		return j.err
	}
	return nil
}

var errCancelled = errors.New("compaction cancelled")

// ErrAbortDeferred marks a job that stopped without a durable abort
// record: its record is still live and owns its outputs (I1); GC and the
// next Open retry the abort. A Cancel that meets it fails (I2).
var ErrAbortDeferred = errors.New("abort record not written")

// levelTarget is the size a level may reach before it is compacted down.
func (e *Engine) levelTarget(l int) int64 {
	t := e.opts.LevelBaseBytes
	for i := 1; i < l; i++ {
		t *= int64(e.opts.LevelMultiplier)
	}
	return t
}

func prefixOf(k []byte) []byte { return k[:epochSplit(k)] }

// intraL0Ratio: L0 is merged within L0 while the L1 bytes an L0->L1
// compaction would rewrite exceed this multiple of L0's bytes.
const intraL0Ratio = 8

// pick chooses a compaction (leveled; see docs/storage-format.md for why).
// force relaxes the size triggers. Caller holds compactMu.
func (e *Engine) pick(v *Version, force bool) *compactionPick {
	// 1. SSTs holding only unregistered tables: drop without rewriting.
	var drop compactionPick
	drop.dropOnly = true
	cutoffs := e.cutoffs()
	if len(cutoffs) == 0 {
		cutoffs = nil
	}
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			if e.compacting[f.ID] {
				continue
			}
			live := false
			for _, t := range f.Tables {
				live = live || v.hasTable(t)
			}
			// An SST all of whose rows are past their tables' TTL goes the
			// same way: out of the version in one delta, then GC (I1).
			if !live || cutoffs != nil && expiredWhole(v, f, cutoffs) {
				drop.inputs = append(drop.inputs, LevelFile{l, f.ID})
				drop.files = append(drop.files, f)
			}
		}
	}
	if len(drop.inputs) > 0 {
		return &drop
	}
	// 2. Scores.
	bestL, bestScore := -1, 0.0
	if n := len(v.Levels[0]); n > 0 {
		s := float64(n) / float64(e.opts.L0CompactionTrigger)
		if force {
			s += 1
		}
		bestL, bestScore = 0, s
	}
	for l := 1; l < NumLevels-1; l++ {
		var size int64
		for _, f := range v.Levels[l] {
			size += int64(f.Size)
		}
		if size == 0 {
			continue
		}
		s := float64(size) / float64(e.levelTarget(l))
		if force && bestL < 0 {
			s += 1
		}
		if s > bestScore {
			bestL, bestScore = l, s
		}
	}
	// 3. A window of the window level with too many small files, unless
	// L0 is due first (window.go).
	if bestL != 0 || bestScore < 1 {
		if p := e.pickWindow(v, force); p != nil {
			return p
		}
	}
	if bestL < 0 || bestScore < 1 {
		return nil
	}
	p := &compactionPick{outLevel: bestL + 1}
	// lo..hi is the inputs' overall range; ranges are their per-table
	// ranges. A commit's L0 file holds a few keys of several tables: the
	// files of the next level are picked by the per-table ranges, not by
	// the overall one, which would take every file of the tables in
	// between and rewrite most of the level for a one-row commit.
	var (
		lo, hi []byte
		ranges []KeyRange
	)
	add := func(l int, f *SSTMeta) bool {
		if e.compacting[f.ID] {
			return false
		}
		p.inputs = append(p.inputs, LevelFile{l, f.ID})
		p.files = append(p.files, f)
		if lo == nil || bytes.Compare(prefixOf(f.Smallest), lo) < 0 {
			lo = prefixOf(f.Smallest)
		}
		if hi == nil || bytes.Compare(prefixOf(f.Largest), hi) > 0 {
			hi = prefixOf(f.Largest)
		}
		if l == bestL {
			for _, t := range f.Tables {
				s, g, _ := f.tableRange(t)
				ranges = append(ranges, KeyRange{Smallest: s, Largest: g})
			}
		}
		return true
	}
	touches := func(f *SSTMeta) bool {
		fs, fl := prefixOf(f.Smallest), prefixOf(f.Largest)
		for _, r := range ranges {
			if bytes.Compare(fl, r.Smallest) >= 0 && bytes.Compare(fs, r.Largest) <= 0 {
				return true
			}
		}
		return false
	}
	if bestL == 0 {
		// All of L0, so that the invariant "a shallower level holds newer
		// versions" holds for L1 (L0 files may interleave epochs).
		for _, f := range v.Levels[0] {
			if !add(0, f) {
				return nil
			}
		}
	} else {
		// The largest file not being compacted.
		var cand *SSTMeta
		for _, f := range v.Levels[bestL] {
			if !e.compacting[f.ID] && (cand == nil || f.Size > cand.Size) {
				cand = f
			}
		}
		if cand == nil || !add(bestL, cand) {
			return nil
		}
	}
	// Files of the output level: those the inputs' keys fall in are
	// inputs; the others stay, and outputs are cut at each of them (the
	// inputs' keys never fall inside one, so outputs and the files left
	// in place stay disjoint).
	for _, f := range v.Levels[bestL+1] {
		if touches(f) {
			if !add(bestL+1, f) {
				return nil
			}
		} else if bytes.Compare(prefixOf(f.Largest), lo) >= 0 && bytes.Compare(prefixOf(f.Smallest), hi) <= 0 {
			p.cuts = append(p.cuts, prefixOf(f.Smallest))
		}
	}
	if bestL == 0 && !force && len(v.Levels[0]) > 1 {
		// Intra-L0: a commit's L0 file is small, but the L1 files its keys
		// fall in are up to TargetFileSize each; merging a few tiny files
		// into L1 would rewrite megabytes per kilobyte of new data and keep
		// the disk busy under every FLUSH. While the L1 files to rewrite
		// outweigh L0 by more than intraL0Ratio, merge L0 into one L0 file
		// instead; L0 grows until the ratio falls and the next pick moves
		// it down. Outputs go to the back of L0 (Version.apply): they hold
		// only data older than any L0 file committed meanwhile.
		var l0, l1 int64
		for i, in := range p.inputs {
			if in.Level == 0 {
				l0 += int64(p.files[i].Size)
			} else {
				l1 += int64(p.files[i].Size)
			}
		}
		if l1 > intraL0Ratio*l0 {
			// Merge the newest files only: an older L0 file larger than
			// all the files newer than it together stays (rewriting it
			// for every few small commits would cost its size each time
			// and contend with the commits' fsyncs). L0 files then form
			// size tiers, each at least as large as the newer ones.
			n := len(v.Levels[0])
			var newer uint64
			for i := range n {
				newer += p.files[i].Size
			}
			for n > 2 {
				newer -= p.files[n-1].Size
				if p.files[n-1].Size <= newer {
					break
				}
				n--
			}
			if n >= 2 && (n > 2 || p.files[1].Size <= p.files[0].Size) {
				p.inputs, p.files, p.cuts = p.inputs[:n], p.files[:n], nil
				p.outLevel = 0
				p.bottommost = false
				return p
			}
		}
	}
	if bestL == 0 {
		// L0 -> L1: keys of time-series tables go to the window level.
		p.route = e.windowSpecs()
	}
	p.bottommost = true
	for l := p.outLevel + 1; l < NumLevels; l++ {
		for _, f := range v.Levels[l] {
			if bytes.Compare(prefixOf(f.Largest), lo) >= 0 && bytes.Compare(prefixOf(f.Smallest), hi) <= 0 {
				p.bottommost = false
			}
		}
	}
	// The window level may hold older versions of the inputs' keys of a
	// time-series table (the table had no time decoder when they were
	// compacted): a tombstone hiding them is kept.
	for _, f := range v.Levels[WindowLevel] {
		for _, in := range p.files {
			if _, _, ok := in.tableRange(f.Tables[0]); ok {
				p.bottommost = false
			}
		}
	}
	return p
}

// horizon is the oldest epoch a reader may still ask for: the committed
// epoch or an older pinned snapshot's.
func (e *Engine) horizonLocked() uint64 {
	h := e.cur.CommittedEpoch
	for s := range e.snaps {
		h = min(h, s.epoch)
	}
	return h
}

// Compact runs at most one compaction synchronously (force: ignore size
// triggers) and reports whether one ran. Its error is the job's.
func (e *Engine) Compact(ctx context.Context, force bool) (bool, error) {
	j, err := e.StartCompaction(ctx, force)
	if err != nil || j == nil {
		return false, err
	}
	<-j.done
	return true, j.err
}

// StartCompaction picks and starts one compaction in the background and
// returns its job (nil if there is nothing to do). The job record is
// durable before it returns.
func (e *Engine) StartCompaction(ctx context.Context, force bool) (*CompactionJob, error) {
	select {
	case e.compactSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release := func() { <-e.compactSem }
	e.compactMu.Lock()
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		e.compactMu.Unlock()
		release()
		return nil, ErrClosed
	}
	v := e.cur
	v.refs.Add(1) // pinned for the job's duration
	e.bg.Add(1)   // Close waits for the job
	horizon := e.horizonLocked()
	e.mu.RUnlock()
	p := e.pick(v, force)
	if p == nil {
		e.compactMu.Unlock()
		e.unpin(v)
		release()
		e.bg.Done()
		return nil, nil
	}
	for _, in := range p.inputs {
		e.compacting[in.ID] = true
	}
	e.compactMu.Unlock()
	cleanup := func() {
		e.compactMu.Lock()
		for _, in := range p.inputs {
			delete(e.compacting, in.ID)
		}
		e.compactMu.Unlock()
		e.unpin(v)
		release()
		e.bg.Done()
	}
	var est uint64
	for _, f := range p.files {
		est += f.Size
	}
	reserve := 0
	if !p.dropOnly {
		reserve = int(int64(est)/e.opts.TargetFileSize) + 1
	}
	jctx, cancel := context.WithCancel(context.Background())
	j := &CompactionJob{Inputs: p.inputs, Level: p.outLevel, e: e, cancel: cancel, done: make(chan struct{}), started: time.Now()}
	var w *outputWriter
	var err error
	if e.opts.RemoteCompaction && e.offloadable(p) {
		// A compactor process runs the merge (compactor.go).
		j.remote = true
		var rec *jobRecord
		if rec, err = e.createTask(ctx, p, v, reserve, horizon); err == nil {
			j.ID = rec.ID
		}
	} else {
		w, err = e.newOutputWriter(ctx, jobKindCompaction, p.inputs, reserve, func(n int) error {
			if n == 0 {
				return e.compactionHook(HookBeforeFirstOutput, j)
			}
			return e.compactionHook(HookBetweenOutputs, j)
		})
		if err == nil {
			w.ctx = jctx
			j.ID = w.job.ID
		}
	}
	if err != nil {
		cancel()
		cleanup()
		return nil, fmt.Errorf("storage: plan compaction: %w", err)
	}
	e.compactMu.Lock()
	e.compactions[j.ID] = j
	e.compactMu.Unlock()
	go func() {
		defer func() {
			e.compactMu.Lock()
			delete(e.compactions, j.ID)
			e.compactMu.Unlock()
			cleanup()
			cancel()
			close(j.done)
			e.kickCompaction()
		}()
		j.err = e.survive(fmt.Sprintf("compaction %d", j.ID), func() error {
			var err error
			if j.remote {
				j.committed, err = e.awaitRemote(jctx, j, p, horizon)
			} else {
				j.committed, err = e.runCompaction(jctx, j, v, p, w, horizon)
			}
			return err
		})
		if errors.Is(j.err, errPanicked) {
			// I1, I2: the job's record stays live and owns its outputs
			// (a commit may even have landed: the version is re-read
			// before the next write); Open settles it.
			j.committed = false
			e.mu.Lock()
			e.needReload = true
			e.mu.Unlock()
		}
		obs.CompactionDone(j.committed)
		e.logCompaction(j)
	}()
	return j, nil
}

func (e *Engine) compactionHook(p HookPoint, j *CompactionJob) error {
	if h := e.opts.Hooks.Compaction; h != nil {
		return h(p, j)
	}
	return nil
}

// runCompaction executes a planned job. Outcomes:
//   - committed: the delta landed (possibly learnt by re-reading, I2);
//   - aborted: outputs are on the deletion queue and the record says so;
//   - crash (test): stop dead;
//   - abort write failed: the record stays live and owns the outputs (I1);
//     it is retried by GC and at Open.
func (e *Engine) runCompaction(ctx context.Context, j *CompactionJob, v *Version, p *compactionPick, w *outputWriter, horizon uint64) (bool, error) {
	abort := func(cause error) (bool, error) {
		if errors.Is(cause, ErrSimulatedCrash) || e.crashed.Load() {
			return false, cause
		}
		if err := e.abortJob(context.Background(), j.ID, w.job.Outputs); err != nil {
			return false, fmt.Errorf("compaction %d: %w (%w: %v)", j.ID, cause, ErrAbortDeferred, err)
		}
		return false, fmt.Errorf("compaction %d: %w", j.ID, cause)
	}
	cancelled := func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.cancelled
	}
	if err := e.metaTx(ctx, "start-job", func(tx *metastore.Tx) error {
		return setJobState(ctx, tx, j.ID, []string{JobPlanned}, JobRunning, e.opts.Clock())
	}); err != nil {
		return abort(err)
	}
	if !p.dropOnly {
		spec := mergeSpec{files: p.files, live: v.hasTable, horizon: horizon, bottommost: p.bottommost,
			cuts: p.cuts, route: p.route, outLevel: p.outLevel, exps: e.expiries()}
		if err := e.mergeInputs(ctx, j, spec, w, cancelled); err != nil {
			return abort(err)
		}
	} else if err := e.compactionHook(HookBeforeFirstOutput, j); err != nil {
		return abort(err)
	}
	if err := e.compactionHook(HookAfterOutputsBeforeCommit, j); err != nil {
		return abort(err)
	}
	// Commit-start, linearised with cancel (I2).
	j.mu.Lock()
	if j.cancelled {
		j.mu.Unlock()
		return abort(errCancelled)
	}
	j.commitStarted = true
	j.mu.Unlock()

	return e.commitCompaction(ctx, j, p, horizon, w.metas, w.windowed, abort, func(tx *metastore.Tx) error {
		// Unused reserved ids never got an object, but queue them so the
		// record's promise is closed out.
		var unused []uint64
		for _, o := range w.job.Outputs[w.used:] {
			unused = append(unused, o)
		}
		return queueForDeletion(ctx, tx, unused, e.opts.Clock())
	})
}

// commitCompaction commits a compaction's outputs in one version delta
// that removes its inputs, after commit-start was decided under j.mu
// (I2). The delta is written by this engine, the meta leader, through
// its fenced metastore (a compactor process never writes the version,
// I1/I2: one writer); inTx closes out the job's unused output ids in the
// same transaction. Outcomes as runCompaction's.
func (e *Engine) commitCompaction(ctx context.Context, j *CompactionJob, p *compactionPick, horizon uint64, metas []*SSTMeta, windowed []bool,
	abort func(error) (bool, error), inTx func(tx *metastore.Tx) error) (bool, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.reloadIfNeeded(ctx); err != nil {
		return false, err // outputs stay owned by the live record
	}
	if err := e.metaTx(context.Background(), "committing-job", func(tx *metastore.Tx) error {
		return setJobState(ctx, tx, j.ID, []string{JobRunning}, JobCommitting, e.opts.Clock())
	}); err != nil {
		if errors.Is(err, ErrSimulatedCrash) {
			return false, err
		}
		return abort(err)
	}
	e.mu.RLock()
	cur := e.cur
	e.mu.RUnlock()
	d := &VersionDelta{ID: cur.ID + 1, CommittedEpoch: cur.CommittedEpoch, SafeEpoch: max(cur.SafeEpoch, horizon), JobIDs: []uint64{j.ID}}
	if p.dropOnly {
		d.SafeEpoch = cur.SafeEpoch
	}
	d.Removed = p.inputs
	for i, m := range metas {
		l := p.outLevel
		if i < len(windowed) && windowed[i] {
			l = WindowLevel
		}
		d.Added = append(d.Added, LevelSST{Level: l, SST: m})
	}
	nv, err := e.commitDelta(context.Background(), d, func(tx *metastore.Tx) error {
		if err := inTx(tx); err != nil {
			return err
		}
		return e.compactionHook(HookDuringCommitWrite, j)
	})
	if err != nil {
		if errors.Is(err, errAmbiguous) || errors.Is(err, ErrSimulatedCrash) {
			// I2: maybe committed; the record (Committing) keeps owning
			// the outputs until a reload or Open resolves it.
			return false, err
		}
		return abort(err)
	}
	e.mu.Lock()
	e.installLocked(nv)
	e.mu.Unlock()
	e.warmOutputs(metas)
	for _, f := range p.files {
		j.inputBytes += f.Size
	}
	for _, m := range metas {
		j.outputBytes += m.Size
	}
	j.outputs = len(metas)
	if err := e.compactionHook(HookAfterCommit, j); err != nil && !errors.Is(err, ErrSimulatedCrash) {
		e.log.Warn("storage: after-commit hook", "err", err)
	}
	return true, nil
}

// mergeSpec is what a compaction's merge needs: everything is data but
// the liveness and expiry functions, so that a compactor process
// (compactor.go) runs the very merge the meta node runs in-process.
type mergeSpec struct {
	files      []*SSTMeta // newest data first
	live       func(TableID) bool
	horizon    uint64
	bottommost bool
	cuts       [][]byte
	route      map[TableID]windowSpec
	outLevel   int
	exps       map[TableID]func(rest []byte) bool
}

// mergeInputs merges the inputs into outputs uploaded by w (each output's
// id reserved in the job record before its PUT: I1(b)). It keeps every
// version newer than the horizon and the newest one at or below it
// (dropped if it is a tombstone and nothing older can lie below), and
// drops data of tables that are not live. A key past its table's TTL is
// dropped whole, every version at every level of the compaction: expiry
// is a property of the key, so the versions left in deeper levels are
// expired too and never resurface (retention.go). The inputs leave
// through the delta and GC (I1); an SST holding only expired rows yields
// no output.
func (e *Engine) mergeInputs(ctx context.Context, j *CompactionJob, s mergeSpec, w *outputWriter, cancelled func() bool) error {
	srcs := make([]source, 0, len(s.files))
	for _, f := range s.files {
		r, err := e.tc.get(ctx, f)
		if err != nil {
			return err
		}
		src, err := newSSTSource(ctx, r, objectKey(f.ID), nil, nil, false)
		if err != nil {
			return err
		}
		srcs = append(srcs, src)
	}
	m := newMergeIter(srcs, false)
	var below, live bool
	keep := func(src source, first bool) (bool, error) {
		if first {
			below, live = false, s.live(src.table())
			if exp := s.exps[src.table()]; live && exp != nil && exp(src.rest()) {
				live = false
			}
		}
		if !live {
			return false, nil
		}
		if src.epoch() > s.horizon {
			return true, nil
		}
		if below {
			return false, nil
		}
		below = true
		if s.bottommost {
			del, _, err := src.value()
			if err != nil {
				return false, err
			}
			if del {
				return false, nil
			}
		}
		return true, nil
	}
	err := e.buildSSTsRouted(ctx, m, keep, s.cuts, s.route, func(obj []byte, meta *SSTMeta, windowed bool) error {
		if cancelled() {
			return errCancelled
		}
		if !windowed && s.outLevel == WindowLevel {
			// A key of a window compaction whose time cannot be
			// decoded (it was routed when written, so this means a
			// changed decoder): abort, the inputs stay.
			return fmt.Errorf("compaction %d: a key of table %v has no time window", j.ID, meta.Tables)
		}
		if err := w.emit(obj, meta); err != nil {
			return err
		}
		w.windowed = append(w.windowed, windowed)
		return nil
	})
	m.close()
	if err != nil {
		if cancelled() {
			err = fmt.Errorf("%w: %w", errCancelled, err)
		}
		return err
	}
	if len(w.metas) == 0 {
		// Everything was dropped: still run the before-first-output
		// point so every pause point is reachable.
		return e.compactionHook(HookBeforeFirstOutput, j)
	}
	return nil
}

// warmOutputs opens the readers of a compaction's outputs (footer, index
// and filter into the caches) in the background, so that the first read
// after a compaction — a point read of an UPDATE, typically after an idle
// spell in which compactions ran — does not pay for opening them. Called
// from a running job (e.bg is held), so Close waits for it.
// warmSite names the warming goroutine's units for panics.Arm.
const warmSite = "storage.warm"

func (e *Engine) warmOutputs(metas []*SSTMeta) {
	if len(metas) == 0 || e.opts.DisableAutoCompaction && !e.opts.warmAlways {
		return
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		// Close (which waits for this goroutine) cancels the reads in
		// flight, so a slow or hung object store cannot hold it (issue 13
		// item 8).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-e.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		for _, m := range metas {
			if ctx.Err() != nil {
				return
			}
			// A panic opening the object (pebble on a damaged file) is
			// logged; the read that needs it reports the damage (I6).
			err := panics.Catch(warmSite, func() error { _, err := e.tc.get(ctx, m); return err })
			if pe := (*panics.Error)(nil); errors.As(err, &pe) {
				e.log.Error("storage: warming a compaction output panicked", "object", objectKey(m.ID), "err", err, "stack", string(pe.Stack))
			} else if err != nil {
				e.log.Debug("storage: warming a compaction output", "object", objectKey(m.ID), "err", err)
			}
		}
	}()
}

// Compactions returns the running compaction jobs.
func (e *Engine) Compactions() []*CompactionJob {
	e.compactMu.Lock()
	defer e.compactMu.Unlock()
	out := make([]*CompactionJob, 0, len(e.compactions))
	for _, j := range e.compactions {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *CompactionJob) int { return int(a.ID) - int(b.ID) })
	return out
}

// CancelCompactions cancels every running compaction and waits until each
// is aborted (outputs owned by the deletion queue) or committed.
func (e *Engine) CancelCompactions(ctx context.Context) error {
	var first error
	for _, j := range e.Compactions() {
		if err := j.Cancel(ctx); err != nil && !errors.Is(err, ErrTooLate) && first == nil {
			first = err
		}
	}
	return first
}

func (e *Engine) cancelAllCompactions() { _ = e.CancelCompactions(context.Background()) }

func (e *Engine) kickCompaction() {
	select {
	case e.compactKick <- struct{}{}:
	default:
	}
}

// compactionLoop starts compactions while the picker finds work, bounded
// by MaxConcurrentCompactions.
func (e *Engine) compactionLoop() {
	defer e.bg.Done()
	for {
		select {
		case <-e.stop:
			return
		case <-e.compactKick:
		}
		for {
			var j *CompactionJob
			err := e.survive("compaction planning", func() error {
				var err error
				j, err = e.StartCompaction(context.Background(), false)
				return err
			})
			if err != nil || j == nil {
				if err != nil && !errors.Is(err, ErrClosed) {
					e.log.Warn("storage: compaction", "err", err)
				}
				break
			}
			select {
			case <-e.stop:
				return
			default:
			}
		}
	}
}

// CompactionIdle reports whether no compaction is running and none is due:
// the LSM has settled (a benchmark waits for this after a bulk load before
// it measures steady-state latency).
func (e *Engine) CompactionIdle() bool {
	e.compactMu.Lock()
	defer e.compactMu.Unlock()
	if len(e.compacting) > 0 {
		return false
	}
	e.mu.RLock()
	v := e.cur
	e.mu.RUnlock()
	return e.pick(v, false) == nil
}
