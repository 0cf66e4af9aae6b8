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
