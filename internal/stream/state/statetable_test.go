package state

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

func openEngine(t *testing.T) *storage.Engine {
	t.Helper()
	ctx := context.Background()
	db, err := metastore.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e, err := storage.Open(ctx, storage.Options{Store: objstore.NewMem(), Meta: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// seededEngine returns a test's seed (RUNNEL_TEST_SEED replays it, and
// it is logged), its generator, and an engine with table 7 registered.
func seededEngine(t *testing.T) (int64, *rand.Rand, *storage.Engine) {
	t.Helper()
	seed := rand.Int63()
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (set RUNNEL_TEST_SEED to replay)", seed)
	e := openEngine(t)
	if err := e.RegisterTables(context.Background(), storage.TableID(7)); err != nil {
		t.Fatal(err)
	}
	return seed, rand.New(rand.NewSource(seed)), e
}

// A state table must read back its own uncommitted writes merged with
// what earlier epochs ingested and committed: the memtable shadows the
// store, deletes hide stored rows, and iteration is in key order within a
// vnode. Checked against a map model over random operations.
func TestStateTableMatchesModel(t *testing.T) {
	seed, rng, e := seededEngine(t)
	ctx := context.Background()
	const id = storage.TableID(7)
	schema := Schema{Name: "test", Types: []types.Type{types.Int64, types.Int32, types.Varchar}, PK: []int{0, 1}, DistKey: []int{0}}
	epoch := uint64(1 << 16)
	tbl := New(id, schema, e, epoch)
	model := map[[2]int64]string{}
	for step := 0; step < 2000; step++ {
		a, b := int64(rng.Intn(5)), int64(rng.Intn(40))
		row := types.Row{types.DInt64(a), types.DInt32(int32(b)), types.DVarchar(fmt.Sprint(step))}
		switch rng.Intn(10) {
		case 0, 1, 2:
			tbl.Delete(row)
			delete(model, [2]int64{a, b})
		case 3:
			next := epoch + 1
			if err := tbl.Commit(next); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if rng.Intn(2) == 0 {
				if err := e.Commit(ctx, epoch); err != nil {
					t.Fatalf("seed %d: commit: %v", seed, err)
				}
			}
			epoch = next
		default:
			tbl.Insert(row)
			model[[2]int64{a, b}] = fmt.Sprint(step)
		}
		if step%50 != 0 {
			continue
		}
		// Point reads.
		for k, want := range model {
			got, ok, err := tbl.Get(ctx, types.Row{types.DInt64(k[0]), types.DInt32(int32(k[1]))})
			if err != nil || !ok || got[2].Str() != want {
				t.Fatalf("seed %d step %d: get %v = %v, %v, %v; want %q", seed, step, k, got, ok, err, want)
			}
		}
		// Prefix scans per partition key, in pk order.
		for a := int64(0); a < 5; a++ {
			it, err := tbl.Iter(ctx, types.Row{types.DInt64(a)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for it.Next() {
				r := it.Row()
				got = append(got, fmt.Sprintf("%d/%d=%s", r[0].Int(), r[1].Int(), r[2].Str()))
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			it.Close()
			var want []string
			var bs []int64
			for k := range model {
				if k[0] == a {
					bs = append(bs, k[1])
				}
			}
			sort.Slice(bs, func(i, j int) bool { return bs[i] < bs[j] })
			for _, b := range bs {
				want = append(want, fmt.Sprintf("%d/%d=%s", a, b, model[[2]int64{a, b}]))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d step %d: scan a=%d\n got %v\nwant %v", seed, step, a, got, want)
			}
		}
	}
}

// A unique violation names the constraint and the key, as PostgreSQL does.
func TestUniqueViolationMessage(t *testing.T) {
	schema := Schema{Name: "t", Types: []types.Type{types.Int32, types.Varchar}, PK: []int{0},
		ColumnNames: []string{"id", "v"}, ConstraintName: "t_pkey"}
	tbl := New(1, schema, nil, 1)
	err := tbl.UniqueViolation(types.Row{types.DInt32(5), types.DVarchar("x")})
	want := `duplicate key value violates unique constraint "t_pkey"`
	if err == nil || err.Error() == "" {
		t.Fatal("no error")
	}
	if got := err.Error(); got != want && !contains(got, want) {
		t.Fatalf("error = %q; want %q", got, want)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// A point read that must go to storage fails at once on an aborted
// context (I5): executors doing one read per row stop within one row.
func TestGetObservesCancellation(t *testing.T) {
	ctx := context.Background()
	e := openEngine(t)
	const id = storage.TableID(9)
	if err := e.RegisterTables(ctx, id); err != nil {
		t.Fatal(err)
	}
	schema := Schema{Name: "test", Types: []types.Type{types.Int64}, PK: []int{0}, DistKey: []int{0}}
	tbl := New(id, schema, e, 1<<16)
	tbl.Insert(types.Row{types.DInt64(1)})
	if err := tbl.Commit(2 << 16); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := tbl.Get(cctx, types.Row{types.DInt64(1)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get on a cancelled context: %v; want context.Canceled", err)
	}
	if _, found, err := tbl.Get(ctx, types.Row{types.DInt64(1)}); err != nil || !found {
		t.Fatalf("Get: found=%v err=%v", found, err)
	}
}

// recordingStore keeps what each commit ingested.
type recordingStore struct {
	*storage.Engine
	ingested [][]storage.KV
}

func (s *recordingStore) IngestContext(ctx context.Context, epoch uint64, table storage.TableID, kvs []storage.KV) error {
	s.ingested = append(s.ingested, kvs)
	return s.Engine.IngestContext(ctx, epoch, table, kvs)
}

// A commit hands the engine each key once, ascending, with its newest
// write — whether the write was still in the table's write log or had
// been merged into its memtable by a read (a key in both: the log's
// write is newer).
func TestCommitIngestsNewestWritePerKey(t *testing.T) {
	seed, rng, e := seededEngine(t)
	ctx := context.Background()
	const id = storage.TableID(7)
	st := &recordingStore{Engine: e}
	schema := Schema{Name: "test", Types: []types.Type{types.Int64, types.Varchar}, PK: []int{0}}
	tbl := New(id, schema, st, 1<<16)
	want := map[int64]string{}
	for step := 0; step < 3000; step++ {
		k := int64(rng.Intn(500))
		switch {
		case rng.Intn(4) == 0:
			tbl.Delete(types.Row{types.DInt64(k), types.NullDatum})
			want[k] = "deleted"
		default:
			tbl.Insert(types.Row{types.DInt64(k), types.DVarchar(fmt.Sprint(step))})
			want[k] = fmt.Sprint(step)
		}
		if rng.Intn(300) == 0 { // a read merges the log into the memtable
			if _, _, err := tbl.Get(ctx, types.Row{types.DInt64(k)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tbl.Commit(1<<16 + 1); err != nil {
		t.Fatal(err)
	}
	if len(st.ingested) != 1 || len(st.ingested[0]) != len(want) {
		t.Fatalf("seed %d: ingested %d batches; want one of %d keys", seed, len(st.ingested), len(want))
	}
	var prev []byte
	for _, kv := range st.ingested[0] {
		if prev != nil && string(kv.Key) <= string(prev) {
			t.Fatalf("seed %d: keys not strictly ascending: %x after %x", seed, kv.Key, prev)
		}
		prev = kv.Key
		k, _, err := types.DecodeKey(kv.Key[2:], types.Int64, false, false)
		if err != nil {
			t.Fatal(err)
		}
		got := "deleted"
		if !kv.Delete {
			row, err := types.DecodeValueRow(kv.Value, schema.Types, nil)
			if err != nil {
				t.Fatal(err)
			}
			got = row[1].Str()
		}
		if got != want[k.Int()] {
			t.Fatalf("seed %d: key %d ingested %q; want %q", seed, k.Int(), got, want[k.Int()])
		}
	}
}
