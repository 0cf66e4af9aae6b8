package recoverytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// stuckRead is the state the blocked actor reports: what a recovery that
// abandons it must name.
var stuckRead = "test: reading a block from a disk that ignores cancellation"

// stuckWindowActor installs an over-window hook that blocks the first
// kernel call after armed is closed until unblock is called,
// ignoring the actor's context: an actor stuck in I/O that cancellation
// cannot interrupt (a hung NFS read, a cgo call). entered is closed when
// it blocks, exited when it returns.
type stuckWindowActor struct {
	armed            chan struct{}
	entered, release chan struct{}
	exited           chan struct{}
	once, released   sync.Once
}

func (s *stuckWindowActor) unblock() { s.released.Do(func() { close(s.release) }) }

func newStuckWindowActor(t *testing.T) *stuckWindowActor {
	s := &stuckWindowActor{armed: make(chan struct{}), entered: make(chan struct{}), release: make(chan struct{}), exited: make(chan struct{})}
	remove := exec.SetOverWindowHook(func(ctx context.Context, point, executor string, rows int) {
		if point != "compute" {
			return
		}
		select {
		case <-s.armed:
		default:
			return
		}
		first := false
		s.once.Do(func() { first = true })
		if !first {
			return
		}
		stream.ReportState(ctx, &stuckRead)
		close(s.entered)
		<-s.release // deliberately not ctx.Done()
		close(s.exited)
	})
	t.Cleanup(func() {
		remove()
		s.unblock()
	})
	return s
}

// Issue 13 item 8, end to end: a view's actor is stuck in a call that
// ignores cancellation when RECOVER runs. The recovery's wait for it is
// bounded by --actor-stop-timeout (server.Config.ActorStopTimeout), the
// actor is reported (rw_recovery_history.abandoned and the recovery
// record name its job, fragment, executor and what it was doing) and
// abandoned, and the recovery escalates: it fences the epochs the old
// generation could write and builds a fresh one, so the server goes on
// committing and the view stays right, also after the stuck call returns
// and the abandoned actor tries to go on (its writes are fenced, I3, I7).
// Without the bound RECOVER hangs until the call returns, which here is
// never: the test would fail at stmtTimeout.
func TestRecoveryStuckActorThroughServer(t *testing.T) {
	const stopTimeout = 300 * time.Millisecond
	srv, in := startServer(t, func(c *server.Config) { c.ActorStopTimeout = stopTimeout })
	stuck := newStuckWindowActor(t)
	conn := srv.Connect(t)
	const view = "SELECT p, o, v, sum(v) OVER (PARTITION BY p ORDER BY o) AS s FROM t"
	mustExec(t, conn, "CREATE TABLE t (p INT, o INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i % 3, i, i FROM generate_series(1, 60) i")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW w AS "+view)
	mustExec(t, conn, "CREATE MATERIALIZED VIEW agg AS SELECT p, count(*) AS n FROM t GROUP BY p")
	mustExec(t, conn, "FLUSH")

	close(stuck.armed)
	mustExec(t, conn, "INSERT INTO t VALUES (1, 1000, 7)") // acknowledged by the table actor; never FLUSHed
	select {
	case <-stuck.entered:
	case <-time.After(stmtTimeout):
		t.Fatal("the window actor never reached the stuck call")
	}
	// rw_actors shows the stuck actor, what it is doing, and the call it
	// is stuck in (its await tree: the over-window executor's kernel
	// called the hook).
	if got := mustQuery(t, conn, "SELECT job, state, waiting_on FROM rw_catalog.rw_actors WHERE state = '"+stuckRead+"'"); len(got) != 1 ||
		!strings.HasPrefix(got[0], "materialized view w|") || !strings.Contains(got[0], "(*OverWindow).") || !strings.Contains(got[0], "newStuckWindowActor.func1 (stuck_test.go:") {
		t.Fatalf("rw_actors for the stuck actor = %v; want one actor of w in state %q waiting in the hook the over-window executor called", got, stuckRead)
	}
	t.Logf("rw_actors: %v", mustQuery(t, conn, "SELECT actor_id, job, state, waiting_on FROM rw_catalog.rw_actors"))

	start := time.Now()
	if err := execErr(srv.Connect(t), "RECOVER"); err != nil {
		t.Fatalf("RECOVER with an actor stuck in non-cancellable I/O: %v", err)
	}
	took := time.Since(start)
	t.Logf("RECOVER took %v with an actor stuck (stop timeout %v)", took, stopTimeout)
	if took < stopTimeout || took > stream.DefaultStopTimeout {
		t.Fatalf("RECOVER took %v; want the configured stop timeout %v (plus the rebuild), not the default %v", took, stopTimeout, stream.DefaultStopTimeout)
	}
	select {
	case <-stuck.exited:
		t.Fatal("the stuck call returned before the test released it")
	default:
	}

	// The recovery names the abandoned actor and what it was doing.
	rows := mustQuery(t, conn, "SELECT abandoned FROM rw_catalog.rw_recovery_history WHERE abandoned IS NOT NULL")
	if len(rows) != 1 || !strings.Contains(rows[0], "materialized view w") || !strings.Contains(rows[0], stuckRead) || !strings.Contains(rows[0], "Materialize(w") {
		t.Fatalf("rw_recovery_history.abandoned = %q; want one recovery naming the actor of materialized view w, its executor and %q", rows, stuckRead)
	}
	ab := in.Actors.Abandoned()
	if len(ab) != 1 || ab[0].State != stuckRead || !strings.Contains(ab[0].Stack, "newStuckWindowActor") {
		t.Fatalf("abandoned actors %+v; want the stuck one with its stack", ab)
	}

	// The write the recovery discarded was never FLUSHed: the session's
	// FLUSH says it was lost (I7). The fresh generation commits, and the
	// views equal their queries.
	if err := execErr(conn, "FLUSH"); sqlstate(err) != "40001" {
		t.Fatalf("FLUSH of the write the recovery rolled back: %v; want 40001", err)
	}
	next := 2000
	check := func(when string) {
		t.Helper()
		next++
		mustExec(t, conn, fmt.Sprintf("INSERT INTO t VALUES (%d, %d, %d)", next%3, next, next))
		mustExec(t, conn, "UPDATE t SET v = v + 1 WHERE o = 30")
		mustExec(t, conn, "FLUSH")
		for _, q := range [][2]string{{"SELECT * FROM w", view}, {"SELECT * FROM agg", "SELECT p, count(*) FROM t GROUP BY p"}} {
			if got, want := mustQuery(t, conn, q[0]), mustQuery(t, conn, q[1]); !slices.Equal(got, want) {
				t.Fatalf("%s %s: %s", q[0], when, diffRows(got, want))
			}
		}
	}
	check("after the recovery")

	// The stuck call returns: the abandoned actor runs on against an
	// epoch that was fenced; nothing of it reaches committed state.
	stuck.unblock()
	<-stuck.exited
	for i := 0; i < 3; i++ {
		check(fmt.Sprintf("after the abandoned actor was released (round %d)", i))
	}
}
