package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// Issue 17 item 7: every DDL statement writes one ddl event with the
// statement kind, the objects it names, who ran it, in which database, how
// long it took and its outcome (a failure with its SQLSTATE). The keys are
// those docs/operations.md lists.
func TestDDLLogEvents(t *testing.T) {
	log, events := obs.NewEventLog()
	srv := servertest.Start(t, servertest.WithLogger(log))
	conn := servertest.Connect(t, srv.URL())
	stmts := []struct{ sql, kind, objects string }{
		{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE", "t"},
		{"CREATE SCHEMA s", "CREATE SCHEMA", "s"},
		{"CREATE MATERIALIZED VIEW s.mv AS SELECT v, count(*) AS n FROM t GROUP BY v", "CREATE MATERIALIZED VIEW", "s.mv"},
		{"CREATE VIEW pv AS SELECT id FROM t", "CREATE VIEW", "pv"},
		{"CREATE TABLE ctas AS SELECT 1 AS x", "CREATE TABLE", "ctas"},
		{"COMMENT ON TABLE t IS 'facts'", "COMMENT", "t"},
		{"ALTER VIEW pv RENAME TO pv2", "ALTER VIEW", "pv"},
		{"ALTER TABLE ctas ADD COLUMN y INT", "ALTER TABLE", "ctas"},
		{"CREATE FUNCTION add1(x INT) RETURNS INT LANGUAGE sql AS 'SELECT x + 1'", "CREATE FUNCTION", "add1"},
		{"DROP FUNCTION add1(INT)", "DROP FUNCTION", "add1"},
		{"DROP VIEW pv2, nope_ignored", "", ""}, // fails: 42P01
		{"DROP MATERIALIZED VIEW s.mv", "DROP MATERIALIZED VIEW", "s.mv"},
		{"DROP TABLE ctas", "DROP TABLE", "ctas"},
	}
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s.sql); (err == nil) != (s.kind != "") {
			t.Fatalf("%s: %v", s.sql, err)
		}
	}
	// Statements that are not DDL write none.
	servertest.Exec(t, conn, "INSERT INTO t VALUES (1, 1)")
	servertest.Exec(t, conn, "SELECT * FROM t")

	got := events.Events(obs.EventDDL)
	if len(got) != len(stmts) {
		t.Fatalf("%d ddl events for %d DDL statements: %v", len(got), len(stmts), got)
	}
	for i, s := range stmts {
		ev := got[i]
		for _, k := range []string{"level", "msg", "statement", "objects", "user", "database", "duration_seconds", "result"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("event for %q lacks key %q: %v", s.sql, k, ev)
			}
		}
		if ev["user"] != "root" || ev["database"] != "dev" || ev["msg"] != obs.EventDDL {
			t.Errorf("event for %q: %v; want user root, database dev", s.sql, ev)
		}
		if d, ok := ev["duration_seconds"].(float64); !ok || d <= 0 {
			t.Errorf("event for %q: duration_seconds %v", s.sql, ev["duration_seconds"])
		}
		if s.kind == "" {
			if ev["statement"] != "DROP VIEW" || ev["objects"] != "pv2, nope_ignored" || ev["result"] != "failed" || ev["sqlstate"] != "42P01" ||
				ev["level"] != "WARN" || !strings.Contains(fmt.Sprint(ev["error"]), "nope_ignored") {
				t.Errorf("event for the failed %q: %v; want DROP VIEW of both names, failed with 42P01 at WARN", s.sql, ev)
			}
			continue
		}
		if ev["statement"] != s.kind || ev["objects"] != s.objects || ev["result"] != "ok" || ev["level"] != "INFO" {
			t.Errorf("event for %q: %v; want statement %q, objects %q, result ok at INFO", s.sql, ev, s.kind, s.objects)
		}
		if _, ok := ev["error"]; ok {
			t.Errorf("event for %q has an error key: %v", s.sql, ev)
		}
	}
}
