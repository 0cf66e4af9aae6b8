package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgErrCode is the SQLSTATE of a server error, "" for anything else.
func pgErrCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// connectURL opens a pgx session at url, closed when the test ends.
func connectURL(t *testing.T, url string, notices *[]string, mu *sync.Mutex) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if notices != nil {
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			*notices = append(*notices, n.Severity+" "+n.Code+" "+n.Message)
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// runAsync runs sql on conn in a goroutine; the channel gets its error.
func runAsync(conn *pgx.Conn, sql string) <-chan error {
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := conn.Exec(ctx, sql)
		errc <- err
	}()
	return errc
}

// awaitErr waits for a statement's error, at most limit.
func awaitErr(t *testing.T, errc <-chan error, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(limit):
		t.Fatalf("statement still running after %v", limit)
		return nil
	}
}

// waitFor polls query (one int column) until it returns want, or fails
// after 10 s.
func waitFor(t *testing.T, conn *pgx.Conn, want int64, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int64
		if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d after 10s; want %d", query, n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pg_stat_activity, pg_backend_pid, pg_cancel_backend,
// pg_terminate_backend, SHOW PROCESSLIST and KILL over real sessions: an
// idle one, one inside a transaction block, one running a long statement.
func TestSessionActivity(t *testing.T) {
	ts := startTestServer(t, "")
	ctx := context.Background()
	var mu sync.Mutex
	var notices []string
	admin := connectURL(t, ts.url(), &notices, &mu)
	idle := connectURL(t, ts.url()+"&application_name=idle_app", nil, nil)
	inTx := connectURL(t, ts.url(), nil, nil)
	busy := connectURL(t, ts.url()+"&application_name=busy_app", nil, nil)
	pid := func(c *pgx.Conn) int64 { return int64(c.PgConn().PID()) }

	// pg_backend_pid is the pid of BackendKeyData.
	for _, c := range []*pgx.Conn{admin, idle, inTx, busy} {
		var got int32
		if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&got); err != nil || int64(got) != pid(c) {
			t.Fatalf("pg_backend_pid() = %d, %v; BackendKeyData pid %d", got, err, pid(c))
		}
	}
	mustExec(t, idle, "SELECT 42")
	mustExec(t, inTx, "SET application_name = 'tx_app'")
	mustExec(t, inTx, "BEGIN")
	mustExec(t, inTx, "SELECT 1")
	busyErr := runAsync(busy, "SELECT pg_sleep(10)")
	waitFor(t, admin, 1, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", pid(busy))

	// One row per session, PostgreSQL's columns.
	rows := queryStrings(t, admin, `SELECT pid, datname, usename, application_name, state, query, backend_type,
		client_addr, client_port > 0, backend_start <= now(), xact_start IS NOT NULL, query_start IS NOT NULL,
		state_change >= query_start, wait_event, leader_pid, backend_xid, query_id, client_hostname, backend_xmin
		FROM pg_stat_activity ORDER BY pid`)
	want := []string{
		fmt.Sprintf("%d|dev|root||active|SELECT pid, datname", pid(admin)),
		fmt.Sprintf("%d|dev|root|idle_app|idle|SELECT 42|client backend|127.0.0.1|true|true|false|true|true|ClientRead|<nil>|<nil>|<nil>|<nil>|<nil>", pid(idle)),
		fmt.Sprintf("%d|dev|root|tx_app|idle in transaction|SELECT 1|client backend|127.0.0.1|true|true|true|true|true|ClientRead|<nil>|<nil>|<nil>|<nil>|<nil>", pid(inTx)),
		fmt.Sprintf("%d|dev|root|busy_app|active|SELECT pg_sleep(10)|client backend|127.0.0.1|true|true|true|true|true|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>", pid(busy)),
	}
	if len(rows) != len(want) {
		t.Fatalf("pg_stat_activity:\n%s", strings.Join(rows, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(rows[i], want[i]) {
			t.Fatalf("pg_stat_activity row %d:\n got %s\nwant %s", i, rows[i], want[i])
		}
	}
	// Filters, joins and ORDER BY work over it as over any relation.
	if got := queryStrings(t, admin, `SELECT a.pid, d.datname FROM pg_stat_activity a JOIN pg_database d ON d.oid = a.datid
		WHERE a.state LIKE 'idle%' AND a.pid <> pg_backend_pid() ORDER BY a.application_name DESC`); fmt.Sprint(got) != fmt.Sprintf("[%d|dev %d|dev]", pid(inTx), pid(idle)) {
		t.Fatalf("join/filter: %v", got)
	}
	if got := queryStrings(t, admin, `SELECT count(*) FROM pg_stat_activity a JOIN pg_roles r ON r.oid = a.usesysid WHERE r.rolname = 'root'`); fmt.Sprint(got) != "[4]" {
		t.Fatalf("join with pg_roles: %v", got)
	}
	// The transaction started with the block's BEGIN: xact_start stays
	// while its later statements run.
	if got := queryStrings(t, admin, "SELECT xact_start < query_start FROM pg_stat_activity WHERE pid = $1", pid(inTx)); fmt.Sprint(got) != "[true]" {
		t.Fatalf("xact_start of the block: %v", got)
	}

	// SHOW PROCESSLIST: RisingWave's columns; Time and Info only for a
	// running statement.
	rs, err := admin.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range rs.FieldDescriptions() {
		names = append(names, f.Name)
	}
	rs.Close()
	if got := strings.Join(names, ","); got != "Id,User,Host,Database,Time,Info" {
		t.Fatalf("SHOW PROCESSLIST columns: %s", got)
	}
	procs := map[string][]string{}
	res := queryStrings(t, admin, "SHOW PROCESSLIST")
	for _, r := range res {
		f := strings.Split(r, "|")
		procs[f[0]] = f
	}
	if len(procs) != 4 {
		t.Fatalf("SHOW PROCESSLIST: %v", res)
	}
	b := procs[fmt.Sprint(pid(busy))]
	if b == nil || b[1] != "root" || !strings.HasPrefix(b[2], "127.0.0.1:") || b[3] != "dev" ||
		!regexp.MustCompile(`^\d+ms$`).MatchString(b[4]) || b[5] != "SELECT pg_sleep(10)" {
		t.Fatalf("SHOW PROCESSLIST busy row: %v", b)
	}
	if i := procs[fmt.Sprint(pid(idle))]; i == nil || i[4] != "<nil>" || i[5] != "<nil>" {
		t.Fatalf("SHOW PROCESSLIST idle row: %v", i)
	}

	// pg_cancel_backend cancels the running statement with 57014; the
	// session stays usable.
	start := time.Now()
	if got := queryStrings(t, admin, "SELECT pg_cancel_backend($1)", pid(busy)); fmt.Sprint(got) != "[true]" {
		t.Fatalf("pg_cancel_backend = %v", got)
	}
	if err := awaitErr(t, busyErr, 5*time.Second); pgErrCode(err) != "57014" {
		t.Fatalf("cancelled statement: %v; want 57014", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	if got := queryStrings(t, busy, "SELECT 7"); fmt.Sprint(got) != "[7]" {
		t.Fatalf("after cancel: %v", got)
	}
	// No such process: false, with PostgreSQL's WARNING.
	if got := queryStrings(t, admin, "SELECT pg_cancel_backend(999999), pg_terminate_backend(999998)"); fmt.Sprint(got) != "[false|false]" {
		t.Fatalf("signals to no process = %v", got)
	}
	mu.Lock()
	gotNotices := strings.Join(notices, "\n")
	mu.Unlock()
	if !strings.Contains(gotNotices, "WARNING 01000 PID 999999 is not a PostgreSQL server process") ||
		!strings.Contains(gotNotices, "WARNING 01000 PID 999998 is not a PostgreSQL server process") {
		t.Fatalf("notices: %q", gotNotices)
	}

	// A failed statement aborts the block: idle in transaction (aborted);
	// after ROLLBACK the session is idle with no transaction.
	if _, err := inTx.Exec(ctx, "SELECT 1/0"); pgErrCode(err) != "22012" {
		t.Fatalf("1/0: %v", err)
	}
	if got := queryStrings(t, admin, "SELECT state, query FROM pg_stat_activity WHERE pid = $1", pid(inTx)); fmt.Sprint(got) != "[idle in transaction (aborted)|SELECT 1/0]" {
		t.Fatalf("aborted block: %v", got)
	}
	mustExec(t, inTx, "ROLLBACK")
	if got := queryStrings(t, admin, "SELECT state, xact_start FROM pg_stat_activity WHERE pid = $1", pid(inTx)); fmt.Sprint(got) != "[idle|<nil>]" {
		t.Fatalf("after ROLLBACK: %v", got)
	}

	// pg_terminate_backend ends the idle session: its next statement
	// fails, and it leaves pg_stat_activity.
	if got := queryStrings(t, admin, "SELECT pg_terminate_backend($1)", pid(idle)); fmt.Sprint(got) != "[true]" {
		t.Fatalf("pg_terminate_backend = %v", got)
	}
	if _, err := idle.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("terminated session still runs statements")
	} else if code := pgErrCode(err); code != "" && code != "57P01" {
		t.Fatalf("terminated session: %v; want 57P01 or a closed connection", err)
	}
	waitFor(t, admin, 0, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid(idle))
	// A running statement is ended with FATAL 57P01, promptly.
	busyErr = runAsync(busy, "SELECT pg_sleep(10)")
	waitFor(t, admin, 1, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", pid(busy))
	start = time.Now()
	if got := queryStrings(t, admin, "SELECT pg_terminate_backend($1, 5000)", pid(busy)); fmt.Sprint(got) != "[true]" {
		t.Fatalf("pg_terminate_backend with a timeout = %v", got)
	}
	if err := awaitErr(t, busyErr, 5*time.Second); pgErrCode(err) != "57P01" {
		t.Fatalf("terminated statement: %v; want 57P01", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("terminate took %v", d)
	}
	// With a timeout it returned once the session was gone.
	if got := queryStrings(t, admin, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid(busy)); fmt.Sprint(got) != "[0]" {
		t.Fatalf("terminated session still listed: %v", got)
	}

	// KILL (RisingWave's) cancels the running statement of a process.
	busy2 := connectURL(t, ts.url(), nil, nil)
	busyErr = runAsync(busy2, "SELECT pg_sleep(10)")
	waitFor(t, admin, 1, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", pid(busy2))
	if tag, err := admin.Exec(ctx, fmt.Sprintf("KILL %d", pid(busy2))); err != nil || tag.String() != "KILL" {
		t.Fatalf("KILL: %q, %v", tag, err)
	}
	if err := awaitErr(t, busyErr, 5*time.Second); pgErrCode(err) != "57014" {
		t.Fatalf("killed statement: %v; want 57014", err)
	}
	if got := queryStrings(t, busy2, "SELECT 8"); fmt.Sprint(got) != "[8]" {
		t.Fatalf("after KILL: %v", got)
	}
	if _, err := admin.Exec(ctx, "KILL '999999'"); pgErrCode(err) != "42704" {
		t.Fatalf("KILL of no process: %v; want 42704", err)
	}

	// A non-superuser sees other users' sessions without their query and
	// may signal only its own user's sessions.
	mustExec(t, admin, "CREATE USER alice WITH PASSWORD 'pw'")
	mustExec(t, admin, "CREATE USER bob WITH PASSWORD 'pw'")
	aliceURL := strings.Replace(ts.url(), "root@", "alice:pw@", 1)
	alice := connectURL(t, aliceURL, nil, nil)
	alice2 := connectURL(t, aliceURL, nil, nil)
	bob := connectURL(t, strings.Replace(ts.url(), "root@", "bob:pw@", 1), nil, nil)
	mustExec(t, alice2, "SELECT 'alice2'")
	if got := queryStrings(t, alice, "SELECT usename, state, query, backend_start IS NULL FROM pg_stat_activity WHERE pid IN ($1, $2, $3) ORDER BY pid",
		pid(admin), pid(alice2), pid(bob)); fmt.Sprint(got) != "[root|<nil>|<insufficient privilege>|true alice|idle|SELECT 'alice2'|false bob|<nil>|<insufficient privilege>|true]" {
		t.Fatalf("pg_stat_activity as alice: %v", got)
	}
	for q, msg := range map[string]string{
		"SELECT pg_cancel_backend(%d)":    "must be a superuser to cancel superuser query",
		"SELECT pg_terminate_backend(%d)": "must be a superuser to terminate superuser process",
		"KILL %d":                         "must be a superuser to cancel superuser query",
	} {
		_, err := alice.Exec(ctx, fmt.Sprintf(q, pid(admin)))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" || pe.Message != msg {
			t.Fatalf("%s as alice: %v; want 42501 %q", q, err, msg)
		}
	}
	_, err = alice.Exec(ctx, fmt.Sprintf("SELECT pg_cancel_backend(%d)", pid(bob)))
	if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "42501" ||
		pe.Message != "must be a member of the role whose query is being canceled or member of pg_signal_backend" {
		t.Fatalf("alice cancels bob: %v", err)
	}
	if got := queryStrings(t, alice, "SELECT pg_terminate_backend($1)", pid(alice2)); fmt.Sprint(got) != "[true]" {
		t.Fatalf("alice terminates her own session: %v", got)
	}
	waitFor(t, admin, 0, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid(alice2))
	// A superuser signals anyone.
	if got := queryStrings(t, admin, "SELECT pg_cancel_backend($1)", pid(bob)); fmt.Sprint(got) != "[true]" {
		t.Fatalf("root cancels bob: %v", got)
	}
}
