package recoverytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// windowPause pauses the first over-window kernel call over at least
// minRows rows after it is armed, until released or until the actor is
// aborted (the pause observes the actor's context, as every
// data-dependent loop must, I5).
type windowPause struct {
	minRows   int
	armed     atomic.Bool
	paused    chan struct{} // closed when the pause begins
	release   chan struct{} // closed by the test
	ended     chan string   // "released" or "aborted"
	once      sync.Once
	lifecycle *lifecycle
}

func newWindowPause(t testing.TB, l *lifecycle, minRows int) *windowPause {
	p := &windowPause{minRows: minRows, paused: make(chan struct{}), release: make(chan struct{}), ended: make(chan string, 1), lifecycle: l}
	remove := exec.SetOverWindowHook(p.hook)
	t.Cleanup(func() {
		remove()
		p.releaseOnce()
	})
	return p
}

var releaseMu sync.Mutex

func (p *windowPause) releaseOnce() {
	releaseMu.Lock()
	defer releaseMu.Unlock()
	select {
	case <-p.release:
	default:
		close(p.release)
	}
}

func (p *windowPause) hook(ctx context.Context, point, executor string, rows int) {
	if point != "compute" || rows < p.minRows || !p.armed.Load() {
		return
	}
	first := false
	p.once.Do(func() { first = true })
	if !first {
		return
	}
	p.lifecycle.mark("window actor paused in recompute of %d rows (%s)", rows, executor)
	close(p.paused)
	select {
	case <-p.release:
		p.lifecycle.mark("window actor released")
		p.ended <- "released"
	case <-ctx.Done():
		p.lifecycle.mark("window actor aborted while paused")
		p.ended <- "aborted"
	}
}

// raceSetup is the acceptance scenario's schema: t with 10,000 rows in
// partition 0 and 100 in partition 1, a window view over it and a second
// view (an aggregation) that must stay right.
type raceSetup struct {
	srv      *testServer
	in       server.Internals
	life     *lifecycle
	pause    *windowPause
	conn     *pgx.Conn
	mvTables []storage.TableID
	held     []string
}

const (
	mvJob     = "materialized view mv"
	aggQuery  = "SELECT p, count(*) AS n, sum(v) AS s, min(o) AS lo, max(o) AS hi FROM t GROUP BY p"
	mvQuery   = "SELECT p, o, v, sum(v) OVER w AS s, max(v) OVER w AS mx, min(v) OVER w AS mn, avg(v) OVER w AS a FROM t WINDOW w AS (PARTITION BY p ORDER BY o)"
	moveStmt  = "UPDATE t SET p = 0, v = 0 WHERE o = 50"
	raceLimit = 15 * time.Second
)

func setupRace(t *testing.T) *raceSetup {
	srv, in := startServer(t)
	r := &raceSetup{srv: srv, in: in, life: newLifecycle(), conn: srv.Connect(t)}
	r.life.install(t, in)
	r.pause = newWindowPause(t, r.life, 5000)
	mustExec(t, r.conn, "CREATE TABLE t (p INT, o INT, v INT, PRIMARY KEY (o))")
	mustExec(t, r.conn, "INSERT INTO t SELECT 0, i, i % 97 FROM generate_series(100001, 110000) g(i)")
	mustExec(t, r.conn, "INSERT INTO t SELECT 1, i, i FROM generate_series(1, 100) g(i)")
	mustExec(t, r.conn, "CREATE MATERIALIZED VIEW agg AS "+aggQuery)
	before := in.Store.Tables()
	mustExec(t, r.conn, "CREATE MATERIALIZED VIEW mv AS "+mvQuery)
	r.mvTables = newTables(before, in.Store.Tables())
	if len(r.mvTables) == 0 {
		t.Fatal("creating mv registered no state table")
	}
	r.life.own(mvJob, r.mvTables)
	mustExec(t, r.conn, "FLUSH")
	r.held = objectsHolding(t, in, r.mvTables)
	if got := mustQuery(t, r.conn, "SELECT count(*) FROM mv"); fmt.Sprint(got) != "[10100]" {
		t.Fatalf("mv rows before the race = %v", got)
	}
	return r
}

// startStmt runs sql on a new session in the background.
func startStmt(t *testing.T, srv *testServer, sql string) <-chan error {
	conn := srv.Connect(t)
	done := make(chan error, 1)
	go func() { done <- execErr(conn, sql) }()
	return done
}

