package exec

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// GetBase reads a row as of the statement's start and keeps it: the
// statement's own writes do not change what it returns, and a later Get
// or Update of the row takes it from the writer instead of the state
// table (proved here by changing the table underneath, which a real
// statement never sees happen).
func TestTableWriterGetBase(t *testing.T) {
	h := newHarness(t)
	tbl := h.table(state.Schema{Name: "t", Types: []types.Type{types.Int64, types.Int64},
		PK: []int{0}, Desc: []bool{false}, DistKey: []int{0}})
	row := func(id, v int64) types.Row { return types.Row{types.DInt64(id), types.DInt64(v)} }
	key := func(id int64) types.Row { return types.Row{types.DInt64(id)} }
	tbl.Insert(row(1, 10))
	w := &TableWriter{t: tbl, overlay: map[string]*overlayEntry{}}
	show := func(r types.Row, found bool, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		if !found {
			return "none"
		}
		return fmt.Sprint(r[0].Int(), r[1].Int())
	}

	if got := show(w.GetBase(h.ctx, key(1))); got != "1 10" {
		t.Fatalf("GetBase(1) = %s; want 1 10", got)
	}
	tbl.Insert(row(1, 99)) // unseen by the statement: it read row 1 already
	if got := show(w.Get(h.ctx, row(1, 0))); got != "1 10" {
		t.Fatalf("Get(1) after GetBase = %s; want the kept 1 10", got)
	}
	if err := w.Update(h.ctx, row(1, 10), row(1, 11)); err != nil {
		t.Fatal(err)
	}
	if got := show(w.GetBase(h.ctx, key(1))); got != "1 10" {
		t.Fatalf("GetBase(1) after the statement's update = %s; want the start's 1 10", got)
	}
	if got := show(w.Get(h.ctx, row(1, 0))); got != "1 11" {
		t.Fatalf("Get(1) after the statement's update = %s; want 1 11", got)
	}
	if got := show(w.GetBase(h.ctx, key(2))); got != "none" {
		t.Fatalf("GetBase(2) = %s; want none", got)
	}
	if err := w.Insert(h.ctx, row(2, 20)); err != nil {
		t.Fatal(err)
	}
	if got := show(w.Get(h.ctx, row(2, 0))); got != "2 20" {
		t.Fatalf("Get(2) after insert = %s; want 2 20", got)
	}
	if _, ok := tbl.EncodePK(nil, types.Row{}); ok {
		t.Fatal("EncodePK of an empty key: ok; want not ok")
	}
	if _, _, err := w.GetBase(h.ctx, types.Row{}); err == nil {
		t.Fatal("GetBase of an empty key: no error")
	}
	if _, err := w.commit(h.ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]string{1: "1 11", 2: "2 20"} {
		if got := show(tbl.Get(h.ctx, key(id))); got != want {
			t.Errorf("after commit, row %d = %s; want %s", id, got, want)
		}
	}
}

// countingStore is a state.Store that holds nothing and counts reads.
type countingStore struct{ gets, iters int }

func (s *countingStore) IngestContext(context.Context, uint64, storage.TableID, []storage.KV) error {
	return nil
}
func (s *countingStore) Get(context.Context, storage.TableID, []byte, uint64, storage.ReadOptions) ([]byte, bool, error) {
	s.gets++
	return nil, false, nil
}
func (s *countingStore) Iter(context.Context, storage.TableID, []byte, []byte, uint64, storage.ReadOptions) (storage.Iterator, error) {
	s.iters++
	return nil, errors.New("countingStore: no iteration")
}

// Append (a time-series table in append mode) reads nothing: no
// existence check per row, and the same row twice is kept twice under
// its two keys. Insert, by contrast, reads each key (the 23505 check) and
// Upsert replaces.
func TestTableWriterAppendReadsNothing(t *testing.T) {
	store := &countingStore{}
	tbl := state.New(1, state.Schema{Name: "t", Types: []types.Type{types.Int64, types.Int64},
		PK: []int{1}, Desc: []bool{false}, DistKey: []int{1}}, store, 1)
	w := NewTableWriter(tbl)
	for i := range 100 {
		w.Append(types.Row{types.DInt64(7), types.DInt64(int64(i))})
	}
	if store.gets != 0 || store.iters != 0 {
		t.Fatalf("Append read the store: %d gets, %d iterations; want none", store.gets, store.iters)
	}
	if n := w.changes.Len(); n != 100 {
		t.Fatalf("Append staged %d inserts; want 100", n)
	}
	if err := w.Insert(context.Background(), types.Row{types.DInt64(7), types.DInt64(1000)}); err != nil {
		t.Fatal(err)
	}
	if store.gets != 1 {
		t.Fatalf("Insert made %d reads; want 1 (the existence check)", store.gets)
	}
	if err := w.Upsert(context.Background(), types.Row{types.DInt64(8), types.DInt64(1000)}); err != nil {
		t.Fatal(err)
	}
	if o := w.overlay[w.key(types.Row{types.NullDatum, types.DInt64(1000)})]; o == nil || o.row[0].Int() != 8 {
		t.Fatalf("Upsert did not replace the row with the same key: %v", o)
	}
}
