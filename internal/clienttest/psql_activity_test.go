package clienttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// startPsql starts psql running sql as application appName; wait returns
// its combined output and exit error.
func startPsql(t *testing.T, srv *servertest.Server, appName, sql string) (wait func() (string, error)) {
	t.Helper()
	host, port, _ := strings.Cut(srv.Addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	cmd := exec.CommandContext(ctx, "psql", "-X", "-c", sql)
	cmd.Env = append(os.Environ(), "PGHOST="+host, "PGPORT="+port, "PGUSER=root", "PGDATABASE=dev", "PGSSLMODE=disable",
		"PGAPPNAME="+appName, "PSQLRC=/dev/null", "PGCONNECT_TIMEOUT=10")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cancel(); <-done })
	return func() (string, error) {
		select {
		case err := <-done:
			done <- err
			return out.String(), err
		case <-time.After(20 * time.Second):
			t.Fatalf("psql %q still running after 20s", sql)
			return "", nil
		}
	}
}

// psql sessions seen in pg_stat_activity and SHOW PROCESSLIST, cancelled
// with pg_cancel_backend and ended with pg_terminate_backend: psql prints
// PostgreSQL's messages.
func TestPsqlSessionActivity(t *testing.T) {
	need(t, "psql", have("psql"))
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	waitActive := func(app string) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			rows := servertest.QueryText(t, conn, "SELECT pid, query FROM pg_stat_activity WHERE application_name = '"+app+"' AND state = 'active'")
			if len(rows) == 1 {
				return rows[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("no active psql session %s: %v", app, rows)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	wait := startPsql(t, srv, "psql_sleeper", "SELECT pg_sleep(30)")
	if got := waitActive("psql_sleeper"); !strings.HasSuffix(got, "|SELECT pg_sleep(30)") {
		t.Fatalf("pg_stat_activity: %s", got)
	}
	procs := servertest.QueryText(t, conn, "SHOW PROCESSLIST")
	if len(procs) != 2 || !strings.Contains(strings.Join(procs, "\n"), "|SELECT pg_sleep(30)") {
		t.Fatalf("SHOW PROCESSLIST: %v", procs)
	}
	if got := servertest.QueryText(t, conn, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'psql_sleeper'"); strings.Join(got, ",") != "t" {
		t.Fatalf("pg_cancel_backend: %v", got)
	}
	if out, err := wait(); err == nil || !strings.Contains(out, "ERROR:  canceling statement due to user request") {
		t.Fatalf("cancelled psql: %v\n%s", err, out)
	}

	wait = startPsql(t, srv, "psql_victim", "SELECT pg_sleep(30)")
	waitActive("psql_victim")
	if got := servertest.QueryText(t, conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'psql_victim'"); strings.Join(got, ",") != "t" {
		t.Fatalf("pg_terminate_backend: %v", got)
	}
	if out, err := wait(); err == nil || !strings.Contains(out, "FATAL:  terminating connection due to administrator command") {
		t.Fatalf("terminated psql: %v\n%s", err, out)
	}
}
