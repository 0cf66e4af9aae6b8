package recoverytest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
)

const crashLoopDropLimit = 5 * time.Second

// waitRecoveries waits until the server has recorded at least n
// recoveries.
func waitRecoveries(t *testing.T, in server.Internals, n int, limit time.Duration) []time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		recs := in.Epochs.Recoveries()
		if len(recs) >= n {
			starts := make([]time.Time, len(recs))
			for i, r := range recs {
				starts[i] = r.Start
			}
			return starts
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d recoveries after %v; want at least %d", len(recs), limit, n)
		}
		time.Sleep(10 * time.Millisecond) // polling a counter, not ordering a race
	}
}

// A view whose actor fails at every start keeps its database recovering,
// with growing pauses between attempts; dropping it completes within a few
// seconds, its state tables are purged only once none of its actors runs,
// the recoveries stop and the other view is right.
func TestDropCrashLoopingView(t *testing.T) {
	srv, in := startServer(t)
	life := newLifecycle()
	life.install(t, in)
	conn := srv.Connect(t)
	mustExec(t, conn, "CREATE TABLE t (k INT PRIMARY KEY, g INT, v INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i % 7, i FROM generate_series(1, 2000) i")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW good AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g")
	before := in.Store.Tables()
	mustExec(t, conn, "CREATE MATERIALIZED VIEW bad AS SELECT g, max(v) AS m FROM t GROUP BY g")
	badTables := newTables(before, in.Store.Tables())
	life.own("materialized view bad", badTables)
	mustExec(t, conn, "FLUSH")
	held := objectsHolding(t, in, badTables)

	base := len(in.Epochs.Recoveries())
	disarm := stream.ArmFailpoint(stream.Failpoint{Job: "materialized view bad", Times: -1})
	defer disarm()
	starts := waitRecoveries(t, in, base+4, 20*time.Second)[base:]
	gaps := make([]time.Duration, 0, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]))
	}
	t.Logf("recoveries of the crash loop started %v apart", gaps)
	if last := gaps[len(gaps)-1]; last < 50*time.Millisecond {
		t.Errorf("crash loop recovers without backoff: gaps %v", gaps)
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), crashLoopDropLimit)
	_, err := conn.Exec(ctx, "DROP MATERIALIZED VIEW bad")
	cancel()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("DROP MATERIALIZED VIEW of a crash-looping view (after %v): %v\nevents:\n  %s", took, err, life.dump())
	}
	t.Logf("DROP of the crash-looping view took %v", took)
	life.check(t)
	for _, id := range badTables {
		if slices.Contains(in.Store.Tables(), id) {
			t.Errorf("state table %d of the dropped view is still registered", id)
		}
	}
	if n := life.liveActors("materialized view bad"); n != 0 {
		t.Errorf("%d actors of the dropped view still run", n)
	}
	if fired := disarm(); fired == 0 {
		t.Errorf("the failpoint never fired")
	}

	// The database is serving again: DML and FLUSH succeed (retrying while
	// the last rebuild is still pending) ...
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := execErr(conn, "INSERT INTO t VALUES (5000, 1, 5000)")
		if err == nil {
			break
		}
		if sqlstate(err) != "55000" || time.Now().After(deadline) {
			t.Fatalf("INSERT after dropping the crash-looping view: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // waiting out the rebuild backoff
	}
	mustExec(t, conn, "FLUSH")
	// ... and no recovery happens any more.
	settled := len(in.Epochs.Recoveries())
	for i := range 10 {
		mustExec(t, conn, fmt.Sprintf("UPDATE t SET v = v + 1 WHERE k = %d", i+1))
		mustExec(t, conn, "FLUSH")
	}
	if n := len(in.Epochs.Recoveries()); n != settled {
		t.Errorf("%d recoveries after the crash-looping view was dropped", n-settled)
	}
	got, want := mustQuery(t, conn, "SELECT * FROM good"), mustQuery(t, conn, "SELECT g, count(*), sum(v) FROM t GROUP BY g")
	if !slices.Equal(got, want) {
		t.Errorf("the other view after the crash loop: %s", diffRows(got, want))
	}
	if err := execErr(conn, "SELECT * FROM bad"); sqlstate(err) != "42P01" {
		t.Errorf("SELECT from the dropped view: %v; want 42P01", err)
	}
	collectDropped(t, in, badTables, held)
}

// CREATE MATERIALIZED VIEW while the database is crash-looping returns
// promptly (created or refused, never half there), and once the broken view
// is dropped the new view can be created and is right.
func TestCreateDuringCrashLoop(t *testing.T) {
	srv, in := startServer(t)
	conn := srv.Connect(t)
	mustExec(t, conn, "CREATE TABLE t (k INT PRIMARY KEY, g INT, v INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i % 7, i FROM generate_series(1, 2000) i")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW bad AS SELECT g, max(v) AS m FROM t GROUP BY g")
	mustExec(t, conn, "FLUSH")
	base := len(in.Epochs.Recoveries())
	disarm := stream.ArmFailpoint(stream.Failpoint{Job: "materialized view bad", Times: -1})
	defer disarm()
	waitRecoveries(t, in, base+2, 20*time.Second)

	const q = "SELECT g, count(*) AS n FROM t GROUP BY g"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	start := time.Now()
	_, err := conn.Exec(ctx, "CREATE MATERIALIZED VIEW late AS "+q)
	timedOut := ctx.Err() != nil
	cancel()
	t.Logf("CREATE during the crash loop returned after %v: %v", time.Since(start), err)
	if timedOut {
		t.Fatalf("CREATE during a crash loop did not return within 5s")
	}
	conn2 := srv.Connect(t)
	exists := execErr(conn2, "SELECT * FROM late") == nil
	if err == nil && !exists {
		t.Fatalf("CREATE succeeded but the view does not exist")
	}
	if err != nil && exists {
		t.Fatalf("CREATE failed (%v) but the view exists", err)
	}
	mustExec(t, conn2, "DROP MATERIALIZED VIEW bad")
	disarm()
	if !exists {
		retryDDL(t, conn2, "CREATE MATERIALIZED VIEW late AS "+q)
	}
	mustExec(t, conn2, "FLUSH")
	got, want := mustQuery(t, conn2, "SELECT * FROM late"), mustQuery(t, conn2, q)
	if !slices.Equal(got, want) {
		t.Errorf("view created after the crash loop: %s", diffRows(got, want))
	}
}

