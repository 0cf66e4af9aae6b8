package server

import (
	"context"
	"testing"

	"github.com/runneldb/runnel/internal/catalog"
)

// CREATE OR REPLACE VIEW that would make views depend on each other (or a
// view on itself) is refused with PostgreSQL's 42P17: before, it was
// accepted and a later DROP ... CASCADE recursed until the Go stack
// overflowed, which kills the process (issue 13, I9).
func TestViewCycleRefused(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (a INT)")
	mustExec(t, conn, "CREATE VIEW v1 AS SELECT a FROM t")
	mustExec(t, conn, "CREATE VIEW v2 AS SELECT a FROM v1")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW m AS SELECT a FROM v2")
	mustExec(t, conn, "CREATE VIEW v3 AS SELECT a FROM m")
	for _, sql := range []string{
		"CREATE OR REPLACE VIEW v1 AS SELECT a FROM v2",
		"CREATE OR REPLACE VIEW v1 AS SELECT a FROM v1",
		"CREATE OR REPLACE VIEW v1 AS SELECT a FROM (SELECT a FROM v3)",
	} {
		if e := pgErr(t, conn, sql); e == nil || e.Code != "42P17" || e.Message != `infinite recursion detected in rules for relation "v1"` {
			t.Fatalf("%s: got %v; want 42P17", sql, e)
		}
	}
	// Replacing without a cycle still works.
	mustExec(t, conn, "CREATE OR REPLACE VIEW v1 AS SELECT a + 1 AS a FROM t")
	mustExec(t, conn, "DROP TABLE t CASCADE")
	if got := queryStrings(t, conn, "SELECT count(*) FROM pg_class WHERE relname IN ('t', 'v1', 'v2', 'v3', 'm')"); got[0] != "0" {
		t.Fatalf("left after DROP TABLE t CASCADE: %v", got)
	}
}

// A catalog that already holds a dependency cycle (written before cycles
// were refused) is dropped by DROP ... CASCADE without recursing forever.
func TestDropCascadeCycle(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (a INT)")
	mustExec(t, conn, "CREATE VIEW v1 AS SELECT a FROM t")
	mustExec(t, conn, "CREATE VIEW v2 AS SELECT a FROM v1")
	cat := ts.srv.catalog
	v1 := mustRelation(t, ts.srv, "v1")
	v2 := mustRelation(t, ts.srv, "v2")
	c := *v1
	c.DependsOn = append(append([]catalog.ObjectID(nil), v1.DependsOn...), v2.ID)
	c.Definition = "SELECT a FROM t UNION ALL SELECT a FROM v2"
	if err := cat.UpdateRelation(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
	// Expanding the views meets v1 again inside v1.
	if e := pgErr(t, conn, "SELECT * FROM v2"); e == nil || e.Code != "42P17" || e.Message != `infinite recursion detected in rules for relation "v2"` {
		t.Fatalf("SELECT * FROM v2: got %v; want 42P17", e)
	}
	mustExec(t, conn, "DROP VIEW v2 CASCADE")
	if got := queryStrings(t, conn, "SELECT relname FROM pg_class WHERE relname IN ('t', 'v1', 'v2')"); len(got) != 1 || got[0] != "t" {
		t.Fatalf("after DROP VIEW v2 CASCADE: %v", got)
	}
}
