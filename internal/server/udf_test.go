package server_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func wantRows(t *testing.T, conn *pgx.Conn, q string, want ...string) {
	t.Helper()
	got, err := servertest.TryQueryText(conn, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", q, got, want)
	}
}

func wantCode(t *testing.T, conn *pgx.Conn, q, code string) {
	t.Helper()
	_, err := conn.Exec(context.Background(), q)
	if sqlState(err) != code {
		t.Fatalf("%s: got %v, want SQLSTATE %s", q, err, code)
	}
}

// SQL functions end to end (issue 15): created, called in queries and
// inlined into a materialized view that stays incremental; the view
// depends on the function (DROP refused with 2BP01, CASCADE drops the
// view; CREATE OR REPLACE refused while the view inlined it, allowed for
// a plain view, which sees the new body); functions and the view survive
// a restart; psql's \df query (pg_proc with pg_get_function_arguments)
// lists them.
func TestSQLFunctionsEndToEnd(t *testing.T) {
	s := servertest.Start(t)
	conn := s.Connect(t)
	servertest.Exec(t, conn, "CREATE TABLE o (id int PRIMARY KEY, qty int, price numeric)")
	servertest.Exec(t, conn, "CREATE FUNCTION total(q int, p numeric) RETURNS numeric LANGUAGE sql IMMUTABLE AS 'select q * p'")
	servertest.Exec(t, conn, "CREATE FUNCTION band(v numeric) RETURNS text LANGUAGE sql AS $$select case when v >= 100 then 'big' else 'small' end$$")
	servertest.Exec(t, conn, "CREATE MATERIALIZED VIEW mv AS SELECT band(total(qty, price)) AS b, count(*) AS n, sum(total(qty, price)) AS s FROM o GROUP BY 1")
	servertest.Exec(t, conn, "CREATE VIEW v AS SELECT id, band(price) AS b FROM o")
	servertest.Exec(t, conn, "INSERT INTO o VALUES (1, 2, 60), (2, 1, 5), (3, 10, 10)")
	servertest.Exec(t, conn, "FLUSH", pgx.QueryExecModeSimpleProtocol)
	wantRows(t, conn, "SELECT b, n, s FROM mv ORDER BY b", "big|2|220", "small|1|5")
	servertest.Exec(t, conn, "DELETE FROM o WHERE id = 1")
	servertest.Exec(t, conn, "FLUSH", pgx.QueryExecModeSimpleProtocol)
	wantRows(t, conn, "SELECT b, n, s FROM mv ORDER BY b", "big|1|100", "small|1|5")
	wantRows(t, conn, "SELECT total(3, 1.5), public.total(2, 2)", "4.5|4")

	wantCode(t, conn, "DROP FUNCTION band", "2BP01")
	wantCode(t, conn, "CREATE OR REPLACE FUNCTION band(v numeric) RETURNS text LANGUAGE sql AS 'select ''x'''", "0A000")
	wantCode(t, conn, "CREATE FUNCTION band(v numeric) RETURNS text LANGUAGE sql AS 'select ''x'''", "42723")
	wantCode(t, conn, "CREATE OR REPLACE FUNCTION total(q int, p numeric) RETURNS int LANGUAGE sql AS 'select 1'", "42P13")
	wantCode(t, conn, "DROP FUNCTION nosuch(int)", "42883")
	servertest.Exec(t, conn, "DROP FUNCTION IF EXISTS nosuch(int)")

	// A plain view expands the function at each use: a new body shows.
	servertest.Exec(t, conn, "CREATE FUNCTION tag(i int) RETURNS text LANGUAGE sql AS 'select ''a'' || i'")
	servertest.Exec(t, conn, "CREATE VIEW tv AS SELECT tag(id) AS t FROM o")
	wantRows(t, conn, "SELECT t FROM tv ORDER BY t", "a2", "a3")
	servertest.Exec(t, conn, "CREATE OR REPLACE FUNCTION tag(i int) RETURNS text LANGUAGE sql AS 'select ''b'' || i'")
	wantRows(t, conn, "SELECT t FROM tv ORDER BY t", "b2", "b3")

	// psql's \df.
	wantRows(t, conn, `SELECT p.proname, pg_catalog.pg_get_function_arguments(p.oid), pg_catalog.pg_get_function_result(p.oid)
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' ORDER BY 1`,
		"band|v numeric|text", "tag|i integer|text", "total|q integer, p numeric|numeric")

	s = s.Restart(t)
	conn = s.Connect(t)
	servertest.Exec(t, conn, "INSERT INTO o VALUES (4, 1, 200)")
	servertest.Exec(t, conn, "FLUSH", pgx.QueryExecModeSimpleProtocol)
	wantRows(t, conn, "SELECT b, n, s FROM mv ORDER BY b", "big|2|300", "small|1|5")
	wantRows(t, conn, "SELECT id, b FROM v ORDER BY id", "2|small", "3|small", "4|big")
	wantRows(t, conn, "SELECT t FROM tv ORDER BY t", "b2", "b3", "b4")

	servertest.Exec(t, conn, "DROP FUNCTION band CASCADE")
	wantCode(t, conn, "SELECT * FROM mv", "42P01")
	wantCode(t, conn, "SELECT * FROM v", "42P01")
	wantCode(t, conn, "SELECT band(1)", "42883")

	// DROP SCHEMA ... CASCADE takes the schema's functions.
	servertest.Exec(t, conn, "CREATE SCHEMA s1")
	servertest.Exec(t, conn, "CREATE FUNCTION s1.one() RETURNS int LANGUAGE sql RETURN 1")
	wantRows(t, conn, "SELECT s1.one()", "1")
	wantCode(t, conn, "DROP SCHEMA s1", "2BP01")
	servertest.Exec(t, conn, "DROP SCHEMA s1 CASCADE")
	wantCode(t, conn, "SELECT s1.one()", "42883")
}

