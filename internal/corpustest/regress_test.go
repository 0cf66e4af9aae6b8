package corpustest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// regressCase is one statement the corpus replay found killing, hanging or
// confusing the server, minimized and rewritten by hand.
type regressCase struct {
	sql  string
	code string // "" for success
	rows string // when set (and code is ""), the rows as text, "|"-separated columns, ";"-separated rows
}

// regressCases are the findings of the corpus campaigns (docs/testing.md),
// in the order found. Each failed before its fix in the way its comment
// says.
var regressCases = []regressCase{
	{sql: "CREATE TABLE rt (a INT, b INT, c FLOAT8)"},
	{sql: "INSERT INTO rt VALUES (1, 2, 3), (2, 3, 4), (1, 1, 1), (5, 7, 12), (8, 9, NULL)"},
	// A named window with an empty definition was taken for a reference
	// to itself: the binder recursed until the Go stack overflowed (a
	// fatal error that ends the process).
	{sql: "SELECT count(*) OVER w FROM rt WINDOW w AS () ORDER BY 1 LIMIT 1", rows: "5"},
	{sql: "SELECT count(*) OVER w FROM rt WINDOW w AS (w)", code: "42704"},
	{sql: "SELECT count(*) OVER w FROM rt WINDOW w AS (v), v AS (ORDER BY a)", code: "42704"},
	{sql: "SELECT sum(a) OVER w2 FROM rt WINDOW w1 AS (ORDER BY a), w2 AS (w1) ORDER BY 1", rows: "2;2;4;9;17"},
	// Comparing two empty rows indexed an empty list: a panic that closed
	// the session (XX000 "the connection is closed").
	{sql: "SELECT ROW() = ROW()", code: "0A000"},
	{sql: "SELECT ROW() <> ROW()", code: "0A000"},
	// An IN subquery whose select list names the enclosing query was
	// rewritten into a semi join that evaluated that column without an
	// enclosing row: XX000 "outer reference without an outer row".
	{sql: "SELECT a, c FROM rt o WHERE c IN (SELECT o.a + b FROM rt) ORDER BY a", rows: "1|3;2|4;5|12"},
	{sql: "SELECT a FROM rt o WHERE a NOT IN (SELECT o.a FROM rt WHERE b = 1) ORDER BY a", rows: ""},
	// An aggregate that collects its inputs had no bound: 1,100 strings of
	// 1 MB (and, in the campaign, 5,000 of them) held and then copied
	// several times, which grew the server past the machine's memory.
	// PostgreSQL stops at 1 GB a value with 54000.
	{sql: "SELECT length(string_agg(repeat('x', 1000000), ',')) FROM generate_series(1, 1100)", code: "54000"},
	{sql: "SELECT cardinality(array_agg(repeat('x', 1000000))) FROM generate_series(1, 1100)", code: "54000"},
	{sql: "SELECT length(string_agg(repeat('x', 1000), ',')) FROM generate_series(1, 1000)", rows: "1000999"},
}

func rowsText(res []*pgconn.Result) string {
	var rows []string
	for _, r := range res {
		for _, row := range r.Rows {
			var cols []string
			for _, v := range row {
				if v == nil {
					cols = append(cols, "NULL")
				} else {
					cols = append(cols, string(v))
				}
			}
			rows = append(rows, strings.Join(cols, "|"))
		}
	}
	return strings.Join(rows, ";")
}

// TestCorpusFindings replays the minimized findings against a `runnel
// serve` subprocess (so that a crash shows as an exit, not as the test
// binary dying): each must answer as PostgreSQL does, and the server and
// the session must stay up.
func TestCorpusFindings(t *testing.T) {
	bin := servertest.BuildBinary(t)
	p := servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: t.TempDir()})
	p.WaitReady(t, time.Minute)
	connect := func() *pgconn.PgConn {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgconn.Connect(ctx, p.URL())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "SET statement_timeout = '30s'; SET implicit_flush = true").ReadAll(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	conn := connect()
	defer func() { conn.Close(context.Background()) }()
	for _, c := range regressCases {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res, err := conn.Exec(ctx, c.sql).ReadAll()
		cancel()
		if err != nil && conn.IsClosed() {
			// A dying process may still be writing its stack traces.
			select {
			case <-p.Done():
			case <-time.After(5 * time.Second):
			}
		}
		if p.Exited() {
			t.Fatalf("%s: the server died (%v); log:\n%s", c.sql, p.WaitErr(), servertest.Tail(p.LogPath))
		}
		code := ""
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			code = pe.Code
		} else if err != nil {
			code = fmt.Sprintf("(no SQLSTATE: %v)", err)
		}
		switch {
		case code != c.code:
			t.Errorf("%s: got %q (%v), want %q", c.sql, code, err, c.code)
		case c.code == "" && c.rows != "" || strings.HasPrefix(c.sql, "SELECT") && c.code == "":
			if got := rowsText(res); got != c.rows {
				t.Errorf("%s: rows %q, want %q", c.sql, got, c.rows)
			}
		}
		if conn.IsClosed() {
			t.Errorf("%s: the session was closed", c.sql)
			conn = connect()
		}
	}
}
