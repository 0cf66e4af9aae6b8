package storage

import (
	"context"
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
	e := openEngine(t, store, meta, func(o *Options) { o.Hooks = hooks; o.Clock = clock; o.GCGrace = time.Hour })
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