// settle waits until done delivers (the statement finished), the window
// pause ends, or the barrier loop took a request of the given kind
// ("mutation" for a DROP, "recover" for RECOVER; see watchRequests): the
// statement sent on another session is then waiting on the loop, which
// waits on the paused actor. Correctness never depends on which of the
// three happens first; the assertions hold for every order.
func settle(t *testing.T, done <-chan error, pause *windowPause, reqs <-chan string, kind string) (error, bool) {
	t.Helper()
	timeout := time.After(raceLimit)
	for {
		select {
		case err := <-done:
			return err, true
		case s := <-pause.ended:
			pause.ended <- s
			return nil, false
		case k := <-reqs:
			if k == kind {
				return nil, false
			}
		case <-timeout:
			t.Fatalf("a statement neither finished nor reached the barrier loop (%s) within %v\nevents:\n  %s", kind, raceLimit, pause.lifecycle.dump())
		}
	}
}

// watchRequests delivers the kind of every request the barrier loop takes
// (meta.BarrierLoop.SetRequestHook) until the test ends.
func watchRequests(t *testing.T, in server.Internals) <-chan string {
	reqs := make(chan string, 64)
	t.Cleanup(in.Epochs.SetRequestHook(func(kind string) {
		select {
		case reqs <- kind:
		default:
		}
	}))
	return reqs
}

func waitStmt(t *testing.T, what string, done <-chan error, l *lifecycle) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(raceLimit):
		t.Fatalf("%s did not complete within %v\nevents:\n  %s", what, raceLimit, l.dump())
		return nil
	}
}

// checkAfterRace checks what must hold after the race, whatever the order
// of events: the server answers, mv is gone with its actors and state
// tables (unregistered only after every actor of it exited, and later
// collected), t holds the update exactly when it was acknowledged, and
// agg equals its query over t.
func (r *raceSetup) checkAfterRace(t *testing.T, updateAcked bool) {
	t.Helper()
	conn := r.srv.Connect(t)
	if err := execErr(conn, "SELECT * FROM mv"); sqlstate(err) != "42P01" {
		t.Errorf("SELECT from the dropped view: %v; want 42P01", err)
	}
	if n := r.life.liveActors(mvJob); n != 0 {
		t.Errorf("%d actors of the dropped view are still running", n)
	}
	for _, a := range r.in.Actors.Actors() {
		if a.Job == mvJob {
			t.Errorf("actor %d of the dropped view is still registered (%s)", a.ID, a.State)
		}
	}
	for _, id := range r.mvTables {
		if !r.life.unregistered(id) {
			t.Errorf("state table %d of the dropped view was never unregistered", id)
		}
		if slices.Contains(r.in.Store.Tables(), id) {
			t.Errorf("state table %d of the dropped view is still registered", id)
		}
	}
	r.life.check(t)
	want := "1|50"
	if updateAcked {
		want = "0|0"
	}
	if got := mustQuery(t, conn, "SELECT p, v FROM t WHERE o = 50"); fmt.Sprint(got) != "["+want+"]" {
		t.Errorf("row o = 50 after the race = %v; want %s (update acknowledged: %v)", got, want, updateAcked)
	}
	if got := mustQuery(t, conn, "SELECT count(*) FROM t"); fmt.Sprint(got) != "[10100]" {
		t.Errorf("t has %v rows; want 10100", got)
	}
	mustExec(t, conn, "FLUSH")
	got, want2 := mustQuery(t, conn, "SELECT * FROM agg"), mustQuery(t, conn, aggQuery)
	if !slices.Equal(got, want2) {
		t.Errorf("agg after the race: %s", diffRows(got, want2))
	}
	// The table and the surviving view go on being maintained.
	mustExec(t, conn, "UPDATE t SET v = v + 1 WHERE p = 1")
	mustExec(t, conn, "FLUSH")
	got, want2 = mustQuery(t, conn, "SELECT * FROM agg"), mustQuery(t, conn, aggQuery)
	if !slices.Equal(got, want2) {
		t.Errorf("agg after a later update: %s", diffRows(got, want2))
	}
	collectDropped(t, r.in, r.mvTables, r.held)
	if t.Failed() {
		t.Logf("events:\n  %s", r.life.dump())
	}
}

