package sinktest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestExactlyOnceAcrossCrashes: a Runnel subprocess sinks an append-only
// table into a PostgreSQL table without a key (a duplicate delivery would
// show as a duplicate row) and an aggregation view into an upsert target,
// while a writer inserts and FLUSHes; the server is, in turn, RECOVERed,
// killed with SIGKILL at a random moment, and stopped with SIGTERM and
// restarted. At the end the append-only target holds every row of the
// table exactly once (no duplicates, no gaps) and the upsert target equals
// the view (I8, with the target's progress row). RUNNEL_SINK_CRASH_ITERS
// sets the number of rounds (default 3).
func TestExactlyOnceAcrossCrashes(t *testing.T) {
	iters := 3
	if v := os.Getenv("RUNNEL_SINK_CRASH_ITERS"); v != "" {
		iters, _ = strconv.Atoi(v)
	}
	sd := seed(t)
	r := rand.New(rand.NewPCG(sd, 3))
	target, pg := targetDB(t)
	ctx := context.Background()
	mustExec(t, pg, "CREATE TABLE ev (id int, g int, v int)")
	mustExec(t, pg, "CREATE TABLE agg (g int PRIMARY KEY, n bigint, s bigint)")

	bin := servertest.BuildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "runnel.log")
	start := func() (*servertest.Process, *pgx.Conn) {
		p := servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: dir, LogPath: logPath})
		p.WaitReady(t, 60*time.Second)
		conn, err := pgx.Connect(ctx, p.URL())
		if err != nil {
			t.Fatal(err)
		}
		return p, conn
	}
	p, rw := start()
	mustExec(t, rw, "CREATE TABLE ev (id int, g int, v int) APPEND ONLY")
	mustExec(t, rw, "CREATE MATERIALIZED VIEW agg AS SELECT g, count(*) AS n, sum(v) AS s FROM ev GROUP BY g")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK ev_sink FROM ev WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'ev', type = 'append-only')`, jdbcURL(t, target)))
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK agg_sink FROM agg WITH (connector = 'postgres', jdbc.url = '%s', table.name = 'agg', type = 'upsert', primary_key = 'g')`, jdbcURL(t, target)))

	var next atomic.Int64 // the next id to insert
	for i := 0; i < iters; i++ {
		// A writer inserting batches until the server goes away.
		stop := make(chan struct{})
		done := make(chan struct{})
		wconn, err := pgx.Connect(ctx, p.URL())
		if err != nil {
			t.Fatal(err)
		}
		wr := rand.New(rand.NewPCG(sd, uint64(4+i))) // the writer's own
		go func() {
			defer close(done)
			defer wconn.Close(context.Background())
			for {
				select {
				case <-stop:
					return
				default:
				}
				lo := next.Load()
				n := int64(1 + wr.IntN(200))
				if _, err := wconn.Exec(ctx, fmt.Sprintf("INSERT INTO ev SELECT i, i %% 7, i %% 100 FROM generate_series(%d, %d) g(i)", lo, lo+n-1)); err != nil {
					return
				}
				next.Add(n) // ids are never reused, whether or not the insert survives
				if _, err := wconn.Exec(ctx, "FLUSH"); err != nil {
					return
				}
			}
		}()
		time.Sleep(time.Duration(200+r.IntN(800)) * time.Millisecond)
		switch i % 3 {
		case 0:
			if _, err := rw.Exec(ctx, "RECOVER"); err != nil {
				t.Fatalf("RECOVER: %v", err)
			}
			close(stop)
			<-done
		case 1:
			_ = p.Signal(syscall.SIGKILL)
			close(stop)
			<-done
			rw.Close(ctx)
			p, rw = start()
		case 2:
			close(stop)
			<-done
			if err := servertest.ExitedCleanly(p.Signal(syscall.SIGTERM)); err != nil {
				t.Fatalf("SIGTERM: %v; log:\n%s", err, servertest.Tail(logPath))
			}
			rw.Close(ctx)
			p, rw = start()
		}
	}
	defer rw.Close(ctx)
	// Rows the writer left uncommitted were rolled back with their epoch;
	// whatever the table holds must reach the targets exactly once.
	waitEqual(t, rw, pg, "SELECT id, g, v FROM ev", "SELECT id, g, v FROM ev", 60*time.Second)
	waitEqual(t, rw, pg, "SELECT g, n, s FROM agg", "SELECT g, n, s FROM agg", 30*time.Second)
	if dups := rowsOf(t, pg, "SELECT id, count(*) FROM ev GROUP BY id HAVING count(*) > 1"); len(dups) > 0 {
		t.Fatalf("duplicate deliveries: %v", head(dups))
	}
	n := rowsOf(t, rw, "SELECT count(*) FROM ev")
	t.Logf("%d rounds, %s rows delivered exactly once", iters, n[0])
}
