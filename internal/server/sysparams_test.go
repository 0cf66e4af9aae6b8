package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestAlterSystemStrictConsistency: the non-strict consistency mode is a
// system parameter: superuser only, validated, persisted across restarts,
// shown by SHOW and SHOW PARAMETERS, and used by the views built after it.
func TestAlterSystemStrictConsistency(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	ctx := context.Background()
	if got := queryStrings(t, conn, "SHOW streaming_strict_consistency"); fmt.Sprint(got) != "[true]" {
		t.Fatalf("default = %v", got)
	}
	if !ts.srv.meta.StrictConsistency() {
		t.Fatal("views are not strict by default")
	}
	for q, code := range map[string]string{
		"ALTER SYSTEM SET streaming_strict_consistency = maybe": "22023",
		"ALTER SYSTEM SET no_such_parameter = 1":                "42704",
	} {
		if _, err := conn.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), code) {
			t.Fatalf("%s: %v; want %s", q, err, code)
		}
	}
	mustExec(t, conn, "CREATE USER alice WITH PASSWORD 'pw'")
	alice, err := pgx.Connect(ctx, strings.Replace(ts.url(), "root@", "alice:pw@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close(ctx)
	if _, err := alice.Exec(ctx, "ALTER SYSTEM SET streaming_strict_consistency = false"); err == nil || !strings.Contains(err.Error(), "42501") {
		t.Fatalf("non-superuser ALTER SYSTEM: %v; want 42501", err)
	}
	mustExec(t, conn, "ALTER SYSTEM SET streaming_strict_consistency TO off")
	if ts.srv.meta.StrictConsistency() {
		t.Fatal("views built after ALTER SYSTEM are still strict")
	}
	if got := queryStrings(t, conn, "SHOW ALL"); len(got) == 0 || strings.Count(got[0], "|") != 2 {
		t.Fatalf("SHOW ALL = %v", got)
	}
	if got := queryStrings(t, conn, "SHOW PARAMETERS"); len(got) == 0 || !strings.HasPrefix(got[0], "streaming_strict_consistency|false|") {
		t.Fatalf("SHOW PARAMETERS = %v", got)
	}
	conn.Close(ctx)
	alice.Close(ctx)
	ts.stop()

	ts2 := startTestServer(t, dir)
	conn2 := ts2.connect(t)
	if got := queryStrings(t, conn2, "SHOW streaming_strict_consistency"); fmt.Sprint(got) != "[false]" {
		t.Fatalf("after restart = %v", got)
	}
	mustExec(t, conn2, "ALTER SYSTEM RESET streaming_strict_consistency")
	if got := queryStrings(t, conn2, "SHOW streaming_strict_consistency"); fmt.Sprint(got) != "[true]" {
		t.Fatalf("after RESET = %v", got)
	}
}

// client_min_messages hides the notices below it (sqlsmith sets it to
// ERROR when it connects) and refuses unknown levels with 22023.
func TestClientMinMessages(t *testing.T) {
	ts := startTestServer(t, "")
	var (
		mu      sync.Mutex
		notices []string
	)
	cfg, err := pgx.ParseConfig(ts.url())
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Severity+" "+n.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := len(notices)
		notices = nil
		return n
	}
	mustExec(t, conn, "DROP TABLE IF EXISTS nope")
	if n := count(); n != 1 {
		t.Fatalf("notices at the default level: %d, want 1", n)
	}
	mustExec(t, conn, "SET client_min_messages TO 'ERROR'")
	mustExec(t, conn, "DROP TABLE IF EXISTS nope")
	if n := count(); n != 0 {
		t.Fatalf("notices with client_min_messages = error: %d, want 0", n)
	}
	if got := queryStrings(t, conn, "SHOW client_min_messages"); len(got) != 1 || got[0] != "error" {
		t.Fatalf("SHOW client_min_messages = %q", got)
	}
	if _, err := conn.Exec(context.Background(), "SET client_min_messages = loud"); err == nil || !strings.Contains(err.Error(), "22023") {
		t.Fatalf("SET client_min_messages = loud: %v, want 22023", err)
	}
}
