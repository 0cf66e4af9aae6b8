package sinktest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
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
// the same rows into the same kind of table (docs/benchmarks.md). Off by
// default: RUNNEL_SINK_BENCH=1 runs it, RUNNEL_SINK_BENCH_ROWS sets the
// rows (default 200,000).
//
//	RUNNEL_SINK_BENCH=1 go test -run TestSinkThroughput -v ./internal/sinktest/
func TestSinkThroughput(t *testing.T) {
	if os.Getenv("RUNNEL_SINK_BENCH") == "" {
		t.Skip("set RUNNEL_SINK_BENCH=1")
	}
	n := 200_000
	if v := os.Getenv("RUNNEL_SINK_BENCH_ROWS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	target, pg := targetDB(t)
	ctx := context.Background()
	for _, tbl := range []string{"by_copy", "by_upsert", "by_append", "by_backfill"} {
		mustExec(t, pg, fmt.Sprintf("CREATE TABLE %s (k bigint PRIMARY KEY, v bigint, s text)", tbl))
	}

	// The peer: one COPY of n rows.
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i), int64(i * 7), fmt.Sprintf("row %d", i)}
	}
	t0 := time.Now()
	if _, err := pg.CopyFrom(ctx, pgx.Identifier{"by_copy"}, []string{"k", "v", "s"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	copyTime := time.Since(t0)

	srv := servertest.Start(t, servertest.WithConfig(func(c *server.Config) { c.BarrierInterval = time.Second }))
	rw := srv.Connect(t)
	url := jdbcURL(t, target)
	mustExec(t, rw, "CREATE TABLE src (k bigint PRIMARY KEY, v bigint, s text)")
	mustExec(t, rw, "CREATE TABLE ev (k bigint, v bigint, s text) APPEND ONLY")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK up FROM src WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'by_upsert', type = 'upsert', primary_key = 'k')`, url))
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK app FROM ev WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'by_append', type = 'append-only')`, url))
	count := func(tbl string) int {
		var c int
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitRows := func(tbl string) time.Duration {
		start := time.Now()
		for count(tbl) < n {
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	gen := fmt.Sprintf("SELECT i, i * 7, 'row ' || i FROM generate_series(0, %d) g(i)", n-1)

	// Live changes: the rows are committed in Runnel first (FLUSH), then
	// timed until the target holds them all.
	t0 = time.Now()
	mustExec(t, rw, "INSERT INTO src "+gen)
	mustExec(t, rw, "FLUSH")
	ingest := time.Since(t0)
	upsert := waitRows("by_upsert")
	t0 = time.Now()
	mustExec(t, rw, "INSERT INTO ev "+gen)
	mustExec(t, rw, "FLUSH")
	ingest2 := time.Since(t0)
	appendOnly := waitRows("by_append")
	// Backfill: CREATE SINK over the existing rows, until delivered.
	t0 = time.Now()
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK bf FROM src WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'by_backfill', type = 'upsert', primary_key = 'k')`, url))
	waitRows("by_backfill")
	backfill := time.Since(t0)

	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	t.Logf("%d rows (k bigint primary key, v bigint, s text)", n)
	t.Logf("COPY into PostgreSQL:                 %8.0f rows/s (%v)", rate(copyTime), copyTime.Round(time.Millisecond))
	t.Logf("upsert sink, after the FLUSH:         %8.0f rows/s (%v; ingest+FLUSH %v)  %.2fx COPY", rate(upsert), upsert.Round(time.Millisecond), ingest.Round(time.Millisecond), copyTime.Seconds()/upsert.Seconds())
	t.Logf("append-only sink, after the FLUSH:    %8.0f rows/s (%v; ingest+FLUSH %v)  %.2fx COPY", rate(appendOnly), appendOnly.Round(time.Millisecond), ingest2.Round(time.Millisecond), copyTime.Seconds()/appendOnly.Seconds())
	t.Logf("upsert sink backfill, CREATE to done: %8.0f rows/s (%v)  %.2fx COPY", rate(backfill), backfill.Round(time.Millisecond), copyTime.Seconds()/backfill.Seconds())
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
