package clienttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// clientTimeout bounds each external client's run; they take seconds.
const clientTimeout = 3 * time.Minute

// TestClients runs every client of the matrix (doc.go), each against its
// own fresh server.
func TestClients(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, srv *servertest.Server)
	}{
		{"pgx", testPgx},
		{"libpq", testLibPQ},
		{"psql", testPsql},
		{"python", testPython},
		{"jdbc", testJDBC},
		{"node-postgres", testNodePostgres},
		{"postgres.js", testPostgresJS},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := servertest.Start(t)
			c.run(t, srv)
			checkItems(t, srv)
		})
	}
}

// checkItems reads items rows 1 and 2 as text (the server's own output,
// simple protocol) and compares them with what every client was to write.
func checkItems(t *testing.T, srv *servertest.Server) {
	t.Helper()
	if t.Skipped() || t.Failed() {
		return
	}
	conn := servertest.Connect(t, srv.URL()+"&timezone=UTC")
	got := servertest.QueryText(t, conn, "SELECT "+strings.Join(ItemsColumns, ", ")+" FROM items WHERE id IN (1, 2) ORDER BY id")
	want := []string{strings.Join(itemsRow1Text, "|"), "2" + strings.Repeat("|NULL", len(ItemsColumns)-1)}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("items as the server holds them:\ngot  %q\nwant %q", got, want)
	}
	if n := servertest.QueryText(t, conn, "SELECT count(*), count(DISTINCT v) FROM bulk"); n[0] != fmt.Sprintf("%d|%d", bulkRows, bulkRows) {
		t.Errorf("bulk after the client's bulk load: got count, distinct = %s; want %d|%d", n[0], bulkRows, bulkRows)
	}
}

// wantSQLState fails unless err is a PostgreSQL error with code.
func wantSQLState(t *testing.T, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Fatalf("got error %v; want SQLSTATE %s", err, code)
	}
}

// runClient runs an external client program with the server's address in
// its environment (RUNNEL_HOST, RUNNEL_PORT, RUNNEL_URL and the libpq
// PG* variables), in UTC, and fails the test with its output if it exits
// non-zero.
func runClient(t *testing.T, srv *servertest.Server, dir string, name string, args ...string) string {
	t.Helper()
	out, err := runClientErr(t, srv, dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// runClientErr is runClient returning the error.
func runClientErr(t *testing.T, srv *servertest.Server, dir string, name string, args ...string) (string, error) {
	t.Helper()
	host, port, _ := strings.Cut(srv.Addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"RUNNEL_HOST="+host, "RUNNEL_PORT="+port, "RUNNEL_URL="+srv.URL(),
		"PGHOST="+host, "PGPORT="+port, "PGUSER=root", "PGDATABASE=dev", "PGSSLMODE=disable",
		"PGTZ=UTC", "PGOPTIONS=-c implicit_flush=true", "TZ=UTC", "PSQLRC=/dev/null", "PGCONNECT_TIMEOUT=10")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s: %v", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return string(out), err
}

// need skips the test when a runtime is absent.
func need(t *testing.T, what string, ok bool) {
	t.Helper()
	if !ok {
		t.Skipf("%s not installed (scripts/install-deps.sh installs it)", what)
	}
}

func have(path string) bool {
	if strings.Contains(path, "/") {
		_, err := os.Stat(path)
		return err == nil
	}
	_, err := exec.LookPath(path)
	return err == nil
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

var _ = pgx.Identifier{}
