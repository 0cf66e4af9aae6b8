package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestMaterializedViewLifecycle(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, g INT, v BIGINT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i % 3, i FROM generate_series(1, 100) i")
	// Created over existing rows (backfill) while more arrive.
	mustExec(t, conn, "CREATE MATERIALIZED VIEW agg AS SELECT g, count(*) AS n, sum(v) AS s, max(v) AS mx FROM t GROUP BY g")
	if got := queryStrings(t, conn, "SELECT g, n, s::bigint, mx FROM agg ORDER BY g"); fmt.Sprint(got) != "[0|33|1683|99 1|34|1717|100 2|33|1650|98]" {
		t.Fatalf("agg after create = %v", got)
	}
	mustExec(t, conn, "UPDATE t SET g = 0 WHERE id = 100")
	mustExec(t, conn, "DELETE FROM t WHERE id = 99")
	mustExec(t, conn, "INSERT INTO t VALUES (1000, 2, 5)")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT g, n, s::bigint, mx FROM agg ORDER BY g"); fmt.Sprint(got) != "[0|33|1684|100 1|33|1617|97 2|34|1655|98]" {
		t.Fatalf("agg after changes = %v", got)
	}
	// A view on the view, a join, and a filter view.
	mustExec(t, conn, "CREATE MATERIALIZED VIEW top AS SELECT g, n FROM agg WHERE n > 33")
	mustExec(t, conn, "CREATE TABLE names (g INT PRIMARY KEY, name TEXT)")
	mustExec(t, conn, "INSERT INTO names VALUES (0, 'zero'), (1, 'one')")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW j AS SELECT t.id, names.name FROM t JOIN names ON t.g = names.g WHERE t.id < 5")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT g, n FROM top"); fmt.Sprint(got) != "[2|34]" {
		t.Fatalf("view on view = %v", got)
	}
	if got := queryStrings(t, conn, "SELECT id, name FROM j ORDER BY id"); fmt.Sprint(got) != "[1|one 3|zero 4|one]" {
		t.Fatalf("join view = %v", got)
	}
	// Dependents block a plain drop (2BP01); CASCADE drops them.
	_, err := conn.Exec(context.Background(), "DROP MATERIALIZED VIEW agg")
	if err == nil || !strings.Contains(err.Error(), "2BP01") {
		t.Fatalf("drop with dependents: %v", err)
	}
	mustExec(t, conn, "DROP MATERIALIZED VIEW agg CASCADE")
	if _, err := conn.Exec(context.Background(), "SELECT * FROM top"); err == nil || !strings.Contains(err.Error(), "42P01") {
		t.Fatalf("select from dropped view: %v", err)
	}
	mustExec(t, conn, "DROP TABLE names CASCADE")
	mustExec(t, conn, "INSERT INTO t VALUES (2000, 1, 1)")
	mustExec(t, conn, "FLUSH")
}

// Views come back after a restart with their contents, and keep being
// maintained.
func TestMaterializedViewSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, g INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i % 2 FROM generate_series(1, 10) i")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW c AS SELECT g, count(*) AS n FROM t GROUP BY g")
	conn.Close(context.Background())
	ts.stop()

	ts2 := startTestServer(t, dir)
	conn2 := ts2.connect(t)
	if got := queryStrings(t, conn2, "SELECT g, n FROM c ORDER BY g"); fmt.Sprint(got) != "[0|5 1|5]" {
		t.Fatalf("after restart = %v", got)
	}
	mustExec(t, conn2, "INSERT INTO t VALUES (11, 1)")
	mustExec(t, conn2, "FLUSH")
	if got := queryStrings(t, conn2, "SELECT g, n FROM c ORDER BY g"); fmt.Sprint(got) != "[0|5 1|6]" {
		t.Fatalf("maintained after restart = %v", got)
	}
}

// IN / EXISTS / NOT EXISTS subqueries become semi and anti joins.
func TestMaterializedViewSemiAntiJoin(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE a (id INT PRIMARY KEY, k INT)")
	mustExec(t, conn, "CREATE TABLE b (id INT PRIMARY KEY, k INT)")
	mustExec(t, conn, "INSERT INTO a VALUES (1, 10), (2, 20), (3, 30)")
	mustExec(t, conn, "INSERT INTO b VALUES (1, 10), (2, 10)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW semi AS SELECT id FROM a WHERE k IN (SELECT k FROM b)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW anti AS SELECT id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)")
	check := func(wantSemi, wantAnti string) {
		t.Helper()
		mustExec(t, conn, "FLUSH")
		if got := fmt.Sprint(queryStrings(t, conn, "SELECT id FROM semi ORDER BY id")); got != wantSemi {
			t.Fatalf("semi = %s; want %s", got, wantSemi)
		}
		if got := fmt.Sprint(queryStrings(t, conn, "SELECT id FROM anti ORDER BY id")); got != wantAnti {
			t.Fatalf("anti = %s; want %s", got, wantAnti)
		}
	}
	check("[1]", "[2 3]")
	mustExec(t, conn, "INSERT INTO b VALUES (3, 30)")
	check("[1 3]", "[2]")
	mustExec(t, conn, "DELETE FROM b WHERE k = 10")
	check("[3]", "[1 2]")
	mustExec(t, conn, "UPDATE a SET k = 30 WHERE id = 2")
	check("[2 3]", "[1]")
}
