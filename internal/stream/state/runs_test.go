package state

import (
	"context"
	"fmt"
	"testing"

	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

// withFreezeLen makes mem a run every n entries for one test, so that the
// model tests read through many runs (mem, runs and log together).
func withFreezeLen(t *testing.T, n int) {
	old := memFreezeLen
	memFreezeLen = n
	t.Cleanup(func() { memFreezeLen = old })
}

// The model tests again with runs of a few entries: point reads, prefix
// scans, scans from a key forward and backward, and commits must see
// mem, every run and the log merged, the newest write of a key winning.
func TestStateTableRunsMatchModel(t *testing.T) {
	withFreezeLen(t, 7)
	t.Run("model", TestStateTableMatchesModel)
	t.Run("range", TestRangeIterMatchesIter)
	t.Run("commit", TestCommitIngestsNewestWritePerKey)
}

// CommitDeferred moves the table to the next epoch without handing its
// writes over (a backfill's writes reach the engine as one run): the
// table still reads them back, the engine has received nothing, and the
// next CommitContext hands over every write of the deferred epochs at
// once, each key with its newest write. Past MaxDeferredBytes it hands
// over as CommitContext does.
func TestCommitDeferredKeepsWrites(t *testing.T) {
	withFreezeLen(t, 16)
	_, _, e := seededEngine(t)
	ctx := context.Background()
	st := &recordingStore{Engine: e}
	schema := Schema{Name: "test", Types: []types.Type{types.Int64, types.Varchar}, PK: []int{0}}
	epoch := uint64(1 << 16)
	tbl := New(storage.TableID(7), schema, st, epoch)
	row := func(k int64, v string) types.Row { return types.Row{types.DInt64(k), types.DVarchar(v)} }
	for ep := 0; ep < 3; ep++ {
		for k := int64(0); k < 100; k++ {
			tbl.Insert(row(k, fmt.Sprint(ep)))
		}
		tbl.Delete(row(int64(ep), ""))
		epoch++
		if err := tbl.CommitDeferred(ctx, epoch); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.ingested) != 0 {
		t.Fatalf("CommitDeferred handed over %d batches; want none", len(st.ingested))
	}
	if tbl.Epoch() != epoch {
		t.Fatalf("epoch %d; want %d", tbl.Epoch(), epoch)
	}
	for k := int64(0); k < 100; k++ {
		got, ok, err := tbl.Get(ctx, types.Row{types.DInt64(k)})
		if err != nil {
			t.Fatal(err)
		}
		if k == 2 { // deleted in the last epoch
			if ok {
				t.Fatalf("key 2 reads %v; want deleted", got)
			}
			continue
		}
		if !ok || got[1].Str() != "2" {
			t.Fatalf("key %d reads %v, %v; want the last epoch's write", k, got, ok)
		}
	}
	if err := tbl.CommitContext(ctx, epoch+1); err != nil {
		t.Fatal(err)
	}
	if len(st.ingested) != 1 || len(st.ingested[0]) != 100 {
		t.Fatalf("commit after deferral ingested %d batches; want one of 100 keys", len(st.ingested))
	}
	for i, kv := range st.ingested[0] {
		if i > 0 && string(kv.Key) <= string(st.ingested[0][i-1].Key) {
			t.Fatalf("keys not ascending at %d", i)
		}
		if kv.Delete != (i == 2) {
			t.Fatalf("key %d: delete %v", i, kv.Delete)
		}
	}

	old := MaxDeferredBytes
	MaxDeferredBytes = 1000
	t.Cleanup(func() { MaxDeferredBytes = old })
	for k := int64(0); k < 100; k++ {
		tbl.Insert(row(k, "big"))
	}
	if err := tbl.CommitDeferred(ctx, epoch+2); err != nil {
		t.Fatal(err)
	}
	if len(st.ingested) != 2 {
		t.Fatalf("CommitDeferred past MaxDeferredBytes ingested %d batches in all; want 2", len(st.ingested))
	}
}
