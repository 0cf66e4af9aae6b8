package recoverytest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/storage"
)

// padExpr makes 1,024 hex characters that differ from row to row (32
// md5 values), so that the state does not compress away.
func padExpr() string {
	parts := make([]string, 32)
	for i := range parts {
		parts[i] = fmt.Sprintf("md5(i::text || '%d')", i)
	}
	return strings.Join(parts, " || ")
}

var levelLine = regexp.MustCompile(`^L\d+: \d+ ssts, (\d+) bytes`)

// versionBytes is the size of every SST of the committed version.
func versionBytes(t testing.TB, in server.Internals) int64 {
	t.Helper()
	var text string
	var err error
	for range 10 {
		if text, err = storage.DescribeVersion(context.Background(), in.Meta); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("describe version: %v", err)
	}
	var n int64
	for _, line := range strings.Split(text, "\n") {
		if m := levelLine.FindStringSubmatch(line); m != nil {
			b, _ := strconv.ParseInt(m[1], 10, 64)
			n += b
		}
	}
	return n
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Recovery time with 10 views over wide rows: from RECOVER to serving
// again (RECOVER returns after the rebuild; then a FLUSH, a write made
// durable and a view read), and the reset phase (every actor aborted and
// joined), idle and while the views are busy with a large update.
//
//	RUNNEL_RECOVERY_BENCH=1 go test -run TestRecoveryTime -v ./internal/recoverytest/
//
// RUNNEL_RECOVERY_BENCH_MB sets the logical state size (default 100; 1024
// for the 1 GB of the acceptance goal, which takes several minutes to
// load and needs that much free disk), RUNNEL_RECOVERY_BENCH_ROUNDS the
// number of recoveries measured (default 5).
func TestRecoveryTime(t *testing.T) {
	if os.Getenv("RUNNEL_RECOVERY_BENCH") == "" {
		t.Skip("set RUNNEL_RECOVERY_BENCH=1 to run the recovery-time benchmark")
	}
	mb := envInt("RUNNEL_RECOVERY_BENCH_MB", 100)
	rounds := envInt("RUNNEL_RECOVERY_BENCH_ROUNDS", 5)
	// Logical state per row: the table's row (~1.05 KB) and 8 views that
	// keep 90 % of the rows with their pad: ~8.2 KB per table row.
	rows := mb * 1024 * 10 / 82
	busyRows := min(rows, 10000) // rows the busy phase updates
	srv, in := startServer(t, func(c *server.Config) {
		c.BarrierInterval = time.Second // the production default
		c.Parallelism = 2
	})
	conn := srv.Connect(t)
	mustExec(t, conn, "CREATE TABLE w (id BIGINT PRIMARY KEY, g INT, pad VARCHAR)")
	load := time.Now()
	pad := padExpr()
	const batch = 20000
	for lo := 1; lo <= rows; lo += batch {
		hi := min(lo+batch-1, rows)
		longExec(t, conn, fmt.Sprintf("INSERT INTO w SELECT i, i %% 100, %s FROM generate_series(%d, %d) g(i)", pad, lo, hi))
		longExec(t, conn, "FLUSH")
	}
	for k := range 8 {
		longExec(t, conn, fmt.Sprintf("CREATE MATERIALIZED VIEW v%d AS SELECT id, g, pad FROM w WHERE id %% 10 <> %d", k, k))
	}
	longExec(t, conn, "CREATE MATERIALIZED VIEW v8 AS SELECT g, count(*) AS n, sum(length(pad)) AS bytes FROM w GROUP BY g")
	longExec(t, conn, "CREATE MATERIALIZED VIEW v9 AS SELECT id, pad FROM w ORDER BY id DESC LIMIT 100")
	longExec(t, conn, "FLUSH")
	stored := versionBytes(t, in)
	actors := len(in.Actors.Actors())
	t.Logf("loaded %d rows (~%d MB logical state), %d MB in SSTs, %d actors, in %v", rows, mb, stored>>20, actors, time.Since(load).Round(time.Millisecond))

	var recoverT, flushT, writeT, readT, resetIdle, rebuildIdle, resetBusy, baseline []time.Duration
	for r := range rounds {
		// Baseline: the same write and FLUSH with no recovery before it.
		start := time.Now()
		mustExec(t, conn, fmt.Sprintf("INSERT INTO w VALUES (%d, 1, 'x')", rows+1000+r))
		mustExec(t, conn, "FLUSH")
		baseline = append(baseline, time.Since(start))
		start = time.Now()
		mustExec(t, conn, "RECOVER")
		recoverT = append(recoverT, time.Since(start))
		mustExec(t, conn, "FLUSH")
		flushT = append(flushT, time.Since(start))
		mustExec(t, conn, fmt.Sprintf("INSERT INTO w VALUES (%d, 1, 'x')", rows+1+r))
		mustExec(t, conn, "FLUSH")
		writeT = append(writeT, time.Since(start))
		mustQuery(t, conn, "SELECT n FROM v8 WHERE g = 1")
		readT = append(readT, time.Since(start))
		recs := in.Epochs.Recoveries()
		last := recs[len(recs)-1]
		resetIdle = append(resetIdle, last.Reset)
		rebuildIdle = append(rebuildIdle, last.Rebuild)

		// Busy: an update of up to 10,000 rows is flowing through the ten views
		// (the statement returns once the table has applied it) when the
		// recovery aborts them.
		busy := srv.Connect(t)
		mustExec(t, busy, fmt.Sprintf("UPDATE w SET g = g + 1 WHERE id <= %d", busyRows))
		if os.Getenv("RUNNEL_RECOVERY_BENCH_STACKS") != "" {
			// What the actors are doing while the reset waits for them.
			done := make(chan struct{})
			go func() {
				select {
				case <-done:
				case <-time.After(5 * time.Millisecond):
					t.Logf("actor goroutines 5 ms into the reset:\n%s", actorStacks())
				}
			}()
			mustExec(t, conn, "RECOVER")
			close(done)
		} else {
			mustExec(t, conn, "RECOVER")
		}
		recs = in.Epochs.Recoveries()
		resetBusy = append(resetBusy, recs[len(recs)-1].Reset)
		if err := execErrTimeout(busy, "FLUSH", 30*time.Minute); err != nil && sqlstate(err) != "40001" {
			t.Fatalf("FLUSH after the interrupted update: %v", err)
		}
		busy.Close(context.Background())
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	row := func(name string, ds []time.Duration) {
		t.Logf("| %s | %s | %s |", name, ms(median(ds)), ms(slices.Max(ds)))
	}
	t.Logf("%d rounds, %d rows, ~%d MB logical, %d MB in SSTs, %d actors", rounds, rows, mb, stored>>20, actors)
	t.Logf("| measure | median | max |")
	t.Logf("|---|---|---|")
	row("RECOVER statement (reset + rebuild)", recoverT)
	row("RECOVER → FLUSH returned", flushT)
	row("RECOVER → INSERT + FLUSH returned", writeT)
	row("INSERT + FLUSH with no recovery (baseline)", baseline)
	row("RECOVER → view read returned", readT)
	row("reset phase, idle (abort + join every actor)", resetIdle)
	row("rebuild phase, idle", rebuildIdle)
	row(fmt.Sprintf("reset phase, ten views busy with an update of %d rows", busyRows), resetBusy)
	if median(flushT) > time.Second {
		t.Logf("goal missed: RECOVER to serving (FLUSH) %v > 1 s", median(flushT))
	}
	if median(resetBusy) > 10*time.Millisecond || median(resetIdle) > 10*time.Millisecond {
		t.Logf("goal missed: reset %v idle / %v busy > 10 ms", median(resetIdle), median(resetBusy))
	}
}

// actorStacks returns the stacks of the goroutines running actors.
func actorStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "stream.(*Actor).Run") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// longExec runs a loading statement, which may take minutes at 1 GB.
func longExec(t testing.TB, conn *pgx.Conn, sql string) {
	t.Helper()
	if err := execErrTimeout(conn, sql, 30*time.Minute); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func execErrTimeout(conn *pgx.Conn, sql string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	return err
}
