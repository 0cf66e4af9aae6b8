package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
)

func openMeta(t testing.TB) *metastore.DB {
	t.Helper()
	db, err := metastore.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openEngine(t testing.TB, store objstore.Store, meta *metastore.DB, mod func(*Options)) *Engine {
	t.Helper()
	o := Options{Store: store, Meta: meta, DisableAutoCompaction: true, GCInterval: -1}
	if mod != nil {
		mod(&o)
	}
	e, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// uploadOnly turns inline commits off, for tests of the object-store path
// of a commit.
func uploadOnly(o *Options) { o.InlineMaxBytes = -1 }

func k(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

func TestIngestCommitGetIter(t *testing.T) {
	noLeaks(t)
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, nil)
	if err := e.RegisterTables(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	var kvs []KV
	for i := 99; i >= 0; i-- {
		kvs = append(kvs, KV{Key: k(i), Value: []byte(fmt.Sprintf("v1-%d", i))})
	}
	kvs = append(kvs, KV{Key: k(5), Value: []byte("later wins")})
	if err := e.Ingest(1, 1, kvs); err != nil {
		t.Fatal(err)
	}
	// Uncommitted read sees epoch 1; committed-only does not.
	if v, ok, err := e.Get(ctx, 1, k(5), 1, ReadOptions{}); err != nil || !ok || string(v) != "later wins" {
		t.Fatalf("uncommitted get: got %q %v %v", v, ok, err)
	}
	if _, ok, err := e.Get(ctx, 1, k(5), 1, ReadOptions{CommittedOnly: true}); err != nil || ok {
		t.Fatalf("committed-only get before commit: found=%v err=%v", ok, err)
	}
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := e.CommittedEpoch(); got != 1 {
		t.Fatalf("committed epoch %d; want 1", got)
	}
	if err := e.Ingest(2, 1, []KV{{Key: k(7), Delete: true}, {Key: k(8), Value: []byte("v2-8")}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	check := func(e *Engine, minEpoch uint64) {
		t.Helper()
		for _, c := range []struct {
			key   int
			epoch uint64
			want  string
		}{{5, 1, "later wins"}, {7, 1, "v1-7"}, {7, 2, ""}, {8, 1, "v1-8"}, {8, 2, "v2-8"}, {50, 2, "v1-50"}} {
			if c.epoch < minEpoch {
				continue
			}
			v, ok, err := e.Get(ctx, 1, k(c.key), c.epoch, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if (c.want == "") == ok || string(v) != c.want {
				t.Fatalf("get %d@%d: got %q,%v; want %q", c.key, c.epoch, v, ok, c.want)
			}
		}
		it, err := e.Iter(ctx, 1, k(5), k(10), 2, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		want := "[key000005=later wins key000006=v1-6 key000008=v2-8 key000009=v1-9]"
		if fmt.Sprint(got) != want {
			t.Fatalf("iter: got %v; want %s", got, want)
		}
		it, err = e.Iter(ctx, 1, k(5), k(10), 2, ReadOptions{Reverse: true})
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		for it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		it.Close()
		want = "[key000009=v1-9 key000008=v2-8 key000006=v1-6 key000005=later wins]"
		if fmt.Sprint(got) != want {
			t.Fatalf("reverse iter: got %v; want %s", got, want)
		}
	}
	check(e, 0)
	// Compact everything and check again.
	for {
		ran, err := e.Compact(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			break
		}
		if len(e.cur.Levels[0]) == 0 && len(e.cur.Levels[1]) > 0 {
			break
		}
	}
	check(e, 2)
	// Reopen from the metastore.
	e.Close()
	e2 := openEngine(t, store, meta, nil)
	if e2.CommittedEpoch() != 2 {
		t.Fatalf("reopened committed epoch %d; want 2", e2.CommittedEpoch())
	}
	check(e2, 2)
	if _, err := e2.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, store, meta, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Counts[ClassQueued] != 0 || r.Counts[ClassJobOwned] != 0 {
		t.Fatalf("check after gc: %s", r.Summary())
	}
	t.Log(r.Summary())
	t.Log(e2.cur.String())
}

func TestDroppedTableReads(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, nil)
	if err := e.RegisterTables(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := e.Ingest(1, 3, []KV{{Key: k(1), Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	it, err := e.Iter(ctx, 3, nil, nil, 1, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap := e.Snapshot()
	defer snap.Close()
	if err := e.UnregisterTables(ctx, 3); err != nil {
		t.Fatal(err)
	}
	want := "table 3 has been dropped"
	checkErr := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, ErrTableDropped) || err.Error() != want {
			t.Fatalf("%s: got %v; want %q", name, err, want)
		}
	}
	_, _, err = e.Get(ctx, 3, k(1), 1, ReadOptions{})
	checkErr("Get", err)
	_, _, err = e.Get(ctx, 3, k(1), 1, ReadOptions{CommittedOnly: true})
	checkErr("Get committed", err)
	_, err = e.Iter(ctx, 3, nil, nil, 1, ReadOptions{})
	checkErr("Iter", err)
	_, err = e.Iter(ctx, 3, nil, nil, 1, ReadOptions{Reverse: true})
	checkErr("Iter reverse", err)
	_, _, err = snap.Get(ctx, 3, k(1))
	checkErr("Snapshot.Get", err)
	_, err = snap.Iter(ctx, 3, nil, nil, ReadOptions{})
	checkErr("Snapshot.Iter", err)
	if it.Next() {
		t.Fatal("open iterator returned a row of a dropped table")
	}
	checkErr("open Iterator.Next", it.Err())
	it.Close()
	_, _, err = e.Get(ctx, 99, k(1), 1, ReadOptions{})
	if !errors.Is(err, ErrTableDropped) {
		t.Fatalf("unknown table: got %v", err)
	}
	err = e.Ingest(2, 3, []KV{{Key: k(1), Value: []byte("y")}})
	checkErr("Ingest", err)
	// Reopen: still dropped (I4: the unregistration is durable, so a
	// restarted engine refuses the table's reads and writes too).
	snap.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := openEngine(t, store, meta, nil)
	if slices.Contains(e2.Tables(), 3) {
		t.Fatalf("reopened engine lists dropped table 3: %v", e2.Tables())
	}
	_, _, err = e2.Get(ctx, 3, k(1), e2.CommittedEpoch(), ReadOptions{})
	checkErr("Get after reopen", err)
	_, err = e2.Iter(ctx, 3, nil, nil, e2.CommittedEpoch(), ReadOptions{})
	checkErr("Iter after reopen", err)
	err = e2.Ingest(e2.CommittedEpoch()+1, 3, []KV{{Key: k(1), Value: []byte("z")}})
	checkErr("Ingest after reopen", err)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
