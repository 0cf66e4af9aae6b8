package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/storage"
)

// Dropping a view unregisters its state tables only after its actors are
// joined (I3); compaction then removes their data and GC their objects,
// leaving every object owned (I1) and nothing referenced missing.
func TestDroppedViewStateIsCollected(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, g INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i % 10 FROM generate_series(1, 2000) i")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW c AS SELECT g, count(*) AS n FROM t GROUP BY g")
	mustExec(t, conn, "FLUSH")
	s := ts.srv
	rel := mustRelation(t, s, "c")
	viewTables := rel.StateTables
	mustExec(t, conn, "DROP MATERIALIZED VIEW c")
	registered := map[storage.TableID]bool{}
	for _, id := range s.store.Tables() {
		registered[id] = true
	}
	for _, id := range viewTables {
		if registered[storage.TableID(id)] {
			t.Fatalf("state table %d of the dropped view is still registered", id)
		}
	}
	// Its rows are gone from every read path (I4) ...
	snap := s.store.Snapshot()
	_, err := snap.Iter(context.Background(), storage.TableID(rel.StateTable), nil, nil, storage.ReadOptions{})
	snap.Close()
	if err == nil {
		t.Fatal("reading a dropped view's state table succeeded; want 'has been dropped'")
	}
	// ... and after compaction and GC no object is unowned or missing.
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := s.store.Compact(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.store.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := storage.Check(ctx, s.objects, s.metaDB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("storage check after drop: %s", rep.Summary())
	}
	// The table and its data are unaffected.
	if got := queryStrings(t, conn, "SELECT count(*) FROM t"); fmt.Sprint(got) != "[2000]" {
		t.Fatalf("table after dropping its view: %v", got)
	}
}
