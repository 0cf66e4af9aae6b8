package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

func inlineRows(t *testing.T, meta *metastore.DB) int {
	t.Helper()
	var n int
	if err := meta.QueryRow(context.Background(), `SELECT COUNT(*) FROM storage_inline_objects`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func storeObjects(t *testing.T, store objstore.Store) int {
	t.Helper()
	l, err := store.List(context.Background(), sstKeyPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return len(l)
}

// TestInlineCommit: a small commit's SST goes into the metastore in the
// transaction that commits its version — no object PUT — and is read
// back from there after a restart. A commit-delta write that fails leaves
// no row (the row and the version change together, I1/I2); compaction
// moves the data to the object store and GC removes the row with its
// queue entry; a commit larger than InlineMaxBytes uploads as before; a
// missing row is a corruption error naming the object, not a crash.
//
// It runs on both metastores: the embedded SQLite and PostgreSQL.
func TestInlineCommit(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testInlineCommit(t, openMeta(t)) })
	t.Run("postgres", func(t *testing.T) {
		meta, err := metastore.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { meta.Close() })
		testInlineCommit(t, meta)
	})
}

func testInlineCommit(t *testing.T, meta *metastore.DB) {
	ctx := context.Background()
	store := objstore.NewMem()
	var (
		mu   sync.Mutex
		fail string // "before" or "after": fail the next commit-delta write
	)
	hooks := &Hooks{MetaWrite: func(op string, after bool) error {
		mu.Lock()
		defer mu.Unlock()
		if op == "commit-delta" && fail != "" && (fail == "after") == after {
			fail = ""
			return errors.New("injected failure")
		}
		return nil
	}}
	open := func() *Engine {
		return openEngine(t, store, meta, func(o *Options) { o.Hooks = hooks; o.InlineMaxBytes = 4 << 10 })
	}
	e := open()
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{}
	commit := func(e *Engine, epoch uint64, keys ...int) error {
		t.Helper()
		var kvs []KV
		for _, i := range keys {
			kvs = append(kvs, KV{Key: k(i), Value: []byte(fmt.Sprintf("v%d@%d", i, epoch))})
		}
		if err := e.Ingest(epoch, 1, kvs); err != nil {
			t.Fatal(err)
		}
		return e.Commit(ctx, epoch)
	}
	check := func(e *Engine, epoch uint64) {
		t.Helper()
		for i := range 300 {
			v, ok, err := e.Get(ctx, 1, k(i), epoch, ReadOptions{})
			if err != nil {
				t.Fatalf("key %d: %v", i, err)
			}
			if w, has := want[i]; ok != has || string(v) != w {
				t.Fatalf("key %d at epoch %d: %q %v, want %q %v", i, epoch, v, ok, w, has)
			}
		}
	}
	// The first commit allocates the inline ids (and uploads).
	if err := commit(e, 1, 1); err != nil {
		t.Fatal(err)
	}
	want[1] = "v1@1"
	objs := storeObjects(t, store)
	if err := commit(e, 2, 2, 3); err != nil {
		t.Fatal(err)
	}
	want[2], want[3] = "v2@2", "v3@2"
	if got := storeObjects(t, store); got != objs {
		t.Fatalf("a small commit wrote %d objects; want none (inline)", got-objs)
	}
	if n := inlineRows(t, meta); n != 1 {
		t.Fatalf("%d inline rows after one small commit; want 1", n)
	}
	check(e, 2)
	r := checkI1(t, store, meta)
	if r.Counts[ClassReferenced] < 2 {
		t.Fatalf("check: %s; want the inline SST counted as referenced", r.Summary())
	}

	// A commit whose delta write fails before it lands: no row, nothing
	// visible; the retry commits.
	mu.Lock()
	fail = "before"
	mu.Unlock()
	if err := commit(e, 3, 4); err == nil {
		t.Fatal("commit with a failing delta write succeeded")
	}
	if n := inlineRows(t, meta); n != 1 {
		t.Fatalf("%d inline rows after a failed commit; want 1", n)
	}
	check(e, 2)
	if err := e.Commit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	want[4] = "v4@3"
	// One whose write lands but reports an error: the re-read version
	// finds it (I2), and its row is there.
	mu.Lock()
	fail = "after"
	mu.Unlock()
	if err := commit(e, 4, 5); err != nil {
		t.Fatalf("ambiguous commit that landed: %v", err)
	}
	want[5] = "v5@4"
	if n := inlineRows(t, meta); n != 3 {
		t.Fatalf("%d inline rows; want 3", n)
	}
	check(e, 4)
	checkI1(t, store, meta)

	// A large commit uploads.
	big := make([]int, 0, 200)
	for i := 100; i < 300; i++ {
		big = append(big, i)
		want[i] = fmt.Sprintf("v%d@5", i)
	}
	objs = storeObjects(t, store)
	if err := commit(e, 5, big...); err != nil {
		t.Fatal(err)
	}
	if storeObjects(t, store) == objs || inlineRows(t, meta) != 3 {
		t.Fatalf("a commit over InlineMaxBytes: %d objects (was %d), %d inline rows", storeObjects(t, store), objs, inlineRows(t, meta))
	}

	// After a restart the inline SSTs are read from the metastore.
	e.Close()
	e = open()
	check(e, 5)

	// Compaction moves everything to the object store; GC drops the rows.
	if ran, err := e.Compact(ctx, true); err != nil || !ran {
		t.Fatalf("compaction: ran=%v err=%v", ran, err)
	}
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	if n := inlineRows(t, meta); n != 0 {
		t.Fatalf("%d inline rows after compaction and GC; want 0", n)
	}
	check(e, 5)
	checkExactlyReferenced(t, store, meta)

	// A referenced inline SST whose row is gone: a corruption error. (The
	// reopened engine's first commit allocates its inline ids.)
	if err := commit(e, 6, 6); err != nil {
		t.Fatal(err)
	}
	if err := commit(e, 7, 7); err != nil {
		t.Fatal(err)
	}
	want[6], want[7] = "v6@6", "v7@7"
	if n := inlineRows(t, meta); n != 1 {
		t.Fatalf("%d inline rows; want 1", n)
	}
	e.Close()
	if _, err := meta.Exec(ctx, `DELETE FROM storage_inline_objects`); err != nil {
		t.Fatal(err)
	}
	if r, err := Check(ctx, store, meta, 0); err != nil || r.OK() || len(r.Missing) != 1 {
		t.Fatalf("check with a lost inline row: %v %s missing %v; want one missing", err, r.Summary(), r.Missing)
	}
	e = open()
	_, _, err := e.Get(ctx, 1, k(7), 7, ReadOptions{})
	if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte("inline")) {
		t.Fatalf("read of a lost inline SST: %v; want ErrCorrupt naming it", err)
	}
}
