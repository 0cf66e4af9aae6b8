package storage

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

// TestFullGCAndDescribe: an object nobody owns is reported as unowned and
// deleted by FullGC only once older than the grace period; owned objects
// are never touched; DescribeVersion shows levels, SSTs and tables.
func TestFullGCAndDescribe(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	store, meta := objstore.NewMem(), openMeta(t)
	store.Now = func() time.Time { return now }
	e := openEngine(t, store, meta, func(o *Options) { o.Clock = func() time.Time { return now } })
	model := fillForCompaction(t, e)
	// A stray object, as a writer that ignored I1 would leave.
	stray := objectKey(1 << 40)
	if err := store.Put(ctx, stray, []byte("junk")); err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, store, meta, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.Objects[stray] != ClassUnowned || r.Counts[ClassReferenced] != 3 {
		t.Fatalf("check: %s, stray is %s", r.Summary(), r.Objects[stray])
	}
	if want := "objects: 3 referenced, 0 job-owned, 0 queued, 1 unowned, 0 missing"; r.Summary() != want {
		t.Fatalf("summary %q; want %q", r.Summary(), want)
	}
	// Within the grace period (and above the id watermark): kept.
	if n, err := fullGC(ctx, store, meta, time.Minute, now); err != nil || n != 0 {
		t.Fatalf("full gc within grace deleted %d (%v)", n, err)
	}
	// A stray below the watermark and older than grace goes; nothing else.
	refs := e.cur.objects()
	var free uint64
	for id := uint64(1); ; id++ {
		if _, ok := refs[id]; !ok {
			free = id
			break
		}
	}
	stray2 := objectKey(free)
	store.Put(ctx, stray2, []byte("junk"))
	store.Delete(ctx, stray)
	now = now.Add(2 * time.Minute)
	if n, err := fullGC(ctx, store, meta, time.Minute, now); err != nil || n != 1 {
		t.Fatalf("full gc after grace deleted %d; want 1 (%v)", n, err)
	}
	checkExactlyReferenced(t, store, meta)
	verifyModel(t, e, model)
	desc, err := DescribeVersion(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"committed epoch 3", "tables: [1]", "L0: 3 ssts", "sst/"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe lacks %q:\n%s", want, desc)
		}
	}
}
