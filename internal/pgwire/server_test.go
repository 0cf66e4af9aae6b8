package pgwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type testServer struct {
	srv  *Server
	eng  *fakeEngine
	addr string
	done chan error
}

func startServer(t testing.TB, cfg Config, eng *fakeEngine) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: NewServer(cfg, eng), eng: eng, addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- ts.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ts.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v; want ErrServerClosed", err)
		}
	})
	return ts
}

func (ts *testServer) connString(extra string) string {
	host, port, _ := net.SplitHostPort(ts.addr)
	return fmt.Sprintf("host=%s port=%s user=root dbname=dev sslmode=disable %s", host, port, extra)
}

func (ts *testServer) connect(t testing.TB, extra string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, ts.connString(extra))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartupParameterStatus(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	c := ts.connect(t, "application_name=tester")
	pc := c.PgConn()
	want := map[string]string{
		"server_version":              DefaultServerVersion,
		"server_encoding":             "UTF8",
		"client_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"IntervalStyle":               "postgres",
		"TimeZone":                    "UTC",
		"integer_datetimes":           "on",
		"standard_conforming_strings": "on",
		"application_name":            "tester",
		"is_superuser":                "on",
		"session_authorization":       "root",
	}
	for k, v := range want {
		if got := pc.ParameterStatus(k); got != v {
			t.Errorf("ParameterStatus(%s) = %q; want %q", k, got, v)
		}
	}
	if pc.PID() == 0 {
		t.Errorf("no BackendKeyData")
	}
	if pc.TxStatus() != 'I' {
		t.Errorf("TxStatus = %c; want I", pc.TxStatus())
	}
	// SET TimeZone reports the change.
	if _, err := c.Exec(testCtx(t), "SET TimeZone = 'Europe/Paris'", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if got := pc.ParameterStatus("TimeZone"); got != "Europe/Paris" {
		t.Errorf("TimeZone after SET = %q", got)
	}
	// ... and the session's zone shapes timestamptz text I/O.
	for in, want := range map[string]string{
		"2001-09-09 01:46:40.5+00": "2001-09-09 03:46:40.5+02",
		"2001-01-09 01:46:40":      "2001-01-09 01:46:40+01",
	} {
		res := pc.ExecParams(testCtx(t), "SELECT $1::timestamptz", [][]byte{[]byte(in)}, nil, nil, nil).Read()
		if res.Err != nil || string(res.Rows[0][0]) != want {
			t.Errorf("timestamptz %q in Europe/Paris: %q %v; want %q", in, res.Rows, res.Err, want)
		}
	}
	// options=-c TimeZone=... lets the engine override at startup.
	c2 := ts.connect(t, "options='-c TimeZone=Asia/Tokyo'")
	if got := c2.PgConn().ParameterStatus("TimeZone"); got != "Asia/Tokyo" {
		t.Errorf("TimeZone with options = %q", got)
	}
}

func TestUnknownDatabase(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	host, port, _ := net.SplitHostPort(ts.addr)
	_, err := pgx.Connect(testCtx(t), fmt.Sprintf("host=%s port=%s user=root dbname=nope sslmode=disable", host, port))
	if pgCode(err) != "3D000" {
		t.Fatalf("err = %v; want 3D000", err)
	}
}

func TestSimpleProtocol(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	c := ts.connect(t, "")
	ctx := testCtx(t)
	var a, b int32
	var s string
	if err := c.QueryRow(ctx, "SELECT 1, 2, 'x'", pgx.QueryExecModeSimpleProtocol).Scan(&a, &b, &s); err != nil {
		t.Fatal(err)
	}
	if a != 1 || b != 2 || s != "x" {
		t.Fatalf("got %d %d %q", a, b, s)
	}
	// Several statements in one Query: all run, results in order.
	mrr := c.PgConn().Exec(ctx, "INSERT INTO t VALUES (1, 'a'); INSERT INTO t VALUES (2, 'b'); SELECT count(*) FROM t")
	res, err := mrr.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].CommandTag.String() != "INSERT 0 1" || string(res[2].Rows[0][0]) != "2" ||
		res[2].CommandTag.String() != "SELECT 1" {
		t.Fatalf("multi-statement results: %+v", res)
	}
	// An error stops the rest of the string.
	_, err = c.PgConn().Exec(ctx, "INSERT INTO t VALUES (3, 'c'); SELECT 1/0; INSERT INTO t VALUES (4, 'd')").ReadAll()
	if pgCode(err) != "22012" {
		t.Fatalf("err = %v; want 22012", err)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 3 {
		t.Fatalf("count = %d, %v; want 3", n, err)
	}
	// Syntax errors carry a position.
	_, err = c.Exec(ctx, "SELECT 1, bogus", pgx.QueryExecModeSimpleProtocol)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42601" || pe.Position != 11 {
		t.Fatalf("err = %#v; want 42601 at 11", err)
	}
	// Empty query.
	res, err = c.PgConn().Exec(ctx, " ; ").ReadAll()
	if err != nil || len(res) != 1 || res[0].CommandTag.String() != "" {
		t.Fatalf("empty query: %+v %v", res, err)
	}
	// Notices reach the client.
	var notices []string
	var mu sync.Mutex
	cfg, _ := pgx.ParseConfig(ts.connString(""))
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Severity+" "+n.Code+" "+n.Message)
		mu.Unlock()
	}
	c3, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close(ctx)
	if _, err := c3.Exec(ctx, "NOTICE 'hello'", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 1 || notices[0] != "WARNING 01000 hello" {
		t.Fatalf("notices = %q", notices)
	}
}