// The acceptance race of issue 6: an update moves a row into the 10,000-row
// partition; while the window actor is paused inside that partition's
// recompute, one session drops the view and another forces a recovery;
// then the pause is released.
func TestDropAndRecoverRaceWindowRecompute(t *testing.T) {
	r := setupRace(t)
	r.pause.armed.Store(true)
	upd := r.srv.Connect(t)
	mustExec(t, upd, moveStmt) // implicit_flush off: returns once applied
	select {
	case <-r.pause.paused:
	case <-time.After(raceLimit):
		t.Fatalf("the window actor never reached the recompute of partition 0\nevents:\n  %s", r.life.dump())
	}
	reqs := watchRequests(t, r.in)
	drop := startStmt(t, r.srv, "DROP MATERIALIZED VIEW mv")
	dropErr, dropDone := settle(t, drop, r.pause, reqs, "mutation")
	r.life.mark("DROP sent (done before RECOVER: %v)", dropDone)
	rec := startStmt(t, r.srv, "RECOVER")
	recErr, recDone := settle(t, rec, r.pause, reqs, "recover")
	r.life.mark("RECOVER sent (done before release: %v)", recDone)
	r.pause.releaseOnce()
	r.life.mark("pause released by the test")
	if !dropDone {
		dropErr = waitStmt(t, "DROP MATERIALIZED VIEW", drop, r.life)
	}
	if !recDone {
		recErr = waitStmt(t, "RECOVER", rec, r.life)
	}
	r.life.mark("DROP returned %v; RECOVER returned %v", dropErr, recErr)
	if dropErr != nil {
		t.Fatalf("DROP MATERIALIZED VIEW: %v\nevents:\n  %s", dropErr, r.life.dump())
	}
	if recErr != nil {
		t.Fatalf("RECOVER: %v\nevents:\n  %s", recErr, r.life.dump())
	}
	// The update was acknowledged only by the FLUSH of its session: it
	// either committed or was rolled back by the recovery (40001).
	flushErr := execErr(upd, "FLUSH")
	if flushErr != nil && sqlstate(flushErr) != "40001" {
		t.Fatalf("FLUSH of the updating session: %v", flushErr)
	}
	r.life.mark("FLUSH of the updating session: %v", flushErr)
	r.checkAfterRace(t, flushErr == nil)
	t.Logf("events:\n  %s", r.life.dump())
}

// pausedMove starts the race setup and runs the move while the window
// actor is held in its partition-0 recompute; it returns once the actor is
// paused, with the updating session.
func pausedMove(t *testing.T) (*raceSetup, *pgx.Conn) {
	t.Helper()
	r := setupRace(t)
	r.pause.armed.Store(true)
	upd := r.srv.Connect(t)
	mustExec(t, upd, moveStmt)
	select {
	case <-r.pause.paused:
	case <-time.After(raceLimit):
		t.Fatalf("the window actor never reached the recompute of partition 0\nevents:\n  %s", r.life.dump())
	}
	return r, upd
}

// checkAborted checks that the pause ended because the actor was aborted
// before what (DROP or RECOVER) returned.
func (r *raceSetup) checkAborted(t *testing.T, what string) {
	t.Helper()
	select {
	case s := <-r.pause.ended:
		if s != "aborted" {
			t.Fatalf("pause ended by %s; want aborted", s)
		}
	default:
		t.Fatalf("%s returned while the view's actor was still paused\nevents:\n  %s", what, r.life.dump())
	}
}

// DROP must not wait for a paused actor to finish its work (I5): the drop
// aborts the view's actors, whose context the pause observes. Nothing
// releases the pause here.
func TestDropAbortsPausedWindowActor(t *testing.T) {
	r, upd := pausedMove(t)
	drop := startStmt(t, r.srv, "DROP MATERIALIZED VIEW mv")
	if err := waitStmt(t, "DROP MATERIALIZED VIEW of a view whose actor is paused", drop, r.life); err != nil {
		t.Fatalf("DROP MATERIALIZED VIEW: %v\nevents:\n  %s", err, r.life.dump())
	}
	r.checkAborted(t, "DROP")
	flushErr := execErr(upd, "FLUSH")
	if flushErr != nil && sqlstate(flushErr) != "40001" {
		t.Fatalf("FLUSH of the updating session: %v", flushErr)
	}
	r.checkAfterRace(t, flushErr == nil)
}

// RECOVER must not wait for a paused actor either: reset aborts it.
func TestRecoverAbortsPausedWindowActor(t *testing.T) {
	r, upd := pausedMove(t)
	rec := startStmt(t, r.srv, "RECOVER")
	if err := waitStmt(t, "RECOVER while a window actor is paused", rec, r.life); err != nil {
		t.Fatalf("RECOVER: %v", err)
	}
	r.checkAborted(t, "RECOVER")
	flushErr := execErr(upd, "FLUSH")
	if sqlstate(flushErr) != "40001" {
		t.Fatalf("FLUSH of a session whose update the recovery rolled back: %v; want 40001", flushErr)
	}
	mustExec(t, r.conn, "FLUSH")
	got, want := mustQuery(t, r.conn, "SELECT * FROM mv"), mustQuery(t, r.conn, mvQuery)
	if !slices.Equal(got, want) {
		t.Errorf("mv after recovery: %s", diffRows(got, want))
	}
}
