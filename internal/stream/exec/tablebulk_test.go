package exec

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

var bulkSchema = state.Schema{Name: "t", Types: []types.Type{types.Int64, types.Int64},
	PK: []int{0}, Desc: []bool{false}, DistKey: []int{0}, ConstraintName: "t_pkey", ColumnNames: []string{"id", "v"}}

func bulkRows(ids ...int64) []types.Row {
	rows := make([]types.Row, len(ids))
	for i, id := range ids {
		rows[i] = types.Row{types.DInt64(id), types.DInt64(id * 10)}
	}
	return rows
}

func seq(lo, hi int64) []int64 {
	var ids []int64
	for i := lo; i < hi; i++ {
		ids = append(ids, i)
	}
	return ids
}

func encodeBulk(t *testing.T, rows []types.Row) *InsertBatch {
	t.Helper()
	b, err := EncodeInsertBatch(context.Background(), state.New(0, bulkSchema, nil, 0), rows, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func isUniqueViolation(err error) bool {
	var se *sqlerr.Error
	return errors.As(err, &se) && se.Code == sqlerr.UniqueViolation
}

// A bulk batch stores every row under the key the row-at-a-time path
// would, keeps the change stream in statement order, and makes the rows
// readable through the state table (uncommitted engine data) once the
// statement applies.
func TestInsertBatchStoresRows(t *testing.T) {
	h := newHarness(t)
	tbl := h.table(bulkSchema)
	ids := seq(0, 20000)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	rows := bulkRows(ids...)
	w := &TableWriter{t: tbl, overlay: map[string]*overlayEntry{}}
	if err := w.InsertBatch(h.ctx, encodeBulk(t, rows)); err != nil {
		t.Fatal(err)
	}
	chunks, err := w.commit(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, c := range chunks {
		for j, r := range c.Rows {
			if c.Ops[j] != types.OpInsert || r[0].Int() != ids[i] {
				t.Fatalf("change %d = %v %v; want insert of %d (statement order)", i, c.Ops[j], r, ids[i])
			}
			i++
		}
	}
	if i != len(ids) {
		t.Fatalf("%d changes; want %d", i, len(ids))
	}
	if tbl.BufferedLen() != 0 {
		t.Fatalf("memtable holds %d entries; want 0 (the batch goes to the engine as one run)", tbl.BufferedLen())
	}
	for _, id := range []int64{0, 1, 12345, 19999} {
		r, found, err := tbl.Get(h.ctx, types.Row{types.DInt64(id)})
		if err != nil || !found || r[1].Int() != id*10 {
			t.Fatalf("Get(%d) = %v, %v, %v; want the row", id, r, found, err)
		}
	}
	if err := tbl.Commit(h.epoch + 1); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Commit(h.ctx, h.epoch); err != nil {
		t.Fatal(err)
	}
	it, err := tbl.Iter(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	if n != len(ids) {
		t.Fatalf("after commit the table holds %d rows; want %d", n, len(ids))
	}
}

// Keys already taken — in storage, in the memtable, in the same batch, in
// an earlier batch of the statement — are unique violations; keys the
// memtable deleted are free again. Each case is checked in a table where
// the whole-range seek finds rows, so the per-vnode groups and their
// point-read fallback decide.
func TestInsertBatchUniqueViolations(t *testing.T) {
	h := newHarness(t)
	tbl := h.table(bulkSchema)
	w := &TableWriter{t: tbl, overlay: map[string]*overlayEntry{}}
	if err := w.InsertBatch(h.ctx, encodeBulk(t, bulkRows(seq(0, 1000)...))); err != nil {
		t.Fatal(err)
	}
	if _, err := w.commit(h.ctx); err != nil {
		t.Fatal(err)
	}
	tbl.Insert(bulkRows(5000)[0]) // in the memtable
	tbl.Delete(bulkRows(500)[0])  // deleted in the memtable: free
	tbl.Delete(bulkRows(1500)[0]) // a tombstone for a key never stored
	cases := []struct {
		name string
		ids  []int64
		ok   bool
	}{
		{"appended after the stored keys", seq(1000, 3000), true},
		{"one stored key among new ones", append(seq(2000, 2100), 999), false},
		{"a key the memtable holds", append(seq(4000, 4100), 5000), false},
		{"a key the memtable deleted", append(seq(6000, 6100), 500, 1500), true},
		{"small groups (point reads)", []int64{7, 100000}, false},
	}
	for _, c := range cases {
		w := &TableWriter{t: tbl, overlay: map[string]*overlayEntry{}}
		err := w.InsertBatch(h.ctx, encodeBulk(t, bulkRows(c.ids...)))
		if c.ok && err != nil || !c.ok && !isUniqueViolation(err) {
			t.Fatalf("%s: InsertBatch = %v; want ok=%v (else 23505)", c.name, err, c.ok)
		}
	}
	if _, err := EncodeInsertBatch(h.ctx, state.New(0, bulkSchema, nil, 0), bulkRows(append(seq(0, 10000), 77)...), false); !isUniqueViolation(err) {
		t.Fatalf("a key twice in one batch: %v; want 23505", err)
	}
	w = &TableWriter{t: tbl, overlay: map[string]*overlayEntry{}}
	if err := w.InsertBatch(h.ctx, encodeBulk(t, bulkRows(seq(10000, 10100)...))); err != nil {
		t.Fatal(err)
	}
	if err := w.InsertBatch(h.ctx, encodeBulk(t, bulkRows(seq(10050, 10150)...))); !isUniqueViolation(err) {
		t.Fatalf("a key of the statement's earlier batch: %v; want 23505", err)
	}
}

// The statement's own later writes win over its batch, and the batch wins
// over what earlier statements left in the memtable: commit hands the
// memtable over first, then the batch, then the statement's row-at-a-time
// writes. Without that order the memtable's tombstone of key 3 (handed
// over at the barrier, after the batch's run) would delete the row the
// batch inserted, and the statement's delete of key 4 would lose to the
// batch.
func TestInsertBatchWriteOrder(t *testing.T) {
	h := newHarness(t)
	tbl := h.table(bulkSchema)
	tbl.Insert(bulkRows(3)[0])
	if err := tbl.Commit(h.epoch + 1); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Commit(h.ctx, h.epoch); err != nil {
		t.Fatal(err)
	}
	h.epoch++
	tbl.Delete(bulkRows(3)[0]) // an earlier statement of this epoch
	w := &TableWriter{t: tbl, overlay: map[string]*overlayEntry{}}
	rows := bulkRows(seq(0, 100)...)
	if err := w.InsertBatch(h.ctx, encodeBulk(t, rows)); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Delete(h.ctx, rows[4]); err != nil || !ok {
		t.Fatalf("Delete of a row the statement's batch inserted = %v, %v; want found", ok, err)
	}
	if _, err := w.commit(h.ctx); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Commit(h.epoch + 1); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Commit(h.ctx, h.epoch); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]bool{3: true, 4: false, 5: true} {
		_, found, err := tbl.Get(h.ctx, types.Row{types.DInt64(id)})
		if err != nil || found != want {
			t.Fatalf("after commit, Get(%d) found=%v (%v); want %v", id, found, err, want)
		}
	}
}

// Generated keys (a table without a declared key) are not checked at all,
// and a batch encoded for another layout (an ALTER TABLE the actor has
// seen since) is inserted row by row.
func TestInsertBatchSkipsChecks(t *testing.T) {
	store := &countingStore{}
	tbl := state.New(1, bulkSchema, store, 1)
	w := &TableWriter{t: tbl, overlay: map[string]*overlayEntry{}}
	b, err := EncodeInsertBatch(context.Background(), state.New(0, bulkSchema, nil, 0), bulkRows(seq(0, 1000)...), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.InsertBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if store.gets != 0 || store.iters != 0 {
		t.Fatalf("generated keys were checked: %d gets, %d iterations; want none", store.gets, store.iters)
	}
	other := bulkSchema
	other.Types = []types.Type{types.Int64, types.Int32}
	b, err = EncodeInsertBatch(context.Background(), state.New(0, other, nil, 0), bulkRows(seq(0, 10)...), false)
	if err != nil {
		t.Fatal(err)
	}
	w = &TableWriter{t: tbl, overlay: map[string]*overlayEntry{}}
	if err := w.InsertBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if store.gets != 10 || len(w.bulk) != 0 {
		t.Fatalf("a batch of another layout: %d gets, %d batches staged; want 10 point reads, none staged", store.gets, len(w.bulk))
	}
}