func TestTransactionStatus(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	c := ts.connect(t, "")
	ctx := testCtx(t)
	pc := c.PgConn()
	steps := []struct {
		sql    string
		code   string
		status byte
	}{
		{"BEGIN", "", 'T'},
		{"INSERT INTO t VALUES (1, 'a')", "", 'T'},
		{"SELECT 1/0", "22012", 'E'},
		{"SELECT 1", "25P02", 'E'},
		{"ROLLBACK", "", 'I'},
		{"SELECT 1", "", 'I'},
	}
	for _, s := range steps {
		_, err := pc.Exec(ctx, s.sql).ReadAll()
		if pgCode(err) != s.code {
			t.Fatalf("%s: err %v; want code %q", s.sql, err, s.code)
		}
		if pc.TxStatus() != s.status {
			t.Fatalf("%s: status %c; want %c", s.sql, pc.TxStatus(), s.status)
		}
	}
}

func TestExtendedProtocolPgx(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	c := ts.connect(t, "")
	ctx := testCtx(t)
	// Named prepared statement, executed several times.
	if _, err := c.Prepare(ctx, "echo", "SELECT $1::int8, $2::text, $3::bool"); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 3; i++ {
		var n int64
		var s string
		var b bool
		if err := c.QueryRow(ctx, "echo", i*1000, fmt.Sprint("s", i), i%2 == 0).Scan(&n, &s, &b); err != nil {
			t.Fatal(err)
		}
		if n != i*1000 || s != fmt.Sprint("s", i) || b != (i%2 == 0) {
			t.Fatalf("got %d %q %v", n, s, b)
		}
	}
	// NULL parameters.
	var p *int64
	if err := c.QueryRow(ctx, "SELECT $1::int8", nil).Scan(&p); err != nil || p != nil {
		t.Fatalf("null: %v %v", p, err)
	}
	// Many rows through the extended protocol.
	rows, err := c.Query(ctx, "SELECT * FROM series(10000)")
	if err != nil {
		t.Fatal(err)
	}
	var sum, cnt int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		sum += v
		cnt++
	}
	if rows.Err() != nil || cnt != 10000 || sum != 10000*10001/2 || rows.CommandTag().String() != "SELECT 10000" {
		t.Fatalf("series: cnt %d sum %d tag %q err %v", cnt, sum, rows.CommandTag(), rows.Err())
	}
	// Errors at Parse (bad syntax) and Execute (division by zero) leave
	// the connection usable.
	if _, err := c.Exec(ctx, "SELEC 1"); pgCode(err) != "42601" {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Exec(ctx, "SELECT 1/0"); pgCode(err) != "22012" {
		t.Fatalf("err = %v", err)
	}
	var one int32
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after errors: %d %v", one, err)
	}
	// Too few parameters is a protocol-level error from Bind.
	err = c.PgConn().ExecParams(ctx, "SELECT $1::int4", nil, nil, nil, nil).Read().Err
	if pgCode(err) != "08P01" {
		t.Fatalf("missing param: %v", err)
	}
}

func TestConcurrentSessions(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	const sessions = 50
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, ts.connString(""))
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(ctx)
			for j := 0; j < 20; j++ {
				var got int64
				var s string
				if err := c.QueryRow(ctx, "SELECT $1::int8, $2::text", int64(i*100+j), fmt.Sprint(i)).Scan(&got, &s); err != nil {
					errs <- err
					return
				}
				if got != int64(i*100+j) || s != fmt.Sprint(i) {
					errs <- fmt.Errorf("session %d: got %d %q", i, got, s)
					return
				}
			}
			if _, err := c.Exec(ctx, "SELECT 1/0"); pgCode(err) != "22012" {
				errs <- fmt.Errorf("session %d: expected division by zero, got %v", i, err)
				return
			}
			var n int
			rows, _ := c.Query(ctx, "SELECT * FROM series(2000)")
			for rows.Next() {
				n++
			}
			if rows.Err() != nil || n != 2000 {
				errs <- fmt.Errorf("session %d: series %d %v", i, n, rows.Err())
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCancelRunningQuery(t *testing.T) {
	eng := newFakeEngine()
	eng.sleeping = make(chan struct{}, 1)
	ts := startServer(t, DefaultConfig(), eng)
	c := ts.connect(t, "")
	other := ts.connect(t, "")
	ctx := testCtx(t)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := c.Exec(ctx, "SELECT pg_sleep(60)", pgx.QueryExecModeSimpleProtocol)
		errc <- err
	}()
	<-eng.sleeping // the statement is running
	// A cancel with a wrong secret is ignored: the statement keeps running.
	ts.srv.cancel(c.PgConn().PID(), []byte{0, 0, 0, 0})
	select {
	case err := <-errc:
		t.Fatalf("statement ended after a bad cancel: %v", err)
	default:
	}
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	if pgCode(err) != "57014" {
		t.Fatalf("err = %v; want 57014", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("cancel took %v", time.Since(start))
	}
	// Both connections are fine afterwards.
	for _, cc := range []*pgx.Conn{c, other} {
		var v int32
		if err := cc.QueryRow(ctx, "SELECT 7").Scan(&v); err != nil || v != 7 {
			t.Fatalf("after cancel: %d %v", v, err)
		}
	}
	// Same in the extended protocol.
	go func() {
		_, err := c.Exec(ctx, "SELECT pg_sleep(60)")
		errc <- err
	}()
	<-eng.sleeping
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; pgCode(err) != "57014" {
		t.Fatalf("extended: err = %v; want 57014", err)
	}
	var v int32
	if err := c.QueryRow(ctx, "SELECT 8").Scan(&v); err != nil || v != 8 {
		t.Fatalf("after cancel: %d %v", v, err)
	}
	// A cancel that arrives while the session is idle affects nothing:
	// CancelRequest returns once the server has processed it.
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SELECT 9").Scan(&v); err != nil || v != 9 {
		t.Fatalf("after idle cancel: %d %v", v, err)
	}
}

