package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/stream/exec"
)

// TestViewExpressionErrorIsNull: a data error while a view evaluates one
// row (division by zero, an overflowing cast) makes that value NULL (a
// filter drops the row) instead of failing the job: the writer's INSERT is
// acknowledged, nothing is recovered, the row's retraction stays
// consistent, and a plain SELECT of the same expression still fails with
// the PostgreSQL error.
func TestViewExpressionErrorIsNull(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = true")
	mustExec(t, conn, "CREATE TABLE t (k INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 4), (2, 5)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW q AS SELECT k, 100 / v AS q, (v * 1000000)::numeric(6,0) AS big FROM t")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW f AS SELECT k FROM t WHERE 10 / v >= 2")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW agg AS SELECT count(*) AS n, count(100 / v) AS ok FROM t")
	recoveries := len(ts.srv.epochs.Recoveries())
	errs := exec.ExprErrorCount.Load()

	mustExec(t, conn, "INSERT INTO t VALUES (3, 0)") // 100/0 and 10/0
	if got := queryStrings(t, conn, "SELECT k, q, big::text FROM q ORDER BY k"); fmt.Sprint(got) != "[1|25|<nil> 2|20|<nil> 3|<nil>|0]" {
		t.Fatalf("view with errors = %v", got)
	}
	if got := queryStrings(t, conn, "SELECT k FROM f ORDER BY k"); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("filter view = %v", got)
	}
	if got := queryStrings(t, conn, "SELECT n, ok FROM agg"); fmt.Sprint(got) != "[3|2]" {
		t.Fatalf("aggregate view = %v", got)
	}
	// The erroring row's update and delete retract exactly what was emitted.
	mustExec(t, conn, "UPDATE t SET v = 10 WHERE k = 3")
	mustExec(t, conn, "UPDATE t SET v = 0 WHERE k = 1")
	mustExec(t, conn, "DELETE FROM t WHERE k = 1")
	if got := queryStrings(t, conn, "SELECT k, q FROM q ORDER BY k"); fmt.Sprint(got) != "[2|20 3|10]" {
		t.Fatalf("view after updates = %v", got)
	}
	if got := queryStrings(t, conn, "SELECT k FROM f ORDER BY k"); fmt.Sprint(got) != "[2]" {
		t.Fatalf("filter view after updates = %v", got)
	}
	if n := len(ts.srv.epochs.Recoveries()); n != recoveries {
		t.Fatalf("expression errors caused %d recoveries", n-recoveries)
	}
	if exec.ExprErrorCount.Load() <= errs {
		t.Fatal("expression errors were not counted")
	}
	// Queries keep PostgreSQL's behaviour.
	mustExec(t, conn, "INSERT INTO t VALUES (4, 0)")
	_, err := conn.Exec(context.Background(), "SELECT 100 / v FROM t")
	if err == nil || !strings.Contains(err.Error(), "22012") {
		t.Fatalf("SELECT dividing by zero: %v; want 22012", err)
	}
}

