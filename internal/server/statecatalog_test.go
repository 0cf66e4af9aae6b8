package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/metasrv"
)

// A view whose re-planned state layout differs from the one stored at its
// creation is refused by the rebuild with an error naming it — never
// bound to its stored tables by position — while the other views and the
// tables keep working; the refusal is listed in rw_failed_jobs and SHOW
// JOBS, and the view can be dropped (issue 13 item 7). Without the layout
// check the perturbed plan would run over the stored state and the view
// would serve and maintain rows read with the wrong schema.
func TestStateLayoutChangeRefusesView(t *testing.T) {
	ctx := context.Background()
	ts, rel := layoutFixture(t, "moved", "CREATE MATERIALIZED VIEW moved AS SELECT g, sum(v) AS total FROM t GROUP BY g",
		"CREATE MATERIALIZED VIEW kept AS SELECT g, count(*) AS n FROM t GROUP BY g")
	if rel.StateLayout == nil || len(rel.StateLayout.Tables) != len(rel.StateTables) {
		t.Fatalf("stored layout of moved = %+v; want one entry per state table %v", rel.StateLayout, rel.StateTables)
	}
	ts.stop()

	// The "new version" lays the view's aggregate state out differently.
	perturb := func(rel *catalog.Relation, l *catalog.StateLayout) {
		if rel.Name == "moved" {
			last := &l.Tables[len(l.Tables)-1]
			last.Types = append(last.Types, "text")
		}
	}
	metasrv.LayoutHook.Store(&perturb)
	defer metasrv.LayoutHook.Store(nil)
	ts = startTestServer(t, ts.dataDir)
	conn := ts.connect(t)

	_, err := conn.Exec(ctx, "SELECT * FROM moved")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55000" || !strings.Contains(pgErr.Message, "materialized view moved cannot start") ||
		!strings.Contains(pgErr.Message, "plans its state differently") {
		t.Fatalf("SELECT from the view whose layout changed: %v; want 55000 naming it and the cause", err)
	}
	mustExec(t, conn, "INSERT INTO t VALUES (1000, 1, 5)")
	mustExec(t, conn, "FLUSH")
	got := queryStrings(t, conn, "SELECT g, n FROM kept ORDER BY g")
	want := queryStrings(t, conn, "SELECT g, count(*) FROM t GROUP BY g ORDER BY g")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the other view after restart = %v; its query = %v", got, want)
	}
	if got := queryStrings(t, conn, "SELECT name, kind FROM rw_catalog.rw_failed_jobs"); fmt.Sprint(got) != "[moved|materialized view]" {
		t.Fatalf("rw_failed_jobs = %v", got)
	}
	if got := queryStrings(t, conn, "SHOW JOBS"); len(got) != 1 || !strings.Contains(got[0], "MATERIALIZED VIEW moved|failed: ") {
		t.Fatalf("SHOW JOBS = %v", got)
	}
	mustExec(t, conn, "DROP MATERIALIZED VIEW moved")
	if got := queryStrings(t, conn, "SELECT count(*) FROM rw_catalog.rw_failed_jobs"); fmt.Sprint(got) != "[0]" {
		t.Fatalf("rw_failed_jobs after DROP = %v", got)
	}
	mustExec(t, conn, "CREATE MATERIALIZED VIEW moved AS SELECT g, sum(v) AS total FROM t GROUP BY g")
}

// A view stored without a layout (a data directory from before layouts
// were stored) still opens: the first rebuild records the planned layout,
// and later rebuilds compare with it (issue 13 item 7).
func TestStateLayoutRecordedOnFirstOpen(t *testing.T) {
	ctx := context.Background()
	ts, rel := layoutFixture(t, "old", "CREATE MATERIALIZED VIEW old AS SELECT g, max(v) AS hi FROM t GROUP BY g")
	legacy := *rel
	legacy.StateLayout = nil
	if err := ts.srv.catalog.UpdateRelation(ctx, &legacy); err != nil {
		t.Fatal(err)
	}
	ts.stop()

	ts = startTestServer(t, ts.dataDir)
	conn := ts.connect(t)
	mustExec(t, conn, "INSERT INTO t VALUES (1000, 1, 5000)")
	mustExec(t, conn, "FLUSH")
	got := queryStrings(t, conn, "SELECT g, hi FROM old ORDER BY g")
	want := queryStrings(t, conn, "SELECT g, max(v) FROM t GROUP BY g ORDER BY g")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("legacy view after restart = %v; its query = %v", got, want)
	}
	conn.Close(ctx)
	rel, err := ts.srv.catalog.RelationByName(viewSchema(t, ts), "old")
	if err != nil || rel.StateLayout == nil || rel.StateLayout.Fingerprint == "" {
		t.Fatalf("layout after the first open = %+v, %v; want it recorded", rel.StateLayout, err)
	}
	ts.stop()

	// The recorded layout is the one later rebuilds compare with.
	perturb := func(rel *catalog.Relation, l *catalog.StateLayout) { l.Tables[0].Key = append(l.Tables[0].Key, 0) }
	metasrv.LayoutHook.Store(&perturb)
	defer metasrv.LayoutHook.Store(nil)
	ts = startTestServer(t, ts.dataDir)
	conn = ts.connect(t)
	if _, err := conn.Exec(ctx, "SELECT * FROM old"); err == nil || !strings.Contains(err.Error(), "materialized view old cannot start") {
		t.Fatalf("SELECT after a layout change: %v; want the view refused", err)
	}
}

// layoutFixture starts a server with a table t (id, g, v) of 100 rows
// and the views, and returns it with the named view's catalog entry.
func layoutFixture(t *testing.T, name string, views ...string) (*testServer, *catalog.Relation) {
	t.Helper()
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	defer conn.Close(context.Background())
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, g INT, v INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i % 4, i FROM generate_series(1, 100) i")
	for _, v := range views {
		mustExec(t, conn, v)
	}
	mustExec(t, conn, "FLUSH")
	rel, err := ts.srv.catalog.RelationByName(viewSchema(t, ts), name)
	if err != nil {
		t.Fatal(err)
	}
	return ts, rel
}

func viewSchema(t *testing.T, ts *testServer) catalog.ObjectID {
	t.Helper()
	db, err := ts.srv.catalog.DatabaseByName(catalog.DefaultDatabase)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ts.srv.catalog.SchemaByName(db.ID, catalog.DefaultSchema)
	if err != nil {
		t.Fatal(err)
	}
	return sc.ID
}
