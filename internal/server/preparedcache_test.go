package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A prepared statement keeps its binding between executions only while
// the catalog and search_path are unchanged: the same statement text
// (pgx's statement cache reuses one server-side statement) follows
// search_path, a table dropped and created again, and a table dropped for
// good.
func TestPreparedStatementRebinds(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = true")
	mustExec(t, conn, "CREATE SCHEMA s2")
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
	mustExec(t, conn, "CREATE TABLE s2.t (id INT PRIMARY KEY, v TEXT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 'public')")
	mustExec(t, conn, "INSERT INTO s2.t VALUES (1, 's2')")
	const q = "SELECT v FROM t WHERE id = $1"
	check := func(want string) {
		t.Helper()
		if got := fmt.Sprint(queryStrings(t, conn, q, int32(1))); got != want {
			t.Fatalf("%s: %s; want %s", q, got, want)
		}
	}
	check("[public]")
	check("[public]")
	mustExec(t, conn, "SET search_path = s2")
	check("[s2]")
	mustExec(t, conn, "UPDATE t SET v = 's2 updated' WHERE id = $1", int32(1))
	mustExec(t, conn, "RESET search_path")
	check("[public]")
	mustExec(t, conn, "UPDATE t SET v = 'public updated' WHERE id = $1", int32(1))
	check("[public updated]")
	mustExec(t, conn, "DROP TABLE t")
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 'recreated')")
	check("[recreated]")
	mustExec(t, conn, "UPDATE t SET v = 'recreated updated' WHERE id = $1", int32(1))
	check("[recreated updated]")
	mustExec(t, conn, "DROP TABLE t")
	_, err := conn.Exec(context.Background(), q, int32(1))
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Fatalf("%s after DROP TABLE: %v; want 42P01", q, err)
	}
	mustExec(t, conn, "SET search_path = s2")
	check("[s2 updated]")
}
