package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
)

var hookPoints = []HookPoint{HookBeforeFirstOutput, HookBetweenOutputs, HookAfterOutputsBeforeCommit, HookDuringCommitWrite, HookAfterCommit}

// fillForCompaction commits a few epochs so that L0 has several files and
// a compaction writes several outputs (tiny target size).
func fillForCompaction(t *testing.T, e *Engine) map[string]string {
	t.Helper()
	ctx := context.Background()
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	for ep := uint64(1); ep <= 3; ep++ {
		var kvs []KV
		for i := 0; i < 300; i++ {
			key := k(i*3 + int(ep))
			v := fmt.Sprintf("value-%d-%d-%s", ep, i, "padding-padding-padding")
			kvs = append(kvs, KV{Key: key, Value: []byte(v)})
			model[string(key)] = v
		}
		if err := e.Ingest(ep, 1, kvs); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	return model
}

func verifyModel(t *testing.T, e *Engine, model map[string]string) {
	t.Helper()
	ctx := context.Background()
	it, err := e.Iter(ctx, 1, nil, nil, e.CommittedEpoch(), ReadOptions{CommittedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.Next() {
		if want := model[string(it.Key())]; want != string(it.Value()) {
			t.Fatalf("key %s: got %q; want %q", it.Key(), it.Value(), want)
		}
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(model) {
		t.Fatalf("scan found %d keys; want %d", n, len(model))
	}
	for key, want := range model {
		v, ok, err := e.Get(ctx, 1, []byte(key), e.CommittedEpoch(), ReadOptions{})
		if err != nil || !ok || string(v) != want {
			t.Fatalf("get %s: got %q,%v,%v; want %q", key, v, ok, err, want)
		}
	}
}

// checkI1 fails unless every object is owned and every referenced object
// exists.
func checkI1(t *testing.T, store objstore.Store, meta *metastore.DB) CheckReport {
	t.Helper()
	r, err := Check(context.Background(), store, meta, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("I1 violated: %s (missing %v)", r.Summary(), r.Missing)
	}
	return r
}

// checkExactlyReferenced: after recovery and GC the store holds exactly
// the referenced objects.
func checkExactlyReferenced(t *testing.T, store objstore.Store, meta *metastore.DB) {
	t.Helper()
	r := checkI1(t, store, meta)
	if r.Counts[ClassJobOwned] != 0 || r.Counts[ClassQueued] != 0 || len(r.Foreign) != 0 {
		t.Fatalf("store is not exactly the referenced objects: %s", r.Summary())
	}
}

func jobOutputsQueued(t *testing.T, meta *metastore.DB, id uint64) {
	t.Helper()
	ctx := context.Background()
	j, err := loadJob(ctx, meta, id)
	if err != nil || j == nil {
		t.Fatalf("job %d: %v %v", id, j, err)
	}
	if j.State != JobAborted {
		t.Fatalf("job %d state %s; want aborted", id, j.State)
	}
	q, err := loadDeletionQueue(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range j.Outputs {
		if _, ok := q[o]; !ok {
			t.Fatalf("output %s of cancelled job %d is not on the deletion queue", objectKey(o), id)
		}
	}
}

// TestCompactionCancelRace puts a cancel, an injected failure and a crash
// at every named point of a compaction and checks I1/I2 and the data.
func TestCompactionCancelRace(t *testing.T) {
	noLeaks(t)
	for _, p := range hookPoints {
		for _, mode := range []string{"cancel", "fail", "crash", "ambiguous"} {
			if mode == "ambiguous" && p != HookDuringCommitWrite {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", p, mode), func(t *testing.T) {
				ctx := context.Background()
				store, meta := objstore.NewMem(), openMeta(t)
				var (
					hit, won    bool
					fired       bool
					eng         *Engine
					ambiguousOp bool
					cerrc       = make(chan error, 1)
					cerr        error
				)
				hooks := &Hooks{
					Compaction: func(at HookPoint, j *CompactionJob) error {
						if at != p || fired {
							return nil
						}
						fired, hit = true, true
						switch mode {
						case "cancel":
							won = j.RequestCancel()
							// The acknowledgement: Cancel returns only once the
							// job has finished and its outputs are owned.
							go func() { cerrc <- j.Cancel(ctx) }()
						case "fail":
							return errors.New("injected failure")
						case "crash":
							eng.crashed.Store(true)
							return ErrSimulatedCrash
						case "ambiguous":
							ambiguousOp = true
						}
						return nil
					},
					MetaWrite: func(op string, after bool) error {
						if ambiguousOp && op == "commit-delta" && after {
							return errors.New("injected: connection lost during COMMIT")
						}
						if ambiguousOp && op == "reread-version" {
							return errors.New("injected: metastore unreachable")
						}
						return nil
					},
				}
				e := openEngine(t, store, meta, func(o *Options) { o.TargetFileSize = 4 << 10; o.Hooks = hooks })
				eng = e
				model := fillForCompaction(t, e)
				before := e.cur
				j, err := e.StartCompaction(ctx, true)
				if err != nil || j == nil {
					t.Fatalf("start compaction: %v %v", j, err)
				}
				if mode == "cancel" {
					cerr = <-cerrc
				} else {
					<-j.Done()
				}
				if !hit {
					t.Fatalf("hook point %s not reached", p)
				}
				committed, jerr := j.Result()
				switch mode {
				case "cancel":
					lateCancel := p == HookDuringCommitWrite || p == HookAfterCommit
					if won == lateCancel {
						t.Fatalf("RequestCancel at %s returned %v", p, won)
					}
					if lateCancel {
						if !errors.Is(cerr, ErrTooLate) || !committed {
							t.Fatalf("late cancel: cancel err %v, committed %v, job err %v", cerr, committed, jerr)
						}
					} else {
						// I2: acknowledged only after the outputs are owned
						// by the deletion queue.
						if cerr != nil || committed {
							t.Fatalf("cancel: err %v, committed %v", cerr, committed)
						}
						jobOutputsQueued(t, meta, j.ID)
						if e.cur != before {
							t.Fatal("cancelled compaction changed the version")
						}
					}
				case "fail":
					if p == HookAfterCommit {
						if !committed {
							t.Fatalf("failure after commit must not undo it: %v", jerr)
						}
					} else {
						if committed || jerr == nil {
							t.Fatalf("failed job: committed %v err %v", committed, jerr)
						}
						jobOutputsQueued(t, meta, j.ID)
					}
				case "crash":
					if p == HookAfterCommit {
						if !committed {
							t.Fatal("crash after commit: not committed")
						}
					} else if committed {
						t.Fatal("crashed job reported committed")
					}
				case "ambiguous":
					if committed || !errors.Is(jerr, errAmbiguous) {
						t.Fatalf("ambiguous commit: committed %v err %v", committed, jerr)
					}
					// Possibly committed: GC must delete nothing yet.
					if n, err := e.RunGC(ctx); err != nil || n != 0 {
						t.Fatalf("gc during unresolved ambiguity deleted %d (%v)", n, err)
					}
					ambiguousOp = false
				}
				checkI1(t, store, meta)
				if mode != "crash" {
					verifyModel(t, e, model)
				}
				// Crash/reopen from the metastore at this point, then GC.
				e.crashed.Store(true)
				e.Close()
				e2 := openEngine(t, store, meta, func(o *Options) { o.TargetFileSize = 4 << 10 })
				checkI1(t, store, meta)
				verifyModel(t, e2, model)
				if _, err := e2.RunGC(ctx); err != nil {
					t.Fatal(err)
				}
				checkExactlyReferenced(t, store, meta)
				// The engine still compacts fine afterwards.
				if _, err := e2.Compact(ctx, true); err != nil {
					t.Fatal(err)
				}
				verifyModel(t, e2, model)
				if _, err := e2.RunGC(ctx); err != nil {
					t.Fatal(err)
				}
				checkExactlyReferenced(t, store, meta)
			})
		}
	}
}

// TestPinnedVersionKeepsInputs: an iterator opened before a compaction
// keeps reading the inputs; GC deletes them only after it is closed.
func TestPinnedVersionKeepsInputs(t *testing.T) {
	noLeaks(t)
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) { o.TargetFileSize = 4 << 10; o.InlineMaxBytes = -1 })
	model := fillForCompaction(t, e)
	it, err := e.Iter(ctx, 1, nil, nil, 3, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap := e.Snapshot()
	oldObjs := e.cur.objects()
	if _, err := e.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	allExist := func(want bool) {
		t.Helper()
		for id := range oldObjs {
			_, err := store.Stat(ctx, objectKey(id))
			if (err == nil) != want {
				t.Fatalf("%s: exists=%v; want %v", objectKey(id), err == nil, want)
			}
		}
	}
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	allExist(true)
	n := 0
	for it.Next() {
		n++
	}
	if it.Err() != nil || n != len(model) {
		t.Fatalf("pinned iterator: %d keys, err %v", n, it.Err())
	}
	it.Close()
	if v, ok, err := snap.Get(ctx, 1, k(1)); err != nil || !ok || string(v) != model[string(k(1))] {
		t.Fatalf("snapshot get: %q %v %v", v, ok, err)
	}
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	allExist(true)
	snap.Close()
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	allExist(false)
	checkExactlyReferenced(t, store, meta)
	verifyModel(t, e, model)
}

// TestCommitFence: a delta naming an object that is queued for deletion,
// or whose job is older than the grace period, is rejected.
func TestCommitFence(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, nil)
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.Ingest(1, 1, []KV{{Key: k(1), Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	e.mu.RLock()
	items := slices.Clone(e.buf)
	e.mu.RUnlock()
	metas, jobID, err := e.uploadRuns(ctx, items, false)
	if err != nil {
		t.Fatal(err)
	}
	// Queue the object behind the writer's back (as a GC of an aborted
	// job would) and try to commit it.
	if err := meta.Tx(ctx, func(tx *metastore.Tx) error {
		return queueForDeletion(ctx, tx, []uint64{metas[0].ID}, e.opts.Clock())
	}); err != nil {
		t.Fatal(err)
	}
	d := &VersionDelta{ID: e.cur.ID + 1, CommittedEpoch: 1, JobIDs: []uint64{jobID}, Added: []LevelSST{{0, metas[0]}}}
	e.writeMu.Lock()
	_, err = e.commitDelta(ctx, d)
	e.writeMu.Unlock()
	if !errors.Is(err, errFenced) {
		t.Fatalf("queued object: got %v; want fence rejection", err)
	}
	// A stalled writer: the job is older than the grace period.
	now := e.opts.Clock()
	e.opts.Clock = func() time.Time { return now.Add(2 * e.opts.GCGrace) }
	metas2, jobID2, err := e.uploadRuns(ctx, items, false)
	if err != nil {
		t.Fatal(err)
	}
	e.opts.Clock = func() time.Time { return now.Add(4 * e.opts.GCGrace) }
	d = &VersionDelta{ID: e.cur.ID + 1, CommittedEpoch: 1, JobIDs: []uint64{jobID2}, Added: []LevelSST{{0, metas2[0]}}}
	e.writeMu.Lock()
	_, err = e.commitDelta(ctx, d)
	e.writeMu.Unlock()
	if !errors.Is(err, errFenced) {
		t.Fatalf("stale job: got %v; want fence rejection", err)
	}
	// A forged delta naming an object of no job.
	d = &VersionDelta{ID: e.cur.ID + 1, CommittedEpoch: 1, Added: []LevelSST{{0, &SSTMeta{ID: 999, Smallest: metas2[0].Smallest, Largest: metas2[0].Largest}}}}
	e.writeMu.Lock()
	_, err = e.commitDelta(ctx, d)
	e.writeMu.Unlock()
	if !errors.Is(err, errFenced) {
		t.Fatalf("unowned object: got %v; want fence rejection", err)
	}
}

// I2: a cancel whose abort record cannot be written is not acknowledged:
// Cancel fails (ErrAbortDeferred) while the job's live record still owns
// its outputs (I1), and GC's retry of the abort queues them later.
func TestCompactionCancelAbortWriteFails(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	var failAbort atomic.Bool
	hooks := &Hooks{
		MetaWrite: func(op string, after bool) error {
			if op == "abort-job" && !after && failAbort.Load() {
				return errors.New("injected: metastore unreachable")
			}
			return nil
		},
	}
	e := openEngine(t, store, meta, func(o *Options) { o.TargetFileSize = 4 << 10; o.Hooks = hooks })
	model := fillForCompaction(t, e)
	failAbort.Store(true)
	j, err := e.StartCompaction(ctx, true)
	if err != nil || j == nil {
		t.Fatalf("start compaction: %v %v", j, err)
	}
	err = j.Cancel(ctx)
	if !errors.Is(err, ErrAbortDeferred) {
		_, jerr := j.Result()
		t.Fatalf("Cancel with the abort write failing = %v; want ErrAbortDeferred (job: %v)", err, jerr)
	}
	rec, err := loadJob(ctx, meta, j.ID)
	if err != nil || rec == nil || !rec.live() {
		t.Fatalf("job %d after a failed abort: %+v %v; want a live record owning its outputs", j.ID, rec, err)
	}
	failAbort.Store(false)
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err = loadJob(ctx, meta, j.ID); err != nil || rec.State != JobAborted {
		t.Fatalf("job %d after GC retried its abort: %+v %v; want aborted", j.ID, rec, err)
	}
	for _, o := range rec.Outputs {
		if _, err := store.Stat(ctx, objectKey(o)); err == nil {
			t.Fatalf("output %s of the aborted job survived GC", objectKey(o))
		}
	}
	verifyModel(t, e, model)
}

// I2: a failed inline commit aborts no job: the spilled SSTs it carried
// stay owned by their upload jobs, and the retried commit lands them.
// (It used to abort the first job of the delta — a spilled upload's — so
// the retry was fenced out for ever.)
func TestFailedInlineCommitKeepsSpilledJobs(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	var failCommit atomic.Bool
	hooks := &Hooks{MetaWrite: func(op string, after bool) error {
		if op == "commit-delta" && !after && failCommit.CompareAndSwap(true, false) {
			return errors.New("injected: commit refused")
		}
		return nil
	}}
	e := openEngine(t, store, meta, func(o *Options) { o.Hooks = hooks; o.WriteBufferBytes = 20 << 10 })
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	put := func(epoch uint64, from, n int) {
		t.Helper()
		var kvs []KV
		for i := from; i < from+n; i++ {
			v := fmt.Sprintf("v%d@%d-padding-padding-padding", i, epoch)
			kvs = append(kvs, KV{Key: k(i), Value: []byte(v)})
			model[string(k(i))] = v
		}
		if err := e.Ingest(epoch, 1, kvs); err != nil {
			t.Fatal(err)
		}
	}
	put(1, 2000, 1)
	if err := e.Commit(ctx, 1); err != nil { // allocates the ids of later inline commits
		t.Fatal(err)
	}
	put(5, 0, 600) // over the write buffer: spilled
	put(6, 1000, 3)
	e.mu.RLock()
	spilled, runs := 0, 0
	for _, it := range e.buf {
		if it.sst != nil {
			spilled++
		} else {
			runs++
		}
	}
	e.mu.RUnlock()
	if spilled == 0 || runs == 0 {
		t.Fatalf("buffer holds %d spilled SSTs and %d runs; the test needs both", spilled, runs)
	}
	failCommit.Store(true)
	if err := e.Commit(ctx, 6); err == nil {
		t.Fatal("the injected commit failure was not reported")
	}
	if err := e.Commit(ctx, 6); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	verifyModel(t, e, model)
}
