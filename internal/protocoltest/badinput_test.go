package protocoltest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// badStatements fail the same way on PostgreSQL and on Runnel: same
// SQLSTATE, same error position (the character PostgreSQL's caret points
// at, or none). Each is run after the table bi (a int PRIMARY KEY, b int,
// c text) holds the row (1, 1, 'x').
var badStatements = []struct {
	code string // documents the expected SQLSTATE; PostgreSQL must agree
	sql  string
	// noPosition explains why Runnel does not yet report PostgreSQL's
	// error position for this statement (only the SQLSTATE is compared;
	// the test fails once the positions agree, to have the note removed).
	noPosition string
}{
	// syntax errors: 42601 with the position of the offending token
	{code: "42601", sql: "SELEC 1"},
	{code: "42601", sql: "SELECT 1 +"},
	{code: "42601", sql: "SELECT a FROM bi WHERE"},
	{code: "42601", sql: "SELECT (1"},
	{code: "42601", sql: "INSERT INTO bi VALUES (1,"},
	{code: "42601", sql: "SELECT 'unterminated"},
	{code: "42601", sql: "CREATE TABLE bx (a int,)"},
	{code: "42601", sql: "SELECT a FROM bi ORDER a"},
	{code: "42601", sql: "SELECT 1;\nSELECT 2 FROM FROM bi"},
	// missing objects
	{code: "42P01", sql: "SELECT * FROM missing"},
	{code: "42P01", sql: "INSERT INTO missing VALUES (1)"},
	{code: "42P01", sql: "UPDATE missing SET a = 1"},
	{code: "42P01", sql: "DELETE FROM missing"},
	{code: "42P01", sql: "DROP TABLE missing"},
	{code: "42P01", sql: "SELECT x.a FROM bi"},
	{code: "42703", sql: "SELECT nope FROM bi"},
	{code: "42703", sql: "INSERT INTO bi (a, nope) VALUES (1, 2)"},
	{code: "42883", sql: "SELECT nosuchfunc(1)"},
	{code: "42883", sql: "SELECT 1 + 'a'::text"},
	// type errors
	{code: "42804", sql: "INSERT INTO bi VALUES (2, true, 'y')"},
	{code: "42804", sql: "UPDATE bi SET b = 'x'::text"},
	{code: "42804", sql: "SELECT a FROM bi WHERE c"},
	{code: "42804", sql: "SELECT a FROM bi UNION SELECT c FROM bi", noPosition: "set operations type their columns from the bound plans, which have no query-text locations"},
	{code: "42804", sql: "SELECT CASE WHEN true THEN 1 ELSE 'x'::text END", noPosition: "expr.CommonType reports no index; PostgreSQL also resolves the ELSE branch first"},
	{code: "22P02", sql: "SELECT 'x'::int"},
	{code: "22P02", sql: "INSERT INTO bi VALUES ('abc', 1, 'y')"},
	{code: "22P02", sql: "UPDATE bi SET b = 'abc'"},
	{code: "22P02", sql: "INSERT INTO bi VALUES (7, 1, 'y'), ('x', 2, 'z')"},
	{code: "22P02", sql: "INSERT INTO bi (a, b) SELECT 8, 'nine'",
		noPosition: "the SELECT's untyped literal is converted to the column type when the statement executes"},
	{code: "22P02", sql: "SELECT a FROM bi WHERE b = 'one'"},
	{code: "22P02", sql: "SELECT '1.5'::integer"},
	{code: "22P02", sql: "SELECT 'maybe'::boolean"},
	{code: "22007", sql: "SELECT 'yesterday-ish'::date", noPosition: "date literals are parsed at execution (their meaning depends on DateStyle), where locations are gone"},
	{code: "22008", sql: "SELECT '2024-13-01'::date", noPosition: "date literals are parsed at execution (their meaning depends on DateStyle), where locations are gone"},
	{code: "22003", sql: "SELECT 2147483647 + 1"},
	{code: "22003", sql: "SELECT 32768::smallint"},
	{code: "22012", sql: "SELECT 1/0"},
	{code: "42803", sql: "SELECT a, count(*) FROM bi GROUP BY b"},
	{code: "42803", sql: "SELECT a FROM bi WHERE count(*) > 1"},
	{code: "42702", sql: "SELECT a FROM bi, bi AS bj"},
	// constraints and duplicates
	{code: "23505", sql: "INSERT INTO bi VALUES (1, 2, 'dup')"},
	{code: "23505", sql: "INSERT INTO bi VALUES (5, 0, 'p'), (5, 0, 'q')"},
	{code: "23502", sql: "INSERT INTO bi VALUES (NULL, 1, 'x')"},
	{code: "42P07", sql: "CREATE TABLE bi (z int)"},
	{code: "42601", sql: "INSERT INTO bi VALUES (1, 2, 'x', 4)"},
}

// pgErr returns the *pgconn.PgError in err, or a placeholder describing a
// non-SQL error or a success.
func pgErr(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	if err == nil {
		return &pgconn.PgError{Code: "(success)"}
	}
	return &pgconn.PgError{Code: "(non-SQL error)", Message: err.Error()}
}