// CREATE TABLE ... AS: a table with the query's columns holding its rows
// (tagged SELECT n as PostgreSQL does), WITH NO DATA empty; a fill that
// fails leaves no table; the table is an ordinary table afterwards
// (DML, views) and survives a restart.
func TestCreateTableAs(t *testing.T) {
	s := servertest.Start(t)
	conn := s.Connect(t)
	servertest.Exec(t, conn, "CREATE TABLE src (a int, b text)")
	servertest.Exec(t, conn, "INSERT INTO src VALUES (1, 'x'), (2, 'y'), (3, NULL)")
	servertest.Exec(t, conn, "FLUSH", pgx.QueryExecModeSimpleProtocol)
	tag, err := conn.Exec(context.Background(), "CREATE TABLE c1 AS SELECT a * 10 AS a10, upper(b) AS ub, 'k' AS k FROM src WHERE a > 1")
	if err != nil || tag.String() != "SELECT 2" {
		t.Fatalf("CREATE TABLE AS: tag %q, %v", tag.String(), err)
	}
	wantRows(t, conn, "SELECT a10, ub, k, pg_typeof(k) FROM c1 ORDER BY a10", "20|Y|k|text", "30|NULL|k|text")
	servertest.Exec(t, conn, "CREATE TABLE c2 (x, y) AS SELECT a, b FROM src WITH NO DATA")
	wantRows(t, conn, "SELECT count(*) FROM c2", "0")
	wantRows(t, conn, "SELECT column_name FROM information_schema.columns WHERE table_name = 'c2' ORDER BY ordinal_position", "x", "y")
	servertest.Exec(t, conn, "CREATE TABLE IF NOT EXISTS c1 AS SELECT 1")
	wantCode(t, conn, "CREATE TABLE c1 AS SELECT 1", "42P07")
	wantCode(t, conn, "CREATE TABLE bad AS SELECT 1 / (a - 2) FROM src", "22012")
	wantCode(t, conn, "SELECT * FROM bad", "42P01")
	servertest.Exec(t, conn, "INSERT INTO c1 VALUES (40, 'Z', 'k')")
	servertest.Exec(t, conn, "CREATE MATERIALIZED VIEW cmv AS SELECT count(*) AS n FROM c1")
	s = s.Restart(t)
	conn = s.Connect(t)
	wantRows(t, conn, "SELECT a10 FROM c1 ORDER BY a10", "20", "30", "40")
	wantRows(t, conn, "SELECT n FROM cmv", "3")
	if got := servertest.QueryText(t, conn, "SELECT count(*) FROM src"); !strings.EqualFold(strings.Join(got, ""), "3") {
		t.Fatalf("src: %v", got)
	}
}
