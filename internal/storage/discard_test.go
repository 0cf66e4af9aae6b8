package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
)

// TestDiscardUncommittedTables: one group's uncommitted data (buffered and
// spilled) is dropped while another group's same epoch commits; the
// dropped spill's objects are garbage-collected (I1: no leak), and a spill
// that mixes groups is refused without changing anything.
func TestDiscardUncommittedTables(t *testing.T) {
	ctx := context.Background()
	for _, grouped := range []bool{true, false} {
		t.Run(fmt.Sprintf("grouped=%v", grouped), func(t *testing.T) {
			store, meta := objstore.NewMem(), openMeta(t)
			e := openEngine(t, store, meta, func(o *Options) { o.WriteBufferBytes = 20 << 10 })
			if grouped {
				e.SetTableGroup(func(t TableID) uint64 { return uint64(t) / 10 }) // 11, 12 -> 1; 21 -> 2
			}
			if err := e.RegisterTables(ctx, 11, 12, 21); err != nil {
				t.Fatal(err)
			}
			put := func(epoch uint64, table TableID, n int, tag string) {
				t.Helper()
				var kvs []KV
				for i := range n {
					kvs = append(kvs, KV{Key: k(i), Value: fmt.Appendf(nil, "%s-%d-%d", tag, table, i)})
				}
				if err := e.Ingest(epoch, table, kvs); err != nil {
					t.Fatal(err)
				}
			}
			// Epoch 5: small writes to 21 and 12 stay buffered; the big one
			// to 11 spills all three together.
			put(5, 21, 100, "e5")
			put(5, 12, 100, "e5")
			put(5, 11, 400, "e5")
			put(6, 21, 3, "e6") // stays buffered
			put(6, 11, 3, "e6")
			e.mu.RLock()
			spilled := 0
			for _, it := range e.buf {
				if it.sst != nil {
					spilled++
				}
			}
			e.mu.RUnlock()
			if spilled == 0 {
				t.Fatal("nothing was spilled; the test does not exercise spills")
			}
			err := e.DiscardUncommittedTables([]TableID{21})
			if !grouped {
				if !errors.Is(err, ErrMixedSpill) {
					t.Fatalf("discard with mixed spills: %v; want ErrMixedSpill", err)
				}
				// Unchanged: table 21's data is still there uncommitted.
				if _, ok, err := e.Get(ctx, 21, k(1), 6, ReadOptions{}); err != nil || !ok {
					t.Fatalf("refused discard changed table 21: found=%v err=%v", ok, err)
				}
				e.DiscardUncommitted()
				checkExactlyReferencedAfterGC(t, e, store, meta)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Commit(ctx, 6); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				table TableID
				key   int
				want  string
			}{{11, 1, "e6-11-1"}, {11, 150, "e5-11-150"}, {12, 7, "e5-12-7"}, {21, 1, ""}, {21, 150, ""}} {
				v, ok, err := e.Get(ctx, c.table, k(c.key), 6, ReadOptions{CommittedOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				if got := map[bool]string{true: string(v)}[ok]; got != c.want {
					t.Fatalf("table %d key %d = %q; want %q", c.table, c.key, got, c.want)
				}
			}
			checkExactlyReferencedAfterGC(t, e, store, meta)
		})
	}
}

// checkExactlyReferencedAfterGC runs the deletion queue and checks that
// the store holds exactly the objects the version references.
func checkExactlyReferencedAfterGC(t *testing.T, e *Engine, store objstore.Store, meta *metastore.DB) {
	t.Helper()
	if _, err := e.RunGC(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkExactlyReferenced(t, store, meta)
}