// TestBadInput runs every bad statement over the simple and the extended
// protocol on Runnel and on PostgreSQL and compares SQLSTATE and error
// position; after each, the same session must answer a query (and, after
// a failed write, hold exactly the rows it held before).
func TestBadInput(t *testing.T) {
	p := newPair(t)
	ctx := testCtx(t)
	p.exec(t, "CREATE TABLE bi (a int PRIMARY KEY, b int, c text)")
	p.exec(t, "INSERT INTO bi VALUES (1, 1, 'x')")
	servertest.Exec(t, p.rw, "FLUSH")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		for _, bad := range badStatements {
			_, rwErr := p.rw.Exec(ctx, bad.sql, mode)
			_, pgErrV := p.pg.Exec(ctx, bad.sql, mode)
			got, want := pgErr(rwErr), pgErr(pgErrV)
			if want.Code != bad.code {
				t.Fatalf("test case %q: PostgreSQL says %s (%s); the case expects %s", bad.sql, want.Code, want.Message, bad.code)
			}
			samePos := got.Position == want.Position
			if bad.noPosition != "" {
				if samePos {
					t.Errorf("%v: %q: the positions now agree; remove the note %q", mode, bad.sql, bad.noPosition)
				}
				samePos = true
			}
			if got.Code != want.Code || !samePos {
				t.Errorf("%v: %q: runnel %s at %d (%s); postgresql %s at %d (%s)", mode, bad.sql,
					got.Code, got.Position, got.Message, want.Code, want.Position, want.Message)
			} else if got.Message != want.Message {
				t.Logf("%v: %q: messages differ:\n  runnel:     %s\n  postgresql: %s", mode, bad.sql, got.Message, want.Message)
			}
			// The session still works and nothing was written.
			servertest.Exec(t, p.rw, "FLUSH")
			if rows := servertest.QueryText(t, p.rw, "SELECT a, b, c FROM bi ORDER BY a"); fmt.Sprint(rows) != "[1|1|x]" {
				t.Fatalf("%v: after %q the table holds %v", mode, bad.sql, rows)
			}
		}
	}
}

// unsupportedStatements are valid PostgreSQL that Runnel does not
// support: each must fail with 0A000 and a message naming the feature.
var unsupportedStatements = []struct{ sql, feature, code string }{
	{sql: "SELECT * FROM bi FOR UPDATE", feature: "FOR UPDATE"},
	{sql: "CREATE TRIGGER tr AFTER INSERT ON bi FOR EACH ROW EXECUTE FUNCTION f()", feature: "CREATE TRIGGER"},
	{sql: "LISTEN chan", feature: "LISTEN"},
	{sql: "CREATE FUNCTION f() RETURNS int AS 'begin return 1; end' LANGUAGE plpgsql", feature: "language plpgsql"},
	{sql: "SELECT * FROM bi TABLESAMPLE SYSTEM (5)", feature: "TABLESAMPLE"},
	{sql: "CREATE TABLE part (a int) PARTITION BY RANGE (a)", feature: "partitioning"},
	{sql: "DECLARE cur CURSOR FOR SELECT 1", feature: "CURSOR"},
	{sql: "CREATE TABLE fk (a int REFERENCES bi (a))", feature: "FOREIGN"},
	{sql: "CREATE TABLE ck (a int CHECK (a > 0))", feature: "CHECK"},
	{sql: "CREATE TEMP TABLE tmp (a int)", feature: "temporary tables"},
	{sql: "CREATE SEQUENCE seq", feature: "CREATE SEQUENCE"},
	{sql: "LOCK TABLE bi", feature: "LOCK"},
	{sql: "SELECT * FROM bi, LATERAL (SELECT 1) x", feature: "LATERAL"},
	{sql: "SELECT xmlparse(document '<a/>')", feature: "XML"},
	// PostgreSQL's own code for a server-side file a role may not use.
	{sql: "COPY bi TO '/tmp/runnel-never-written'", feature: "COPY to or from a file", code: "42501"},
	{sql: "PREPARE ps AS SELECT 1", feature: "PREPARE"},
}

// TestUnsupportedFeatures checks 0A000 naming the feature, in both
// protocols, each followed by a working query on the same session.
func TestUnsupportedFeatures(t *testing.T) {
	srv := servertest.Start(t)
	conn := srv.Connect(t)
	ctx := testCtx(t)
	servertest.Exec(t, conn, "CREATE TABLE bi (a int PRIMARY KEY, b int, c text)")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		for _, u := range unsupportedStatements {
			_, err := conn.Exec(ctx, u.sql, mode)
			pe := pgErr(err)
			code := u.code
			if code == "" {
				code = "0A000"
			}
			if pe.Code != code || !strings.Contains(strings.ToLower(pe.Message), strings.ToLower(u.feature)) {
				t.Errorf("%v: %q: %s %q; want %s naming %q", mode, u.sql, pe.Code, pe.Message, code, u.feature)
			}
			var one int
			if err := conn.QueryRow(ctx, "SELECT 1", mode).Scan(&one); err != nil || one != 1 {
				t.Fatalf("%v: after %q: %d %v", mode, u.sql, one, err)
			}
		}
	}
}

// TestUniqueViolationDetail checks the 23505 error's fields: the message
// and detail psql shows, and the schema, table and constraint names that
// drivers expose.
func TestUniqueViolationDetail(t *testing.T) {
	p := newPair(t)
	ctx := testCtx(t)
	p.exec(t, "CREATE TABLE uv (id int PRIMARY KEY, v text)")
	p.exec(t, "INSERT INTO uv VALUES (7, 'a')")
	_, rwErr := p.rw.Exec(ctx, "INSERT INTO uv VALUES (7, 'b')")
	_, pgErrV := p.pg.Exec(ctx, "INSERT INTO uv VALUES (7, 'b')")
	got, want := pgErr(rwErr), pgErr(pgErrV)
	if got.Code != want.Code || got.Message != want.Message || got.Detail != want.Detail ||
		got.ConstraintName != want.ConstraintName || got.TableName != want.TableName || got.SchemaName != want.SchemaName {
		t.Errorf("runnel %+v\npostgresql %+v", *got, *want)
	}
}
