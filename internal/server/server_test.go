package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/testutil/wiretest"
)

// testServer is a real Runnel server on a loopback port with its own data
// directory. Tests outside this package use internal/testutil/servertest;
// this package's tests cannot (it imports this package), so they share its
// client half, wiretest, and keep this thin wrapper for unexported access.
type testServer struct {
	*wiretest.Served
	t       testing.TB
	dataDir string
	srv     *Server
	addr    string
}

func startTestServer(t testing.TB, dataDir string) *testServer {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	srv, err := Open(context.Background(), Config{
		DataDir:         dataDir,
		BarrierInterval: 50 * time.Millisecond,
		Logger:          testLogger(),
	})
	if err != nil {
		t.Fatalf("open server: %v", err)
	}
	served := wiretest.Serve(t, srv)
	return &testServer{Served: served, t: t, dataDir: dataDir, srv: srv, addr: served.Addr}
}

// stop closes the server (the data directory stays for a restart).
func (ts *testServer) stop() {
	if err := ts.Stop(); err != nil {
		ts.t.Fatalf("stop server: %v", err)
	}
}

func (ts *testServer) url() string { return ts.URL() }

func (ts *testServer) connect(t testing.TB) *pgx.Conn {
	t.Helper()
	return ts.Connect(t)
}

func mustExec(t testing.TB, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	wiretest.Exec(t, conn, sql, args...)
}

// queryStrings runs a query and renders every row as text, for compact
// assertions.
func queryStrings(t testing.TB, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	return wiretest.QueryStrings(t, conn, sql, args...)
}

func TestSessionBasics(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	if got := queryStrings(t, conn, "SHOW timezone"); len(got) != 1 || got[0] != "UTC" {
		t.Fatalf("SHOW timezone = %v", got)
	}
	mustExec(t, conn, "SET TIME ZONE 'Europe/Berlin'")
	if got := queryStrings(t, conn, "SHOW TimeZone"); got[0] != "Europe/Berlin" {
		t.Fatalf("after SET, TimeZone = %v", got)
	}
	mustExec(t, conn, "SET RW_IMPLICIT_FLUSH TO true")
	if got := queryStrings(t, conn, "SHOW implicit_flush"); got[0] != "on" {
		t.Fatalf("implicit_flush = %v", got)
	}
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SHOW DATABASES"); len(got) != 1 || got[0] != "dev" {
		t.Fatalf("SHOW DATABASES = %v", got)
	}
}

func TestTableRoundTrip(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR, score DOUBLE PRECISION)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 'a', 1.5), (2, 'b', NULL), (3, 'c', -2)")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT id, name, score FROM t ORDER BY id"); fmt.Sprint(got) != "[1|a|1.5 2|b|<nil> 3|c|-2]" {
		t.Fatalf("rows = %v", got)
	}
	_, err := conn.Exec(context.Background(), "INSERT INTO t VALUES (2, 'dup', 0)")
	if err == nil || !strings.Contains(err.Error(), "23505") {
		t.Fatalf("duplicate key: err = %v; want 23505", err)
	}
	mustExec(t, conn, "UPDATE t SET score = score * 2 WHERE id <> 2")
	mustExec(t, conn, "DELETE FROM t WHERE id = 1")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT id, score FROM t ORDER BY id"); fmt.Sprint(got) != "[2|<nil> 3|-4]" {
		t.Fatalf("after update/delete rows = %v", got)
	}
	// A table without a primary key gets a hidden row id.
	mustExec(t, conn, "CREATE TABLE nokey (v INT)")
	mustExec(t, conn, "INSERT INTO nokey VALUES (1), (1), (2)")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT v, count(*) FROM nokey GROUP BY v ORDER BY v"); fmt.Sprint(got) != "[1|2 2|1]" {
		t.Fatalf("nokey = %v", got)
	}
	if got := queryStrings(t, conn, "SELECT * FROM nokey ORDER BY v LIMIT 1"); fmt.Sprint(got) != "[1]" {
		t.Fatalf("SELECT * exposes hidden columns: %v", got)
	}
}

// Rows that were FLUSHed survive a restart of the server.
func TestRestartKeepsFlushedRows(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
	mustExec(t, conn, "INSERT INTO t SELECT g, 'row ' || g::text FROM generate_series(1, 1000) g")
	mustExec(t, conn, "FLUSH")
	conn.Close(context.Background())
	ts.stop()

	ts2 := startTestServer(t, dir)
	conn2 := ts2.connect(t)
	if got := queryStrings(t, conn2, "SELECT count(*), sum(id)::bigint, max(v) FROM t"); fmt.Sprint(got) != "[1000|500500|row 999]" {
		t.Fatalf("after restart: %v", got)
	}
	mustExec(t, conn2, "INSERT INTO t VALUES (1001, 'more')")
	mustExec(t, conn2, "FLUSH")
	if got := queryStrings(t, conn2, "SELECT count(*) FROM t"); fmt.Sprint(got) != "[1001]" {
		t.Fatalf("insert after restart: %v", got)
	}
}

// testLogger discards server logs unless RUNNEL_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("RUNNEL_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func mustRelation(t testing.TB, s *Server, name string) *catalog.Relation {
	t.Helper()
	for _, r := range s.catalog.Relations(nil) {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no relation %q", name)
	return nil
}
