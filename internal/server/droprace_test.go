package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/metasrv"
)

// execIn runs sql on conn in the background and delivers its error.
func execIn(conn *pgx.Conn, sql string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := conn.Exec(ctx, sql)
		done <- err
	}()
	return done
}

// I3: a DROP that runs while a recovery's rebuild is between its list of
// relations and its per-view checks must not get the dropped view
// rebuilt over state tables it unregistered (its actors would fail and
// force a second recovery, failing unrelated writes with 40001). The
// rebuild is paused right after its list; the DROP runs; the rebuild goes
// on.
func TestDropDuringRebuildWindow(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "CREATE TABLE u (id INT PRIMARY KEY)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i FROM generate_series(1, 100) i")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW mv AS SELECT v % 3 AS g, count(*) AS n FROM t GROUP BY v % 3")
	mustExec(t, conn, "FLUSH")
	s := ts.srv
	mv := mustRelation(t, s, "mv")
	recoveriesBefore := len(s.epochs.Recoveries())

	paused, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	pause := func() {
		once.Do(func() {
			close(paused)
			<-release
		})
	}
	metasrv.RebuildSnapshotHook.Store(&pause)
	dropWaits := make(chan struct{})
	var waitOnce sync.Once
	onDropWait := func(id catalog.ObjectID) {
		if id == mv.ID {
			waitOnce.Do(func() { close(dropWaits) })
		}
	}
	metasrv.DropAwaitsRebuildHook.Store(&onDropWait)
	t.Cleanup(func() {
		metasrv.RebuildSnapshotHook.Store(nil)
		metasrv.DropAwaitsRebuildHook.Store(nil)
	})

	rec := execIn(ts.connect(t), "RECOVER")
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the rebuild never reached its pause")
	}
	drop := execIn(ts.connect(t), "DROP MATERIALIZED VIEW mv")
	// The DROP either completes inside the window (what the race needs)
	// or waits for the rebuild to end (what linearising them does).
	var dropErr error
	dropDone := false
	select {
	case dropErr = <-drop:
		dropDone = true
	case <-dropWaits:
	case <-time.After(30 * time.Second):
		t.Fatal("DROP neither completed nor waited for the rebuild")
	}
	close(release)
	if err := <-rec; err != nil {
		t.Fatalf("RECOVER: %v", err)
	}
	if !dropDone {
		dropErr = <-drop
	}
	if dropErr != nil {
		t.Fatalf("DROP MATERIALIZED VIEW: %v", dropErr)
	}
	rebuilt := s.compute.HasView(mv.ID)
	if rebuilt {
		t.Fatal("the rebuild brought back the view dropped during it")
	}
	for _, a := range s.actors.Actors() {
		if a.Job == "materialized view mv" {
			t.Fatalf("actor %d of the dropped view runs (%s)", a.ID, a.State)
		}
	}
	// An unrelated write and its FLUSH succeed, and no second recovery ran.
	mustExec(t, conn, "INSERT INTO u VALUES (1)")
	mustExec(t, conn, "FLUSH")
	if n := len(s.epochs.Recoveries()) - recoveriesBefore; n != 1 {
		t.Fatalf("%d recoveries ran; want 1 (the RECOVER): %+v", n, s.epochs.Recoveries()[recoveriesBefore:])
	}
	if _, ok := s.catalog.Relation(mv.ID); ok {
		t.Fatal("the dropped view is still in the catalog")
	}
}

// I6: a panic while a recovery plans one view's rebuild fails that view
// alone: the recovery completes, the table and the other view are
// maintained, and the broken view can be dropped.
func TestRebuildPanicFailsOneView(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW good AS SELECT count(*) AS n FROM t")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW bad AS SELECT sum(v) AS s FROM t")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 10)")
	mustExec(t, conn, "FLUSH")
	hook := func(view string) {
		if view == "bad" {
			panic("injected planner bug")
		}
	}
	metasrv.RebuildViewHook.Store(&hook)
	t.Cleanup(func() { metasrv.RebuildViewHook.Store(nil) })
	mustExec(t, conn, "RECOVER")
	metasrv.RebuildViewHook.Store(nil)
	mustExec(t, conn, "INSERT INTO t VALUES (2, 20)")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT n FROM good"); fmt.Sprint(got) != "[2]" {
		t.Fatalf("good after the rebuild = %v; want [2]", got)
	}
	bad := mustRelation(t, ts.srv, "bad")
	running := ts.srv.compute.HasView(bad.ID)
	if running {
		t.Fatal("the view whose rebuild panicked runs")
	}
	mustExec(t, conn, "DROP MATERIALIZED VIEW bad")
	mustExec(t, conn, "INSERT INTO t VALUES (3, 30)")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT n FROM good"); fmt.Sprint(got) != "[3]" {
		t.Fatalf("good after dropping bad = %v; want [3]", got)
	}
}
