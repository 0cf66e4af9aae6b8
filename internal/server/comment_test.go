package server

import (
	"context"
	"fmt"
	"testing"
)

// COMMENT ON is stored in the catalog: obj_description, col_description
// and pg_description (what psql's \d+ and \dt+ read) show it, before and
// after a restart; IS NULL removes it. Issue 15 item 7.
func TestCommentOn(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, a INT)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW m AS SELECT sum(a) AS s FROM t")
	mustExec(t, conn, "CREATE VIEW v AS SELECT s FROM m")
	mustExec(t, conn, "COMMENT ON TABLE t IS 'the table'")
	mustExec(t, conn, "COMMENT ON COLUMN t.a IS 'column a'")
	mustExec(t, conn, "COMMENT ON COLUMN public.m.s IS 'the sum'")
	mustExec(t, conn, "COMMENT ON MATERIALIZED VIEW m IS 'the mv'")
	mustExec(t, conn, "COMMENT ON VIEW v IS 'gone soon'")
	mustExec(t, conn, "COMMENT ON VIEW v IS NULL")
	for _, c := range []struct{ sql, code string }{
		{"COMMENT ON TABLE nope IS 'x'", "42P01"},
		{"COMMENT ON TABLE v IS 'x'", "42809"},
		{"COMMENT ON COLUMN t.nope IS 'x'", "42703"},
		{"COMMENT ON DATABASE dev IS 'x'", "0A000"},
	} {
		if _, err := conn.Exec(context.Background(), c.sql); sqlState(err) != c.code {
			t.Fatalf("%s: %v, want %s", c.sql, err, c.code)
		}
	}
	check := func(step string) {
		t.Helper()
		got := queryStrings(t, conn, `SELECT c.relname, coalesce(obj_description(c.oid, 'pg_class'), '-'), coalesce(col_description(c.oid, 2), '-')
			FROM pg_class c WHERE c.relname IN ('t', 'm', 'v') ORDER BY 1`)
		if fmt.Sprint(got) != "[m|the mv|- t|the table|column a v|-|-]" {
			t.Fatalf("%s: descriptions = %v", step, got)
		}
		got = queryStrings(t, conn, `SELECT c.relname, d.objsubid, d.description FROM pg_description d JOIN pg_class c ON c.oid = d.objoid ORDER BY 1, 2`)
		if fmt.Sprint(got) != "[m|0|the mv m|1|the sum t|0|the table t|2|column a]" {
			t.Fatalf("%s: pg_description = %v", step, got)
		}
	}
	check("before restart")
	conn.Close(context.Background())
	ts.stop()
	ts = startTestServer(t, dir)
	conn = ts.connect(t)
	check("after restart")
}