func TestShutdownTerminatesSessions(t *testing.T) {
	eng := newFakeEngine()
	eng.sleeping = make(chan struct{}, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(DefaultConfig(), eng)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ts := &testServer{srv: srv, addr: ln.Addr().String()}
	idle, err := pgx.Connect(testCtx(t), ts.connString(""))
	if err != nil {
		t.Fatal(err)
	}
	busy, err := pgx.Connect(testCtx(t), ts.connString(""))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := busy.Exec(context.Background(), "SELECT pg_sleep(60)", pgx.QueryExecModeSimpleProtocol)
		errc <- err
	}()
	<-eng.sleeping
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-errc; pgCode(err) != "57P01" {
		t.Fatalf("busy: %v; want 57P01", err)
	}
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := idle.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatalf("idle connection still works after shutdown")
	}
	idle.Close(ctx)
	busy.Close(ctx)
	if err := srv.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
}

func TestCopyPgconn(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	c := ts.connect(t, "")
	ctx := testCtx(t)
	pc := c.PgConn()
	tag, err := pc.CopyFrom(ctx, strings.NewReader("1\tone\n2\t\\N\n3\ttab\\there\n"), "COPY t FROM STDIN")
	if err != nil || tag.String() != "COPY 3" {
		t.Fatalf("copy text in: %v %v", tag, err)
	}
	tag, err = pc.CopyFrom(ctx, strings.NewReader("a,b\n4,\"multi\nline, \"\"quoted\"\"\"\n5,\n6,\"\"\n"), "COPY t FROM STDIN CSV HEADER")
	if err != nil || tag.String() != "COPY 3" {
		t.Fatalf("copy csv in: %v %v", tag, err)
	}
	var out strings.Builder
	tag, err = pc.CopyTo(ctx, &out, "COPY t TO STDOUT")
	if err != nil || tag.String() != "COPY 6" {
		t.Fatalf("copy out: %v %v", tag, err)
	}
	want := "1\tone\n2\t\\N\n3\ttab\\there\n4\tmulti\\nline, \"quoted\"\n5\t\\N\n6\t\n"
	if out.String() != want {
		t.Fatalf("copy text out:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	if _, err := pc.CopyTo(ctx, &out, "COPY t TO STDOUT CSV HEADER"); err != nil {
		t.Fatal(err)
	}
	want = "a,b\n1,one\n2,\n3,tab\there\n4,\"multi\nline, \"\"quoted\"\"\"\n5,\n6,\"\"\n"
	if out.String() != want {
		t.Fatalf("copy csv out:\n%q\nwant\n%q", out.String(), want)
	}
	// A bad row fails the whole COPY; nothing is added and the
	// connection recovers.
	_, err = pc.CopyFrom(ctx, strings.NewReader("7\tok\nx\tbad\n"), "COPY t FROM STDIN")
	if pgCode(err) != "22P02" {
		t.Fatalf("bad row: %v", err)
	}
	_, err = pc.CopyFrom(ctx, strings.NewReader("7\tok\textra\n"), "COPY t FROM STDIN")
	if pgCode(err) != "22P04" {
		t.Fatalf("extra column: %v", err)
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 6 {
		t.Fatalf("count = %d %v; want 6", n, err)
	}
}

// flakyListener fails its first Accept the way a process out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	failed bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

func TestAcceptErrorIsRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(DefaultConfig(), newFakeEngine())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(&flakyListener{Listener: ln}) }()
	ts := &testServer{srv: srv, addr: ln.Addr().String()}
	c := ts.connect(t, "")
	var v int32
	if err := c.QueryRow(testCtx(t), "SELECT 1").Scan(&v); err != nil || v != 1 {
		t.Fatalf("after accept error: %d %v", v, err)
	}
	c.Close(testCtx(t))
	if err := srv.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
}
