package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// testClock is a clock the engine and the compactors share.
type testClock struct {
	now     func() time.Time
	advance func(time.Duration)
}

func newFakeClock() *testClock {
	now, advance := fakeClock()
	return &testClock{now: now, advance: advance}
}

// metastores runs fn on SQLite and on a throwaway PostgreSQL database.
func metastores(t *testing.T, fn func(t *testing.T, meta *metastore.DB)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, openMeta(t)) })
	t.Run("postgres", func(t *testing.T) {
		meta, err := metastore.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { meta.Close() })
		fn(t, meta)
	})
}

func newTestCompactor(t *testing.T, store objstore.Store, meta *metastore.DB, node string, clock *testClock, hooks *Hooks) *Compactor {
	t.Helper()
	c, err := NewCompactor(context.Background(), CompactorOptions{Store: store, Meta: meta, Node: node,
		Lease: time.Hour, Clock: clock.now, Hooks: hooks, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func taskCount(t *testing.T, meta *metastore.DB) int {
	t.Helper()
	var n int
	if err := meta.QueryRow(context.Background(), `SELECT COUNT(*) FROM storage_compaction_tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRemoteCompaction: with RemoteCompaction the engine only plans (job
// record and task row) and commits; a compactor claims the task, merges
// and uploads under the record's ids (I1(b)) and hands the result back;
// the engine's delta moves the data from L0 to L1 and queues the inputs.
// Reads are unchanged, and after GC the store holds exactly the
// referenced objects (I1).
func TestRemoteCompaction(t *testing.T) {
	metastores(t, func(t *testing.T, meta *metastore.DB) {
		noLeaks(t)
		ctx := context.Background()
		clock := newFakeClock()
		store := objstore.NewMem()
		e := openEngine(t, store, meta, func(o *Options) {
			o.RemoteCompaction, o.RemotePoll, o.Clock, o.TargetFileSize = true, 5*time.Millisecond, clock.now, 4<<10
		})
		model := fillForCompaction(t, e)
		j, err := e.StartCompaction(ctx, true)
		if err != nil || j == nil {
			t.Fatalf("start: %v %v", j, err)
		}
		if !j.remote || taskCount(t, meta) != 1 {
			t.Fatalf("remote %v, %d tasks; want a remote job with one task", j.remote, taskCount(t, meta))
		}
		c := newTestCompactor(t, store, meta, "node 7", clock, nil)
		if ran, err := c.RunOnce(ctx); !ran || err != nil {
			t.Fatalf("compactor: ran %v, %v", ran, err)
		}
		<-j.Done()
		if ok, err := j.Result(); !ok || err != nil {
			t.Fatalf("remote job: committed %v, %v", ok, err)
		}
		if j.ExecutedBy() != "node 7" {
			t.Fatalf("executed by %q", j.ExecutedBy())
		}
		if ran, err := c.RunOnce(ctx); ran || err != nil {
			t.Fatalf("second claim: ran %v, %v; want nothing to claim", ran, err)
		}
		c.e.tc.mu.Lock()
		open := len(c.e.tc.m)
		c.e.tc.mu.Unlock()
		if open != 0 {
			t.Fatalf("the compactor keeps %d readers of its inputs open after the job", open)
		}
		e.mu.RLock()
		l0, l1 := len(e.cur.Levels[0]), len(e.cur.Levels[1])
		e.mu.RUnlock()
		if l0 != 0 || l1 < 2 {
			t.Fatalf("after the remote compaction: L0 %d files, L1 %d; want 0 and several", l0, l1)
		}
		if n := taskCount(t, meta); n != 0 {
			t.Fatalf("%d task rows left after the commit", n)
		}
		verifyModel(t, e, model)
		checkI1(t, store, meta)
		if _, err := e.RunGC(ctx); err != nil {
			t.Fatal(err)
		}
		checkExactlyReferenced(t, store, meta)
	})
}

// TestRemoteCompactionLostClaim: a compactor stopped dead after writing
// its outputs (a SIGKILL: ErrSimulatedCrash), or paused there while its
// claim's lease lapses or the job is cancelled. The engine aborts the job
// (outputs on the deletion queue, task row gone: I1), a paused compactor
// resumed afterwards cannot hand back (the abort and the hand-back lock
// the same row: I1/I2) and deletes what it wrote; a second compactor runs
// the re-planned job to completion; the data never changes.
func TestRemoteCompactionLostClaim(t *testing.T) {
	for _, mode := range []string{"killed", "paused-lapsed", "paused-cancelled"} {
		t.Run(mode, func(t *testing.T) {
			metastores(t, func(t *testing.T, meta *metastore.DB) {
				noLeaks(t)
				ctx := context.Background()
				clock := newFakeClock()
				store := objstore.NewMem()
				e := openEngine(t, store, meta, func(o *Options) {
					o.RemoteCompaction, o.RemotePoll, o.Clock, o.TargetFileSize = true, 5*time.Millisecond, clock.now, 4<<10
				})
				model := fillForCompaction(t, e)
				j, err := e.StartCompaction(ctx, true)
				if err != nil || j == nil {
					t.Fatalf("start: %v %v", j, err)
				}
				paused, resume := make(chan struct{}), make(chan struct{})
				hooks := &Hooks{Compaction: func(p HookPoint, _ *CompactionJob) error {
					if p != HookAfterOutputsBeforeCommit {
						return nil
					}
					if mode == "killed" {
						return ErrSimulatedCrash
					}
					close(paused)
					<-resume
					return nil
				}}
				first := newTestCompactor(t, store, meta, "node 1", clock, hooks)
				runErr := make(chan error, 1)
				go func() { _, err := first.RunOnce(ctx); runErr <- err }()
				if mode == "killed" {
					if err := <-runErr; !errors.Is(err, ErrSimulatedCrash) {
						t.Fatalf("killed compactor: %v", err)
					}
				} else {
					select {
					case <-paused:
					case err := <-runErr:
						t.Fatalf("compactor ended before its pause point: %v", err)
					}
				}
				// The outputs exist, owned by the live job record (I1(b)).
				if r := checkI1(t, store, meta); r.Counts[ClassJobOwned] == 0 {
					t.Fatalf("no job-owned outputs at the pause: %s", r.Summary())
				}
				if mode == "paused-cancelled" {
					if err := j.Cancel(ctx); err != nil {
						t.Fatalf("cancel: %v", err)
					}
				} else {
					clock.advance(2 * time.Hour) // past the claim's lease
				}
				<-j.Done()
				ok, jerr := j.Result()
				if ok || jerr == nil {
					t.Fatalf("job with a lost claim: committed %v, %v", ok, jerr)
				}
				if mode != "paused-cancelled" && !strings.Contains(jerr.Error(), "the lease of its claim by compactor node 1 lapsed") {
					t.Fatalf("job error: %v", jerr)
				}
				jobOutputsQueued(t, meta, j.ID)
				if n := taskCount(t, meta); n != 0 {
					t.Fatalf("%d task rows left after the abort", n)
				}
				checkI1(t, store, meta)
				if mode != "killed" {
					close(resume)
					if err := <-runErr; !errors.Is(err, ErrClaimLost) {
						t.Fatalf("resumed compactor: %v; want ErrClaimLost", err)
					}
					// It deleted what it wrote (nothing can reference it).
					rec, err := loadJob(ctx, meta, j.ID)
					if err != nil {
						t.Fatal(err)
					}
					for _, o := range rec.Outputs {
						if _, err := store.Stat(ctx, objectKey(o)); err == nil {
							t.Fatalf("output %s of the lost claim is still in the store", objectKey(o))
						}
					}
					checkI1(t, store, meta)
				}
				// A second compactor completes the re-planned job.
				j2, err := e.StartCompaction(ctx, true)
				if err != nil || j2 == nil {
					t.Fatalf("re-plan: %v %v", j2, err)
				}
				second := newTestCompactor(t, store, meta, "node 2", clock, nil)
				if ran, err := second.RunOnce(ctx); !ran || err != nil {
					t.Fatalf("second compactor: ran %v, %v", ran, err)
				}
				<-j2.Done()
				if ok, err := j2.Result(); !ok || err != nil || j2.ExecutedBy() != "node 2" {
					t.Fatalf("re-planned job: committed %v, %v, by %q", ok, err, j2.ExecutedBy())
				}
				verifyModel(t, e, model)
				if _, err := e.RunGC(ctx); err != nil {
					t.Fatal(err)
				}
				checkExactlyReferenced(t, store, meta)
			})
		})
	}
}

// TestCompactorClaimSkipsLocked: on PostgreSQL a claim skips a task row
// another compactor holds locked (FOR UPDATE SKIP LOCKED) instead of
// waiting for it, so compactors claiming at once never take one task
// twice nor queue behind each other.
func TestCompactorClaimSkipsLocked(t *testing.T) {
	ctx := context.Background()
	meta, err := metastore.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	clock := newFakeClock()
	store := objstore.NewMem()
	e := openEngine(t, store, meta, func(o *Options) {
		o.RemoteCompaction, o.RemotePoll, o.Clock = true, 5*time.Millisecond, clock.now
	})
	fillForCompaction(t, e)
	j, err := e.StartCompaction(ctx, true)
	if err != nil || j == nil {
		t.Fatalf("start: %v %v", j, err)
	}
	locked, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		held <- meta.UnfencedTx(ctx, func(tx *metastore.Tx) error {
			var id int64
			if err := tx.QueryRow(ctx, `SELECT job_id FROM storage_compaction_tasks FOR UPDATE`).Scan(&id); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	c := newTestCompactor(t, store, meta, "node 2", clock, nil)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ran, err := c.RunOnce(cctx)
	cancel()
	if ran || err != nil {
		t.Fatalf("claim while another holds the task: ran %v, %v; want nothing claimed at once", ran, err)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if ran, err := c.RunOnce(ctx); !ran || err != nil {
		t.Fatalf("claim after release: ran %v, %v", ran, err)
	}
	<-j.Done()
	if ok, err := j.Result(); !ok || err != nil {
		t.Fatalf("job: %v %v", ok, err)
	}
}

// TestRemoteCompactionUnclaimed: a task no compactor claims within half
// the GC grace period is aborted (its record would soon be too old for
// the commit fence), freeing its inputs for the next plan; nothing was
// written, nothing is left (I1).
func TestRemoteCompactionUnclaimed(t *testing.T) {
	noLeaks(t)
	ctx := context.Background()
	clock := newFakeClock()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) {
		o.RemoteCompaction, o.RemotePoll, o.Clock, o.GCGrace = true, 5*time.Millisecond, clock.now, time.Hour
	})
	model := fillForCompaction(t, e)
	j, err := e.StartCompaction(ctx, true)
	if err != nil || j == nil {
		t.Fatalf("start: %v %v", j, err)
	}
	clock.advance(31 * time.Minute)
	<-j.Done()
	if ok, err := j.Result(); ok || err == nil || !strings.Contains(err.Error(), "no compactor claimed it") {
		t.Fatalf("unclaimed job: committed %v, %v", ok, err)
	}
	jobOutputsQueued(t, meta, j.ID)
	if n := taskCount(t, meta); n != 0 {
		t.Fatalf("%d task rows left", n)
	}
	verifyModel(t, e, model)
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyReferenced(t, store, meta)
}
