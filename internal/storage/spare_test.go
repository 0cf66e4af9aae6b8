package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

// TestCommitUsesSpareUploadJob: after the first, a commit with data does
// one metastore write (its delta, which also records the next commit's
// upload job) instead of two (the upload job record, then the delta):
// one fsync less on FLUSH's path. The spare record is durable before its
// object is PUT (I1(b)), an expired spare is aborted rather than tripping
// the commit fence, Close leaves no live job behind, and every object
// stays owned throughout.
func TestCommitUsesSpareUploadJob(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	var (
		mu  sync.Mutex
		ops []string
		now = time.Unix(1_700_000_000, 0)
	)
	hooks := &Hooks{MetaWrite: func(op string, after bool) error {
		if after {
			mu.Lock()
			ops = append(ops, op)
			mu.Unlock()
		}
		return nil
	}}
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := openEngine(t, store, meta, func(o *Options) { o.Hooks = hooks; o.Clock = clock; o.GCGrace = time.Hour; o.InlineMaxBytes = -1 })
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	commit := func(epoch uint64) []string {
		t.Helper()
		mu.Lock()
		ops = nil
		mu.Unlock()
		if err := e.Ingest(epoch, 1, []KV{{Key: k(int(epoch)), Value: []byte(fmt.Sprint(epoch))}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, epoch); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ops)
	}
	if got := commit(1); !slices.Equal(got, []string{"create-job", "commit-delta"}) {
		t.Fatalf("first commit: metastore writes %v", got)
	}
	for epoch := uint64(2); epoch <= 4; epoch++ {
		if got := commit(epoch); !slices.Equal(got, []string{"commit-delta"}) {
			t.Fatalf("commit %d: metastore writes %v; want only commit-delta (the spare job serves the upload)", epoch, got)
		}
	}
	// The live spare names its reserved output before any PUT of it.
	jobs, err := loadJobs(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	var live []*jobRecord
	for _, j := range jobs {
		if j.live() {
			live = append(live, j)
		}
	}
	if len(live) != 1 || live[0].Kind != jobKindUpload || len(live[0].Outputs) == 0 {
		t.Fatalf("live jobs after commits: %+v; want the one spare upload job", live)
	}
	checkI1(t, store, meta)

	// Idle past half the grace period: the spare is too old for the fence,
	// so the commit aborts it and writes a fresh record.
	mu.Lock()
	now = now.Add(31 * time.Minute)
	mu.Unlock()
	if got := commit(5); !slices.Equal(got, []string{"abort-job", "create-job", "commit-delta"}) {
		t.Fatalf("commit after idling: metastore writes %v", got)
	}
	for i := 1; i <= 5; i++ {
		if v, ok, err := e.Get(ctx, 1, k(i), 5, ReadOptions{CommittedOnly: true}); err != nil || !ok || string(v) != fmt.Sprint(i) {
			t.Fatalf("key %d: %q %v %v", i, v, ok, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if jobs, err = loadJobs(ctx, meta); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.live() {
			t.Fatalf("Close left live job %+v", j)
		}
	}
}

// TestCommitWritesReservedObject: on a local directory the spare job's
// object is reserved (created empty, its name durable) after each commit,
// and the next commit's upload fills that very file. A crash between the
// reservation and the next commit leaves an empty object owned by the
// live spare job: the next Open aborts the job, GC deletes the object, and
// the store is exactly the referenced objects again (I1).
func TestCommitWritesReservedObject(t *testing.T) {
	ctx := context.Background()
	store, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	meta := openMeta(t)
	e := openEngine(t, store, meta, uploadOnly)
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	spareObject := func(e *Engine) string {
		t.Helper()
		e.writeMu.Lock()
		j := e.spare
		e.writeMu.Unlock()
		if j == nil {
			t.Fatal("no spare upload job after a commit")
		}
		<-j.reserved
		return objectKey(j.Outputs[0])
	}
	for epoch := uint64(1); epoch <= 4; epoch++ {
		var next string
		if epoch > 1 {
			next = spareObject(e)
			if info, err := store.Stat(ctx, next); err != nil || info.Size != 0 {
				t.Fatalf("epoch %d: reserved object %s: %+v, %v; want it empty", epoch, next, info, err)
			}
		}
		if err := e.Ingest(epoch, 1, []KV{{Key: k(int(epoch)), Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, epoch); err != nil {
			t.Fatal(err)
		}
		if epoch > 1 {
			e.mu.RLock()
			got := objectKey(e.cur.Levels[0][0].ID)
			e.mu.RUnlock()
			if got != next {
				t.Fatalf("epoch %d committed %s; want the reserved %s", epoch, got, next)
			}
			if info, err := store.Stat(ctx, next); err != nil || info.Size == 0 {
				t.Fatalf("epoch %d: %s after commit: %+v, %v", epoch, next, info, err)
			}
		}
	}
	orphan := spareObject(e)
	// "Crash": a new engine on the same store and metastore, the old one
	// never closed (its spare job stays live).
	e2 := openEngine(t, store, meta, uploadOnly)
	if _, err := e2.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(ctx, orphan); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("the crashed run's reserved object %s: %v; want it deleted", orphan, err)
	}
	for i := 1; i <= 4; i++ {
		if _, ok, err := e2.Get(ctx, 1, k(i), 4, ReadOptions{}); err != nil || !ok {
			t.Fatalf("key %d after restart: %v %v", i, ok, err)
		}
	}
	e2.Close()
	checkExactlyReferenced(t, store, meta)
}
