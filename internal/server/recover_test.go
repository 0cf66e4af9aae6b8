package server

import (
	"context"
	"fmt"
	"testing"
)

// RECOVER tears every actor down and rebuilds the graph from the last
// committed epoch: views keep their contents and go on being maintained.
func TestRecoverRebuildsViews(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, g INT, v INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i % 4, i FROM generate_series(1, 200) i")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW s AS SELECT g, sum(v) AS total, count(*) AS n FROM t GROUP BY g")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW top3 AS SELECT id, v FROM t ORDER BY v DESC LIMIT 3")
	mustExec(t, conn, "FLUSH")
	for i := 0; i < 3; i++ {
		mustExec(t, conn, "RECOVER")
		mustExec(t, conn, fmt.Sprintf("INSERT INTO t VALUES (%d, 0, %d)", 1000+i, 1000+i))
		mustExec(t, conn, "DELETE FROM t WHERE id = "+fmt.Sprint(10+i))
		mustExec(t, conn, "FLUSH")
	}
	got := queryStrings(t, conn, "SELECT g, total::bigint, n FROM s ORDER BY g")
	want := queryStrings(t, conn, "SELECT g, sum(v)::bigint, count(*) FROM t GROUP BY g ORDER BY g")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("view after recoveries = %v; its query = %v", got, want)
	}
	if got := queryStrings(t, conn, "SELECT id FROM top3 ORDER BY v DESC"); fmt.Sprint(got) != "[1002 1001 1000]" {
		t.Fatalf("top3 after recoveries = %v", got)
	}
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 200 {
		t.Fatalf("table rows = %d, %v", n, err)
	}
}
