package exec

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// versionedTable is an upstream relation's history: the value of each key
// after each epoch.
type versionedTable struct {
	versions map[string][]version // key -> ascending epochs
}

type version struct {
	epoch uint64
	val   int64
	live  bool
}

func (v *versionedTable) set(key string, epoch uint64, val int64, live bool) {
	v.versions[key] = append(v.versions[key], version{epoch, val, live})
}

func (v *versionedTable) at(key string, epoch uint64) (int64, bool) {
	var out version
	for _, ver := range v.versions[key] {
		if ver.epoch <= epoch {
			out = ver
		}
	}
	return out.val, out.live
}

func (v *versionedTable) reader() SnapshotReader {
	return func(ctx context.Context, after []byte, epoch uint64, limit int) ([]types.Row, []byte, bool, error) {
		keys := make([]string, 0, len(v.versions))
		for k := range v.versions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var rows []types.Row
		var last []byte
		for _, k := range keys {
			if after != nil && k <= string(after) {
				continue
			}
			val, live := v.at(k, epoch)
			if !live {
				continue
			}
			if len(rows) == limit {
				return rows, last, false, nil
			}
			rows = append(rows, types.Row{types.DVarchar(k), types.DInt64(val)})
			last = []byte(k)
		}
		return rows, last, true, nil
	}
}

// A view created while its upstream keeps changing must end up equal to
// the upstream, whatever the interleaving of snapshot reads and changes.
func TestBackfillConvergesUnderConcurrentChanges(t *testing.T) {
	seed := rand.Int63()
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	for iter := 0; iter < 50; iter++ {
		runBackfillCase(t, seed+int64(iter))
	}
}

func runBackfillCase(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	vt := &versionedTable{versions: map[string][]version{}}
	cur := map[string]int64{}
	epoch := uint64(1)
	// Existing rows before the backfill starts.
	for i := 0; i < rng.Intn(3000); i++ {
		k := fmt.Sprintf("k%05d", rng.Intn(5000))
		cur[k] = int64(i)
		vt.set(k, epoch, int64(i), true)
	}
	up := make(chan stream.Message, 1024)
	bf := NewBackfill("test", 1, []types.Type{types.Varchar, types.Int64}, up, vt.reader(), func(r types.Row) []byte { return []byte(r[0].Str()) })
	ctx := context.Background()

	// The barrier that connects the backfill ends epoch 1.
	up <- stream.Message{Barrier: &stream.Barrier{Prev: epoch, Curr: epoch + 1}}
	epoch++
	view := map[string]int64{}
	apply := func(m stream.Message) {
		if m.Chunk == nil {
			return
		}
		for i, r := range m.Chunk.Rows {
			k := r[0].Str()
			if m.Chunk.Ops[i].IsInsert() {
				if _, dup := view[k]; dup {
					t.Fatalf("seed %d: insert of %s which the view has", seed, k)
				}
				view[k] = r[1].Int()
			} else {
				if got, ok := view[k]; !ok || got != r[1].Int() {
					t.Fatalf("seed %d: delete of %s=%d; view has %d,%v", seed, k, r[1].Int(), got, ok)
				}
				delete(view, k)
			}
		}
	}
	for step := 0; step < 400 || !bf.Finished.Load(); step++ {
		if step > 100000 {
			t.Fatalf("seed %d: backfill never finished", seed)
		}
		switch rng.Intn(6) {
		case 0: // barrier
			up <- stream.Message{Barrier: &stream.Barrier{Prev: epoch, Curr: epoch + 1}}
			epoch++
		case 1, 2: // a change upstream in the current epoch
			k := fmt.Sprintf("k%05d", rng.Intn(5000))
			c := &types.Chunk{}
			old, exists := cur[k]
			switch {
			case exists && rng.Intn(2) == 0:
				c.Append(types.OpDelete, types.Row{types.DVarchar(k), types.DInt64(old)})
				delete(cur, k)
				vt.set(k, epoch, 0, false)
			case exists:
				nv := rng.Int63n(1000)
				c.Append(types.OpUpdateDelete, types.Row{types.DVarchar(k), types.DInt64(old)})
				c.Append(types.OpUpdateInsert, types.Row{types.DVarchar(k), types.DInt64(nv)})
				cur[k] = nv
				vt.set(k, epoch, nv, true)
			default:
				nv := rng.Int63n(1000)
				c.Append(types.OpInsert, types.Row{types.DVarchar(k), types.DInt64(nv)})
				cur[k] = nv
				vt.set(k, epoch, nv, true)
			}
			up <- stream.Message{Chunk: c}
		default: // let the backfill work
			for i := 0; i < rng.Intn(4)+1; i++ {
				if len(up) == 0 && bf.done {
					break
				}
				m, err := bf.Next(ctx)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				apply(m)
			}
		}
	}
	// Drain: a final barrier makes every buffered change visible.
	up <- stream.Message{Barrier: &stream.Barrier{Prev: epoch, Curr: epoch + 1}}
	for {
		m, err := bf.Next(ctx)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		apply(m)
		if m.Barrier != nil && m.Barrier.Prev == epoch {
			break
		}
	}
	if fmt.Sprint(view) != fmt.Sprint(cur) {
		t.Fatalf("seed %d (RUNNEL_TEST_SEED to replay): view != upstream\n view %d rows\n upstream %d rows", seed, len(view), len(cur))
	}
}
