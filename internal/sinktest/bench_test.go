package sinktest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/testutil/s3test"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestSinkThroughput measures the PostgreSQL sink against a plain COPY of
// the same rows into the same kind of table (docs/benchmarks.md), in
// alternating rounds so that both see the same load on a shared machine.
// Off by default: RUNNEL_SINK_BENCH=1 runs it, RUNNEL_SINK_BENCH_ROWS sets
// the rows per round (default 200,000), RUNNEL_SINK_BENCH_ROUNDS the
// rounds (default 3).
//
//	RUNNEL_SINK_BENCH=1 go test -run TestSinkThroughput -v ./internal/sinktest/
func TestSinkThroughput(t *testing.T) {
	if os.Getenv("RUNNEL_SINK_BENCH") == "" {
		t.Skip("set RUNNEL_SINK_BENCH=1")
	}
	n, rounds := 200_000, 3
	if v := os.Getenv("RUNNEL_SINK_BENCH_ROWS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("RUNNEL_SINK_BENCH_ROUNDS"); v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	target, pg := targetDB(t)
	ctx := context.Background()
	for _, tbl := range []string{"by_copy", "by_upsert", "by_append", "by_backfill"} {
		mustExec(t, pg, fmt.Sprintf("CREATE TABLE %s (k bigint PRIMARY KEY, v bigint, s text)", tbl))
	}

	srv := servertest.Start(t, servertest.WithConfig(func(c *server.Config) { c.BarrierInterval = time.Second }))
	rw := srv.Connect(t)
	url := jdbcURL(t, target)
	mustExec(t, rw, "CREATE TABLE src (k bigint PRIMARY KEY, v bigint, s text)")
	mustExec(t, rw, "CREATE TABLE ev (k bigint, v bigint, s text) APPEND ONLY")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK up FROM src WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'by_upsert', type = 'upsert', primary_key = 'k')`, url))
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK app FROM ev WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'by_append', type = 'append-only')`, url))
	// CPU times, which the machine's load sways far less than wall time:
	// this process's (the in-process Runnel server: the sink worker
	// reading the log and encoding, and whatever else the server does)
	// and that of the target database's other backends (the sinks'
	// connections; from /proc, the cluster runs on this machine).
	self := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	backends := func() time.Duration {
		rows, err := pg.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
		if err != nil {
			t.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			t.Fatal(err)
		}
		var total time.Duration
		for _, pid := range pids {
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue // gone
			}
			f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
			ut, _ := strconv.Atoi(f[11])
			st, _ := strconv.Atoi(f[12])
			total += time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
		}
		return total
	}
	cpu := map[string][2][]time.Duration{} // phase -> (Runnel, PostgreSQL) per round
	// waitDelivered polls Runnel (not the target, whose CPU the sink
	// needs) until the sink's backlog is empty.
	var phase string
	waitDelivered := func(sink string) time.Duration {
		s0, b0 := self(), backends()
		defer func() {
			c := cpu[phase]
			c[0], c[1] = append(c[0], self()-s0), append(c[1], backends()-b0)
			cpu[phase] = c
		}()
		start := time.Now()
		for {
			var pending int64
			if err := rw.QueryRow(ctx, "SELECT pending_rows FROM rw_catalog.rw_sinks WHERE name = $1", sink).Scan(&pending); err != nil {
				t.Fatal(err)
			}
			if pending == 0 {
				return time.Since(start)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	count := func(tbl string) int {
		var c int
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	gen := func(round int) string {
		return fmt.Sprintf("SELECT i, i * 7, 'row ' || i FROM generate_series(%d, %d) g(i)", round*n, (round+1)*n-1)
	}
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	var copyT, upT, updT, appT []time.Duration
	for round := 0; round < rounds; round++ {
		// The peer: one COPY of n new rows.
		rows := make([][]any, n)
		for i := range rows {
			k := int64(round*n + i)
			rows[i] = []any{k, k * 7, fmt.Sprintf("row %d", k)}
		}
		t0 := time.Now()
		if _, err := pg.CopyFrom(ctx, pgx.Identifier{"by_copy"}, []string{"k", "v", "s"}, pgx.CopyFromRows(rows)); err != nil {
			t.Fatal(err)
		}
		copyT = append(copyT, time.Since(t0))
		// The sinks: n rows committed in Runnel (one INSERT, FLUSH: one
		// epoch), timed from the FLUSH until the target holds them.
		mustExec(t, rw, "INSERT INTO src "+gen(round))
		mustExec(t, rw, "FLUSH")
		phase = "new"
		upT = append(upT, waitDelivered("up"))
		mustExec(t, rw, "INSERT INTO ev "+gen(round))
		mustExec(t, rw, "FLUSH")
		phase = "app"
		appT = append(appT, waitDelivered("app"))
		// Updates of the n keys just inserted (each is a delete and an
		// insert in the log, one upsert in the target).
		mustExec(t, rw, fmt.Sprintf("UPDATE src SET v = v + 1 WHERE k >= %d", round*n))
		mustExec(t, rw, "FLUSH")
		phase = "upd"
		updT = append(updT, waitDelivered("up"))
		t.Logf("round %d: COPY %v, upsert (new keys) %v, append-only %v, upsert (updates) %v", round, copyT[round].Round(time.Millisecond),
			upT[round].Round(time.Millisecond), appT[round].Round(time.Millisecond), updT[round].Round(time.Millisecond))
	}
	if c := count("by_upsert"); c != rounds*n {
		t.Fatalf("by_upsert holds %d rows, want %d", c, rounds*n)
	}
	if c := count("by_append"); c != rounds*n {
		t.Fatalf("by_append holds %d rows, want %d", c, rounds*n)
	}
	// Backfill: CREATE SINK over the existing rows, until delivered.
	t0 := time.Now()
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK bf FROM src WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'by_backfill', type = 'upsert', primary_key = 'k')`, url))
	for count("by_backfill") < rounds*n {
		time.Sleep(50 * time.Millisecond)
	}
	backfill := time.Since(t0)

	med := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	c := med(copyT)
	t.Logf("%d rows per round (k bigint primary key, v bigint, s text), %d rounds, medians", n, rounds)
	t.Logf("COPY into PostgreSQL:                 %8.0f rows/s (%v)", rate(c), c.Round(time.Millisecond))
	for _, p := range []struct {
		name, phase string
		ds          []time.Duration
	}{{"upsert sink, new keys, after FLUSH:   ", "new", upT}, {"upsert sink, updates, after FLUSH:    ", "upd", updT}, {"append-only sink, after FLUSH:        ", "app", appT}} {
		m := med(p.ds)
		t.Logf("%s %8.0f rows/s (%v)  %.2fx COPY; CPU: Runnel %v, PostgreSQL %v", p.name, rate(m), m.Round(time.Millisecond), c.Seconds()/m.Seconds(),
			med(cpu[p.phase][0]).Round(time.Millisecond), med(cpu[p.phase][1]).Round(time.Millisecond))
	}
	bn := float64(rounds*n) / backfill.Seconds()
	t.Logf("upsert sink backfill of %d rows, CREATE to done: %8.0f rows/s (%v)  %.2fx COPY", rounds*n, bn, backfill.Round(time.Millisecond), bn/rate(c))
}

// TestS3SinkThroughput measures the s3 sink (ENCODE PARQUET into a local
// versitygw): n rows committed in Runnel (INSERT + FLUSH), then timed
// until the bucket's files hold them all (counted from the Parquet
// footers). Off by default, like TestSinkThroughput:
//
//	RUNNEL_SINK_BENCH=1 go test -run TestS3SinkThroughput -v ./internal/sinktest/
func TestS3SinkThroughput(t *testing.T) {
	if os.Getenv("RUNNEL_SINK_BENCH") == "" {
		t.Skip("set RUNNEL_SINK_BENCH=1")
	}
	n := 200_000
	if v := os.Getenv("RUNNEL_SINK_BENCH_ROWS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	s3 := s3test.Start(t)
	bucket := s3.NewBucket(t)
	st, err := objstore.NewS3(s3.Config(bucket, "ev"))
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Start(t, servertest.WithConfig(func(c *server.Config) { c.BarrierInterval = time.Second }))
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev (k bigint, v bigint, s text) APPEND ONLY")
	mustExec(t, rw, s3SinkSQL(s3, "ev_s3", "ev", bucket, "ev", ""))
	ctx := context.Background()
	count := func() (rows int, files int) {
		infos, err := st.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			data, err := st.Get(ctx, info.Key)
			if err != nil {
				t.Fatal(err)
			}
			pf, err := file.NewParquetReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			rows += int(pf.NumRows())
		}
		return rows, len(infos)
	}
	t0 := time.Now()
	mustExec(t, rw, fmt.Sprintf("INSERT INTO ev SELECT i, i * 7, 'row ' || i FROM generate_series(0, %d) g(i)", n-1))
	mustExec(t, rw, "FLUSH")
	ingest := time.Since(t0)
	t0 = time.Now()
	rows, files := 0, 0
	for rows < n {
		time.Sleep(20 * time.Millisecond)
		rows, files = count()
	}
	d := time.Since(t0)
	t.Logf("%d rows (k bigint, v bigint, s text) in %d Parquet files", n, files)
	t.Logf("s3 sink (versitygw), after the FLUSH: %8.0f rows/s (%v; ingest+FLUSH %v)", float64(n)/d.Seconds(), d.Round(time.Millisecond), ingest.Round(time.Millisecond))
}
