package server

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Point statements on a primary key read one key range, not the table:
// SELECT / UPDATE / DELETE ... WHERE pk = literal or $1 (any integer
// width), on tables and on materialized views by their key, give the same
// answers as a full scan, and a lookup in a big table is fast.
func TestPrimaryKeyLookups(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = true")
	mustExec(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, g INT, v INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i % 100, i FROM generate_series(1, 100000) i")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW per_g AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g")
	mustExec(t, conn, "CREATE TABLE c (a INT, b TEXT, x INT, PRIMARY KEY (a, b))")
	mustExec(t, conn, "INSERT INTO c VALUES (1, 'x', 1), (1, 'y', 2), (2, 'x', 3)")
	mustExec(t, conn, "CREATE TABLE d (id INT PRIMARY KEY, name TEXT)")
	mustExec(t, conn, "INSERT INTO d SELECT i, 'd' || i FROM generate_series(0, 99) i")
	// Keyed by (t.id, d.id); the join's output is distributed by the join
	// key, so the view is redistributed by t.id and a lookup by t.id
	// reads one vnode.
	mustExec(t, conn, "CREATE MATERIALIZED VIEW j AS SELECT t.id, t.v, d.name FROM t JOIN d ON t.g = d.id")

	for q, want := range map[string]string{
		"EXPLAIN SELECT v FROM t WHERE id = 5":            "Scan t key: (CAST(5::integer AS bigint)) filter",
		"EXPLAIN SELECT v, name FROM j WHERE id = 5":      "Scan j key: (CAST(5::integer AS bigint)) filter",
		"EXPLAIN SELECT x FROM c WHERE a = 1":             "Scan c key: (1::integer) in every vnode",
		"EXPLAIN SELECT x FROM c WHERE a = 1 AND b = 'y'": "Scan c key: (1::integer, y::text) filter",
		"EXPLAIN SELECT n FROM per_g WHERE g = 42":        "Scan per_g key: (42::integer) filter",
	} {
		if plan := strings.Join(queryStrings(t, conn, q), "\n") + "\n"; !strings.Contains(plan, want) {
			t.Errorf("%s:\n%s\nwant it to contain %q", q, plan, want)
		}
	}
	for _, c := range []struct {
		q    string
		args []any
		want string
	}{
		{"SELECT v FROM t WHERE id = 5", nil, "[5]"},
		{"SELECT v FROM t WHERE 77 = id", nil, "[77]"},
		{"SELECT v FROM t WHERE id = $1", []any{int32(99)}, "[99]"},
		{"SELECT v FROM t WHERE id = $1", []any{int64(100000)}, "[100000]"},
		{"SELECT v FROM t WHERE id = $1 AND v > 10", []any{int64(7)}, "[]"},
		{"SELECT v FROM t WHERE id = 0", nil, "[]"},
		{"SELECT v FROM t WHERE id = NULL", nil, "[]"},
		{"SELECT v FROM t WHERE id = 5.0", nil, "[5]"},
		{"SELECT v FROM t WHERE id = 5.5", nil, "[]"},
		{"SELECT n FROM per_g WHERE g = 42", nil, "[1000]"},
		{"SELECT x FROM c WHERE a = 1 ORDER BY x", nil, "[1 2]"},
		{"SELECT x FROM c WHERE a = 1 AND b = 'y'", nil, "[2]"},
		{"SELECT x FROM c WHERE b = 'x' ORDER BY x", nil, "[1 3]"},
		{"SELECT v, name FROM j WHERE id = $1", []any{int64(4242)}, "[4242|d42]"},
		{"SELECT v, name FROM j WHERE id = 0", nil, "[]"},
	} {
		if got := queryStrings(t, conn, c.q, c.args...); fmt.Sprint(got) != c.want {
			t.Errorf("%s %v = %v; want %s", c.q, c.args, got, c.want)
		}
	}
	start := time.Now()
	for i := range 50 {
		mustExec(t, conn, "UPDATE t SET v = v + 1000000 WHERE id = $1", int64(1000+i))
	}
	perUpdate := time.Since(start) / 50
	mustExec(t, conn, "DELETE FROM t WHERE id = $1", int64(2000))
	if got := queryStrings(t, conn, "SELECT count(*), sum(v)::bigint FROM t"); fmt.Sprint(got) != fmt.Sprintf("[99999|%d]", 100000*100001/2+50*1000000-2000) {
		t.Fatalf("after point updates and a delete: %v", got)
	}
	// g = 0 holds ids 100, 200, ..., 100000 (sum 50,050,000); id 1000 was
	// updated (+1,000,000) and id 2000 deleted.
	if got := queryStrings(t, conn, "SELECT s::bigint FROM per_g WHERE g = 0"); fmt.Sprint(got) != "[51048000]" {
		t.Fatalf("view after point updates = %v; want 51048000", got)
	}
	t.Logf("point UPDATE + implicit flush on a 100,000-row table: %v each", perUpdate)
	if perUpdate > time.Second {
		t.Errorf("a point UPDATE took %v: is it still scanning the table?", perUpdate)
	}
}