// retryDDL runs a statement until it stops failing with 55000 (the
// database is still being rebuilt after a backoff).
func retryDDL(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := execErr(conn, sql)
		if err == nil {
			return
		}
		if sqlstate(err) != "55000" || time.Now().After(deadline) {
			t.Fatalf("%s: %v", sql, err)
		}
		time.Sleep(20 * time.Millisecond) // waiting out the rebuild backoff
	}
}

// Cancelling a CREATE MATERIALIZED VIEW whose backfill is in progress
// while a recovery is requested: the statement fails, the view never
// appears, its state tables are purged only once its actors are joined
// (I3), and the data they held is collected; the same view can then be
// created.
func TestCancelCreateDuringRecovery(t *testing.T) {
	srv, in := startServer(t)
	life := newLifecycle()
	life.install(t, in)
	pause := newWindowPause(t, life, 5000)
	conn := srv.Connect(t)
	mustExec(t, conn, "CREATE TABLE t (p INT, o INT, v INT, PRIMARY KEY (o))")
	mustExec(t, conn, "INSERT INTO t SELECT 0, i, i % 97 FROM generate_series(100001, 110000) g(i)")
	mustExec(t, conn, "FLUSH")

	before := in.Store.Tables()
	pause.armed.Store(true)
	creator := srv.Connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	created := make(chan error, 1)
	go func() {
		_, err := creator.Exec(ctx, "CREATE MATERIALIZED VIEW mv AS "+mvQuery)
		created <- err
	}()
	select {
	case <-pause.paused:
	case err := <-created:
		t.Fatalf("CREATE returned before its backfill reached the window recompute: %v", err)
	case <-time.After(raceLimit):
		t.Fatalf("the backfill never reached the window recompute\nevents:\n  %s", life.dump())
	}
	mvTables := newTables(before, in.Store.Tables())
	life.own(mvJob, mvTables)
	reqs := watchRequests(t, in)
	rec := startStmt(t, srv, "RECOVER")
	recErr, recDone := settle(t, rec, pause, reqs, "recover")
	life.mark("RECOVER sent (done before cancel: %v)", recDone)
	cancel()
	life.mark("CREATE cancelled by the client")
	createErr, createDone := settle(t, created, pause, reqs, "mutation")
	pause.releaseOnce()
	life.mark("pause released by the test")
	if !createDone {
		createErr = waitStmt(t, "cancelled CREATE MATERIALIZED VIEW", created, life)
	}
	if !recDone {
		recErr = waitStmt(t, "RECOVER", rec, life)
	}
	life.mark("CREATE returned %v; RECOVER returned %v", createErr, recErr)
	if createErr == nil {
		t.Fatalf("the cancelled CREATE succeeded\nevents:\n  %s", life.dump())
	}
	if recErr != nil {
		t.Fatalf("RECOVER: %v", recErr)
	}
	check := srv.Connect(t)
	if err := execErr(check, "SELECT * FROM mv"); sqlstate(err) != "42P01" {
		t.Errorf("SELECT from the cancelled view: %v; want 42P01", err)
	}
	if names := mustQuery(t, check, "SELECT matviewname FROM pg_matviews"); len(names) != 0 {
		t.Errorf("views after the cancelled CREATE: %v", names)
	}
	// The client stops waiting at once when it cancels; the server cleans
	// up on its own. Wait (bounded) for the purge, then check its order.
	var leftover []storage.TableID
	for deadline := time.Now().Add(10 * time.Second); ; {
		leftover = leftover[:0]
		for _, id := range mvTables {
			if slices.Contains(in.Store.Tables(), id) {
				leftover = append(leftover, id)
			}
		}
		if len(leftover) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling for the server's cleanup
	}
	if len(leftover) > 0 {
		t.Errorf("state tables %v of the cancelled view are still registered 10s after the cancel", leftover)
	}
	life.check(t)
	if n := life.liveActors(mvJob); n != 0 {
		t.Errorf("%d actors of the cancelled view still run", n)
	}
	collectDropped(t, in, mvTables, nil)
	pause.armed.Store(false)
	retryDDL(t, check, "CREATE MATERIALIZED VIEW mv AS "+mvQuery)
	mustExec(t, check, "FLUSH")
	got, want := mustQuery(t, check, "SELECT * FROM mv"), mustQuery(t, check, mvQuery)
	if !slices.Equal(got, want) {
		t.Errorf("mv created again after the cancelled creation: %s", diffRows(got, want))
	}
	if t.Failed() {
		t.Logf("events:\n  %s", life.dump())
	}
}
