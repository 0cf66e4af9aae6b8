package sinktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestTargetDown: while the target PostgreSQL is down, checkpoints go on
// (FLUSH returns), rw_sinks shows the backlog and the error, and once the
// target is back the backlog drains in order and the target equals the
// view. A sink whose backlog passes log_store.max_pending_rows
// back-pressures its job instead of growing its log: FLUSH waits, and
// completes once the target is back.
func TestTargetDown(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 2))
	cluster, err := pgtest.StartCluster("")
	if err != nil {
		if errors.Is(err, pgtest.ErrNoBinaries) && os.Getenv("CI") != "true" {
			t.Skipf("pgtest: %v", err)
		}
		t.Fatal(err)
	}
	defer cluster.Stop()
	ctx := context.Background()
	target := cluster.URL("postgres")
	connectPG := func() *pgx.Conn {
		pg, err := pgx.Connect(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		return pg
	}
	pg := connectPG()
	mustExec(t, pg, "CREATE TABLE agg (g int PRIMARY KEY, n bigint, s bigint)")
	mustExec(t, pg, "CREATE TABLE copy (k int PRIMARY KEY, g int, v int)")

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE t (k int PRIMARY KEY, g int, v int)")
	mustExec(t, rw, "CREATE MATERIALIZED VIEW mv AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK agg_sink FROM mv WITH (connector = 'jdbc', jdbc.url = '%s',
		table.name = 'agg', type = 'upsert', primary_key = 'g')`, jdbcURL(t, target)))
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK copy_sink FROM t WITH (connector = 'jdbc', jdbc.url = '%s',
		table.name = 'copy', type = 'upsert', primary_key = 'k', log_store.max_pending_rows = '300')`, jdbcURL(t, target)))
	randomDML(t, rw, r, 40, 50)
	waitEqual(t, rw, pg, "SELECT g, n, s FROM mv", "SELECT g, n, s FROM agg", 20*time.Second)
	pg.Close(ctx)

	if err := cluster.Crash(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		randomDML(t, rw, r, 20, 50)
		mustExec(t, rw, "FLUSH") // checkpoints do not wait for the target
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := rowsOf(t, rw, "SELECT name, status, pending_rows > 0, pending_epochs > 0, last_error IS NOT NULL FROM rw_catalog.rw_sinks WHERE name = 'agg_sink'")
		if len(got) == 1 && got[0] == "agg_sink|retrying|t|t|t" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rw_sinks while the target is down: %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Past copy_sink's bound (300 rows) its job stops reading: the
	// barrier after the epoch in which the backlog passed the bound cannot
	// complete. The changes made while the target was down may have passed
	// it already, so no statement here waits without a deadline (a FLUSH
	// here once hung CI for 25 minutes); once the big insert (501 rows,
	// more than the bound by itself) is in the log, a later FLUSH must not
	// complete.
	flushWithin := func(sql string) error {
		fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := rw.Exec(fctx, sql)
		if err != nil {
			rw = srv.Connect(t) // a cancelled session may be unusable
		}
		return err
	}
	if err := flushWithin("INSERT INTO t SELECT i, i % 5, i FROM generate_series(1000, 1500) g(i)"); err == nil {
		if err := flushWithin("FLUSH"); err == nil {
			if err := flushWithin("INSERT INTO t VALUES (2000, 1, 1)"); err == nil {
				if flushWithin("FLUSH") == nil {
					t.Fatalf("FLUSH completed although copy_sink's backlog is past its bound")
				}
			}
		}
	}
	if err := cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	pg = connectPG()
	defer pg.Close(ctx)
	waitEqual(t, rw, pg, "SELECT g, n, s FROM mv", "SELECT g, n, s FROM agg", 30*time.Second)
	waitEqual(t, rw, pg, "SELECT k, g, v FROM t", "SELECT k, g, v FROM copy", 30*time.Second)
	got := rowsOf(t, rw, "SELECT name, status, pending_rows, last_error FROM rw_catalog.rw_sinks")
	if len(got) != 2 || got[0] != "agg_sink|running|0|NULL" || got[1] != "copy_sink|running|0|NULL" {
		t.Fatalf("rw_sinks after the target came back: %v", got)
	}
}
