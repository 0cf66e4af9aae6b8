package pgcdc_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestCDCApplyBench measures CDC apply: RUNNEL_CDC_BENCH rows inserted
// upstream (in transactions of 1,000 rows) after the snapshot, streamed
// through pgoutput into a Runnel table with a primary key, timed from the
// first upstream insert until Runnel's table counts them all; then the
// same number of updates. It prints rows/s and rows per CPU-second of the
// Runnel process (the upstream PostgreSQL's CPU is not counted). It runs
// only with RUNNEL_CDC_BENCH=<rows> (docs/benchmarks.md).
func TestCDCApplyBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RUNNEL_CDC_BENCH"))
	if n <= 0 {
		t.Skip("set RUNNEL_CDC_BENCH=<rows> to run the CDC apply benchmark")
	}
	ctx := context.Background()
	raw := pgtest.NewLogicalDatabase(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	up, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close(ctx)
	exec := func(conn *pgx.Conn, sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(up, `CREATE TABLE bench (id bigint PRIMARY KEY, k int, v text, amount numeric)`)

	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	port, _ := strconv.Atoi(u.Port())
	exec(conn, fmt.Sprintf(`CREATE TABLE bench (id bigint, k int, v varchar, amount numeric, PRIMARY KEY (id)) WITH (connector = 'postgres-cdc',
		hostname = '%s', port = '%d', username = '%s', password = '', database.name = '%s', table.name = 'public.bench', slot.name = 'bench_slot')`,
		u.Hostname(), port, u.User.Username(), strings.TrimPrefix(u.Path, "/")))
	t.Cleanup(func() {
		conn.Exec(ctx, `DROP TABLE bench`) // drops the slot
	})
	exec(conn, `FLUSH`)

	wait := func(query, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Minute)
		for {
			rows, err := servertest.TryQueryText(conn, query)
			if err == nil && strings.Join(rows, ";") == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: got %v (%v); want %s", query, rows, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	phase := func(name, sql, query, want string) {
		start, cpu0 := time.Now(), servertest.ProcessCPU()
		for i := 0; i < n; i += 1000 {
			exec(up, fmt.Sprintf(sql, i+1, min(n, i+1000)))
		}
		upstream := time.Since(start)
		wait(query, want)
		d, cpu := time.Since(start), servertest.ProcessCPU()-cpu0
		t.Logf("%s: %d rows in %v (upstream statements %v) = %.0f rows/s; %.2f CPU s in the test process = %.0f rows per CPU-second",
			name, n, d.Round(time.Millisecond), upstream.Round(time.Millisecond), float64(n)/d.Seconds(), cpu.Seconds(), float64(n)/cpu.Seconds())
	}
	phase("insert", `INSERT INTO bench SELECT i, i %% 100, 'row ' || i, i * 1.25 FROM generate_series(%d, %d) i`,
		`SELECT count(*), sum(k) FROM bench`, fmt.Sprintf("%d|%d", n, sumMod(n)))
	phase("update", `UPDATE bench SET k = k + 1 WHERE id BETWEEN %d AND %d`,
		`SELECT count(*), sum(k) FROM bench`, fmt.Sprintf("%d|%d", n, sumMod(n)+n))
}

// sumMod is the sum of i % 100 for i in 1..n.
func sumMod(n int) int {
	s := 0
	for i := 1; i <= n; i++ {
		s += i % 100
	}
	return s
}
