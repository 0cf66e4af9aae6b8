package state

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

// IterFrom and IterBefore (whose memtable side is read in batches of
// memCursorBatch entries; partitions here hold up to 300) must see the memtable merged with ingested and
// committed data exactly as Iter does, from a key forward and backward.
func TestRangeIterMatchesIter(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	e := openEngine(t)
	const id = storage.TableID(9)
	if err := e.RegisterTables(ctx, id); err != nil {
		t.Fatal(err)
	}
	schema := Schema{Name: "range", Types: []types.Type{types.Int64, types.Int32, types.Varchar}, PK: []int{0, 1}, Desc: []bool{false, true}, DistKey: []int{0}}
	epoch := uint64(1 << 16)
	tbl := New(id, schema, e, epoch)
	keys := func(rows []types.Row) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r.String()
		}
		return out
	}
	for round := 0; round < 6; round++ {
		for i := 0; i < 400; i++ {
			r := types.Row{types.DInt64(int64(rng.Intn(3))), types.DInt32(int32(rng.Intn(300))), types.DVarchar(fmt.Sprint(round, i))}
			if rng.Intn(3) == 0 {
				tbl.Delete(r)
			} else {
				tbl.Insert(r)
			}
		}
		if round%2 == 1 {
			if err := tbl.Commit(epoch + 1); err != nil {
				t.Fatal(err)
			}
			if round%4 == 1 {
				if err := e.Commit(ctx, epoch); err != nil {
					t.Fatal(err)
				}
			}
			epoch++
		}
		for p := int64(0); p < 3; p++ {
			it, err := tbl.Iter(ctx, types.Row{types.DInt64(p)})
			if err != nil {
				t.Fatal(err)
			}
			var all []types.Row
			for it.Next() {
				all = append(all, it.Row())
			}
			it.Close()
			for b := int32(-1); b <= 300; b += 1 + int32(rng.Intn(9)) {
				probe := types.Row{types.DInt64(p), types.DInt32(b), types.NullDatum}
				// rows at or after probe in key order (b descending)
				var wantFrom, wantBefore []types.Row
				for _, r := range all {
					if r[1].Int() <= int64(b) {
						wantFrom = append(wantFrom, r)
					} else {
						wantBefore = append(wantBefore, r)
					}
				}
				slices.Reverse(wantBefore)
				fit, err := tbl.IterFrom(ctx, types.Row{types.DInt64(p)}, probe)
				if err != nil {
					t.Fatal(err)
				}
				var gotFrom []types.Row
				for fit.Next() {
					gotFrom = append(gotFrom, fit.Row())
				}
				fit.Close()
				rit, err := tbl.IterBefore(ctx, types.Row{types.DInt64(p)}, probe)
				if err != nil {
					t.Fatal(err)
				}
				var gotBefore []types.Row
				for rit.Next() {
					gotBefore = append(gotBefore, rit.Row())
				}
				if err := rit.Err(); err != nil {
					t.Fatal(err)
				}
				rit.Close()
				if !slices.Equal(keys(gotFrom), keys(wantFrom)) || !slices.Equal(keys(gotBefore), keys(wantBefore)) {
					t.Fatalf("seed %d round %d partition %d probe %d:\nfrom   %v\nwant   %v\nbefore %v\nwant   %v", seed, round, p, b, keys(gotFrom), keys(wantFrom), keys(gotBefore), keys(wantBefore))
				}
			}
		}
	}
}
