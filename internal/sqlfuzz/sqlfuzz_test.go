package sqlfuzz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// stmtTimeout bounds one statement; the server's statement_timeout is set
// a little lower so that the server, not the client, ends a slow one.
const stmtTimeout = 90 * time.Second

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func seed(t testing.TB) int64 {
	s := int64(envInt("RUNNEL_TEST_SEED", int(time.Now().UnixNano()%1_000_000_000)))
	t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays)", s, s)
	return s
}

// outcome is what one statement did.
type outcome struct {
	code string // "" on success
	err  error  // an error that is not a server error: a dead session
}

// run executes sql on conn and classifies the result.
func run(conn *pgx.Conn, sql string) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	_, err := conn.Exec(ctx, sql)
	if err == nil {
		return outcome{}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && len(pe.Code) == 5 && !conn.IsClosed() {
		return outcome{code: pe.Code}
	}
	return outcome{err: err}
}

func short(sql string) string {
	if len(sql) > 300 {
		return sql[:300] + fmt.Sprintf("... (%d bytes)", len(sql))
	}
	return sql
}

// session opens a connection with the test's settings.
func session(t testing.TB, url string) *pgx.Conn {
	conn := servertest.Connect(t, url)
	servertest.Exec(t, conn, "SET statement_timeout = '60s'")
	return conn
}

// The statements that ended the process before issue 13, each must now
// succeed or fail with a SQLSTATE, and the server must stay up.
func TestInputCannotKillServer(t *testing.T) {
	bin := servertest.BuildBinary(t)
	p := servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: t.TempDir()})
	p.WaitReady(t, time.Minute)
	conn := session(t, p.URL())
	for _, c := range []struct{ sql, code string }{
		{"CREATE TABLE t (x INT, y INT)", ""},
		{"INSERT INTO t VALUES (1, 1), (1, 2), (1, 3), (1, 4), (2, 5)", ""},
		// pg_query's Deparse dereferenced the empty alias the binder gave
		// the subquery: SIGSEGV.
		{"CREATE MATERIALIZED VIEW mv AS SELECT x, y FROM (SELECT *, row_number() OVER (PARTITION BY x ORDER BY y) AS rank FROM t) WHERE rank <= 3", ""},
		{"CREATE VIEW v AS SELECT * FROM (SELECT x FROM t), (VALUES (1)) WHERE x > 0", ""},
		// pg_query's C conversion of a 30,000-deep tree to protobuf
		// overflowed the thread's stack: SIGSEGV.
		{"SELECT " + strings.Repeat("1+", 30000) + "1", "54001"},
		{"SELECT x" + strings.Repeat("::int", 30000) + " FROM t", "54001"},
		{strings.Repeat("SELECT 1 UNION ALL ", 30000) + "SELECT 1", "54001"},
		{"CREATE MATERIALIZED VIEW deep AS SELECT " + strings.Repeat("x+", 30000) + "x FROM t", "54001"},
		{"SELECT " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000), "54001"},
		// A dependency cycle, then DROP ... CASCADE: a Go stack overflow.
		{"CREATE VIEW v1 AS SELECT x FROM t", ""},
		{"CREATE VIEW v2 AS SELECT x FROM v1", ""},
		{"CREATE OR REPLACE VIEW v1 AS SELECT x FROM v2", "42P17"},
		{"DROP VIEW v1 CASCADE", ""},
		// JSON and arrays nested past the bounds.
		{"SELECT '" + strings.Repeat("[", 100000) + "'::jsonb", "54001"},
		{"SELECT ARRAY" + strings.Repeat("[", 30000) + "1" + strings.Repeat("]", 30000), "54001"},
		// A 16 MB literal: a clean answer, not an out-of-memory death.
		{"SELECT length('" + strings.Repeat("x", 16<<20) + "')", ""},
	} {
		got := run(conn, c.sql)
		if p.Exited() {
			t.Fatalf("%s: the server died (%v); log:\n%s", short(c.sql), p.WaitErr(), servertest.Tail(p.LogPath))
		}
		if got.err != nil || got.code != c.code {
			t.Errorf("%s: got %q %v; want %q", short(c.sql), got.code, got.err, c.code)
		}
		if got.err != nil {
			conn = session(t, p.URL())
		}
	}
	servertest.Exec(t, conn, "FLUSH")
	if got := servertest.QueryStrings(t, conn, "SELECT x, y FROM mv ORDER BY x, y"); fmt.Sprint(got) != "[1|1 1|2 1|3 2|5]" {
		t.Fatalf("mv = %v", got)
	}
}

// TestRandomSQL runs Gen's statements against an in-process server: none
// may kill the process (that would kill this test binary) or the session,
// and every error must carry a SQLSTATE.
func TestRandomSQL(t *testing.T) {
	n := envInt("RUNNEL_SQLFUZZ_STATEMENTS", 300)
	srv := servertest.Start(t)
	conn := session(t, srv.URL())
	for _, s := range Setup {
		servertest.Exec(t, conn, s)
	}
	g := NewGen(seed(t))
	if n < 2000 {
		g.Huge = 1 << 20 // keep the default run quick
	}
	codes := map[string]int{}
	start := time.Now()
	for i := 0; i < n; i++ {
		sql := g.Next()
		got := run(conn, sql)
		if got.err != nil {
			t.Fatalf("statement %d: %s: %v (the session died)", i, short(sql), got.err)
		}
		codes[got.code]++
		if got.code == "XX000" && codes["XX000"] <= 5 {
			t.Logf("internal error: %s", short(sql))
		}
	}
	var keys []string
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		name := k
		if k == "" {
			name = "ok"
		}
		fmt.Fprintf(&b, " %s:%d", name, codes[k])
	}
	t.Logf("%d statements in %v; outcomes:%s", n, time.Since(start).Round(time.Millisecond), b.String())
}

// FuzzSQL executes arbitrary text as a simple query. Run it with
// go test -run '^$' -fuzz FuzzSQL -fuzztime 10m ./internal/sqlfuzz/
func FuzzSQL(f *testing.F) {
	g := NewGen(1)
	g.Huge = 64 << 10
	for i := 0; i < 200; i++ {
		f.Add(g.Next())
	}
	srv := servertest.Start(f)
	conn := session(f, srv.URL())
	for _, s := range Setup {
		servertest.Exec(f, conn, s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		if conn.IsClosed() {
			conn = session(t, srv.URL())
		}
		got := run(conn, sql)
		if got.err != nil {
			var pe *pgconn.PgError
			if errors.As(got.err, &pe) && pe.Severity == "FATAL" {
				conn = session(t, srv.URL()) // a FATAL error ends the session by design
				return
			}
			t.Fatalf("%s: %v", short(sql), got.err)
		}
	})
}
