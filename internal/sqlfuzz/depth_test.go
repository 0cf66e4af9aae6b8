package sqlfuzz

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// Statements nested just under parser.MaxNesting go through every path
// that recurses over them — binder, batch planner and executors, the
// streaming planner and executors, DML, subqueries in every position,
// views over views — without a Go stack overflow (which would kill this
// test binary), and one level of view nesting too many is a clean 54001.
// The parser's bound is the one depth check: the expression trees of
// different views do not nest into each other, so each path's depth is
// at most the statement's.
func TestDeepestAllowed(t *testing.T) {
	srv := servertest.Start(t)
	conn := session(t, srv.URL())
	servertest.Exec(t, conn, "CREATE TABLE tt (a INT)")
	servertest.Exec(t, conn, "INSERT INTO tt VALUES (1)")
	n := parser.MaxNesting - 10
	h := n/2 - 5
	rep := strings.Repeat
	for _, c := range []struct{ sql, want string }{
		{"SELECT " + rep("1+", n) + "1", fmt.Sprint(n + 1)},
		{"SELECT " + rep("(SELECT ", h) + "1" + rep(")", h), "1"},
		{"SELECT * FROM " + rep("(SELECT * FROM ", h) + "tt" + rep(")", h), "1"},
		{"SELECT count(*) FROM tt WHERE a IN " + rep("(SELECT a FROM tt WHERE a IN ", h/2) + "(SELECT 1)" + rep(")", h/2), "1"},
		{"SELECT " + rep("coalesce(", h) + "1" + rep(", 0)", h), "1"},
		{"SELECT " + rep("CASE WHEN true THEN ", h) + "1" + rep(" END", h), "1"},
		{"SELECT " + rep("abs(", n-2) + "-1" + rep(")", n-2), "1"},
		{"SELECT a" + rep("::bigint", n) + " FROM tt", "1"},
		{"SELECT count(*) FROM (" + rep("SELECT a FROM tt UNION ALL ", n/2) + "SELECT a FROM tt)", fmt.Sprint(n/2 + 1)},
	} {
		got, err := servertest.TryQueryText(conn, c.sql)
		if err != nil || len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: got %v %v; want %s", short(c.sql), got, err, c.want)
		}
	}
	servertest.Exec(t, conn, "INSERT INTO tt SELECT "+rep("a+", n)+"a - "+fmt.Sprint(n)+" FROM tt")
	servertest.Exec(t, conn, "CREATE MATERIALIZED VIEW m1 AS SELECT "+rep("a+", n)+"a AS s FROM tt")
	servertest.Exec(t, conn, "CREATE MATERIALIZED VIEW m2 AS SELECT * FROM "+rep("(SELECT a + 1 AS a FROM ", h)+"tt"+rep(")", h))
	servertest.Exec(t, conn, "FLUSH")
	if got := servertest.QueryStrings(t, conn, "SELECT (SELECT sum(s) FROM m1), (SELECT sum(a) FROM m2)"); got[0] != fmt.Sprintf("%d|%d", 2*(n+1), 2+2*h) {
		t.Errorf("views: got %v", got)
	}
	// Views over views, as many as may nest.
	servertest.Exec(t, conn, "CREATE VIEW w0 AS SELECT a + 1 AS x FROM tt")
	for i := 1; i < 256; i++ {
		servertest.Exec(t, conn, fmt.Sprintf("CREATE VIEW w%d AS SELECT x FROM w%d", i, i-1))
	}
	if got := servertest.QueryStrings(t, conn, "SELECT sum(x) FROM w255"); got[0] != "4" {
		t.Errorf("w255: got %v", got)
	}
	if got := run(conn, "CREATE VIEW w256 AS SELECT x FROM w255"); got.code != "54001" {
		t.Errorf("a 257th nested view: got %q %v; want 54001", got.code, got.err)
	}
}