// TestExpressionErrorsInEveryExecutor: the NULL rule holds beyond Project
// and Filter — in a HOP select list fused into the window executor, a
// join's non-equi condition (NULL: no match), and a window function
// (ntile(0)). Before, each of these failed the job on the erroring row, so
// the writer's INSERT (and every later one) failed with 40001 forever.
// The errors are counted per view in rw_catalog.rw_streaming_errors.
func TestExpressionErrorsInEveryExecutor(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = true")
	mustExec(t, conn, "CREATE TABLE t (k INT PRIMARY KEY, v INT, at TIMESTAMP)")
	mustExec(t, conn, "CREATE TABLE u (k INT PRIMARY KEY, w INT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 4, '2026-01-01 00:00:05'), (2, 5, '2026-01-01 00:00:07')")
	mustExec(t, conn, "INSERT INTO u VALUES (1, 1), (2, 1), (3, 1)")
	mustExec(t, conn, `CREATE MATERIALIZED VIEW hop AS SELECT k, 100 / v AS q, window_start
		FROM HOP(t, at, INTERVAL '5' SECOND, INTERVAL '10' SECOND)`)
	mustExec(t, conn, "CREATE MATERIALIZED VIEW tum AS SELECT k, 100 / v AS q FROM TUMBLE(t, at, INTERVAL '10' SECOND)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW j AS SELECT t.k, u.w FROM t JOIN u ON t.k = u.k AND 10 / t.v >= u.w")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW lj AS SELECT u.k, t.v FROM u LEFT JOIN t ON t.k = u.k AND 10 / t.v >= u.w")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW nt AS SELECT k, ntile(v) OVER (ORDER BY k) AS b FROM t")
	recoveries := len(ts.srv.epochs.Recoveries())

	mustExec(t, conn, "INSERT INTO t VALUES (3, 0, '2026-01-01 00:00:09')") // 100/0, 10/0, ntile(0)
	for _, c := range []struct{ q, want string }{
		{"SELECT k, q, window_start::text FROM hop ORDER BY k, window_start",
			"[1|25|2026-01-01 00:00:00 1|25|2026-01-01 00:00:05 2|20|2026-01-01 00:00:00 2|20|2026-01-01 00:00:05 " +
				"3|<nil>|2026-01-01 00:00:00 3|<nil>|2026-01-01 00:00:05]"},
		{"SELECT k, q FROM tum ORDER BY k", "[1|25 2|20 3|<nil>]"},
		{"SELECT k, w FROM j ORDER BY k", "[1|1 2|1]"},
		{"SELECT k, v FROM lj ORDER BY k", "[1|4 2|5 3|<nil>]"},
	} {
		if got := queryStrings(t, conn, c.q); fmt.Sprint(got) != c.want {
			t.Errorf("%s = %v; want %s", c.q, got, c.want)
		}
	}
	if got := queryStrings(t, conn, "SELECT k, b IS NULL FROM nt WHERE k = 3"); fmt.Sprint(got) != "[3|true]" {
		t.Errorf("ntile(0) = %v; want NULL", got)
	}
	// Retractions of the erroring row match what was emitted.
	mustExec(t, conn, "UPDATE t SET v = 10 WHERE k = 3")
	for _, c := range []struct{ q, want string }{
		{"SELECT k, q FROM tum ORDER BY k", "[1|25 2|20 3|10]"},
		{"SELECT k, w FROM j ORDER BY k", "[1|1 2|1 3|1]"},
		{"SELECT k, v FROM lj ORDER BY k", "[1|4 2|5 3|10]"},
		{"SELECT count(*) FROM hop WHERE q IS NULL", "[0]"},
		{"SELECT k, b FROM nt ORDER BY k", "[1|1 2|2 3|3]"},
	} {
		if got := queryStrings(t, conn, c.q); fmt.Sprint(got) != c.want {
			t.Errorf("after the update: %s = %v; want %s", c.q, got, c.want)
		}
	}
	mustExec(t, conn, "DELETE FROM t WHERE k = 3")
	if got := queryStrings(t, conn, "SELECT count(*) FROM hop WHERE k = 3"); fmt.Sprint(got) != "[0]" {
		t.Errorf("hop after delete = %v", got)
	}
	if n := len(ts.srv.epochs.Recoveries()); n != recoveries {
		t.Fatalf("expression errors caused %d recoveries", n-recoveries)
	}
	got := queryStrings(t, conn, `SELECT database, job, expression_errors > 0, inconsistencies, last_error LIKE '%division by zero%' OR last_error LIKE '%ntile%'
		FROM rw_catalog.rw_streaming_errors WHERE job IN ('materialized view hop', 'materialized view tum', 'materialized view j', 'materialized view lj', 'materialized view nt') ORDER BY job`)
	want := "[dev|materialized view hop|true|0|true dev|materialized view j|true|0|true dev|materialized view lj|true|0|true " +
		"dev|materialized view nt|true|0|true dev|materialized view tum|true|0|true]"
	if fmt.Sprint(got) != want {
		t.Errorf("rw_streaming_errors = %v; want %s", got, want)
	}
	// A dropped view's counters go with it.
	mustExec(t, conn, "DROP MATERIALIZED VIEW tum")
	if got := queryStrings(t, conn, "SELECT count(*) FROM rw_streaming_errors WHERE job = 'materialized view tum'"); fmt.Sprint(got) != "[0]" {
		t.Errorf("dropped view still listed: %v", got)
	}
}
