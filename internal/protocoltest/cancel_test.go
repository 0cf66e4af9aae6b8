package protocoltest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// endless is a query that would run for hours (10^10 joined rows), so it
// can only end by being cancelled.
const endless = "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b"

// endlessRows streams the same join's rows instead of aggregating them.
const endlessRows = "SELECT a.a, b.b FROM generate_series(1, 100000) a(a), generate_series(1, 100000) b(b)"

// cancelLimit bounds how long a cancelled query may take to end.
const cancelLimit = 30 * time.Second

// cancelUntilDone sends cancel requests for conn every 20 ms until done is
// closed. A request that arrives before the query starts is ignored by the
// server (as in PostgreSQL), so one request is not enough and no sleep
// can be right; repeating until the query ends is.
func cancelUntilDone(t *testing.T, conn *pgconn.PgConn, done <-chan struct{}) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := conn.CancelRequest(ctx)
		cancel()
		if err != nil {
			t.Errorf("cancel request: %v", err)
			return
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// checkSessionWorks runs a query on conn in both protocols.
func checkSessionWorks(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := testCtx(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM c", mode).Scan(&n); err != nil || n != 3 {
			t.Fatalf("session after cancel (%v): count %d, %v", mode, n, err)
		}
	}
	if s := conn.PgConn().TxStatus(); s != 'I' {
		t.Fatalf("transaction status after cancel: %c; want I", s)
	}
}

func TestCancelRunningQuery(t *testing.T) {
	srv := servertest.Start(t)
	conn := srv.Connect(t)
	servertest.Exec(t, conn, "SET RW_IMPLICIT_FLUSH TO true")
	servertest.Exec(t, conn, "CREATE TABLE c (k int PRIMARY KEY)")
	servertest.Exec(t, conn, "INSERT INTO c VALUES (1), (2), (3)")
	other := srv.Connect(t) // an unrelated session is not disturbed

	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		done := make(chan struct{})
		canceller := make(chan struct{})
		go func() {
			defer close(canceller)
			cancelUntilDone(t, conn.PgConn(), done)
		}()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), cancelLimit)
		var n int64
		err := conn.QueryRow(ctx, endless, mode).Scan(&n)
		cancel()
		close(done)
		<-canceller
		if sqlstate(err) != "57014" {
			t.Fatalf("mode %v: cancelled query returned %d, %v; want SQLSTATE 57014", mode, n, err)
		}
		t.Logf("mode %v: cancelled after %v", mode, time.Since(start).Round(time.Millisecond))
		checkSessionWorks(t, conn)
		checkSessionWorks(t, other)
	}
}

// TestCancelStreamingQuery cancels a query while its rows are being sent.
func TestCancelStreamingQuery(t *testing.T) {
	srv := servertest.Start(t)
	conn := srv.Connect(t)
	servertest.Exec(t, conn, "SET RW_IMPLICIT_FLUSH TO true")
	servertest.Exec(t, conn, "CREATE TABLE c (k int PRIMARY KEY)")
	servertest.Exec(t, conn, "INSERT INTO c VALUES (1), (2), (3)")
	ctx, cancel := context.WithTimeout(context.Background(), cancelLimit)
	defer cancel()
	rows, err := conn.Query(ctx, endlessRows, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	done := make(chan struct{})
	canceller := make(chan struct{})
	for rows.Next() {
		read++
		if read == 1000 {
			go func() {
				defer close(canceller)
				cancelUntilDone(t, conn.PgConn(), done)
			}()
		}
	}
	rows.Close()
	close(done)
	if read >= 1000 {
		<-canceller
	}
	if sqlstate(rows.Err()) != "57014" {
		t.Fatalf("after %d rows: %v; want SQLSTATE 57014", read, rows.Err())
	}
	t.Logf("cancelled after %d rows", read)
	checkSessionWorks(t, conn)
}

// TestCancelByContext cancels through the context, as Go programs do: pgx
// configured with CancelRequestContextWatcherHandler sends a cancel
// request when the context ends and keeps the connection.
func TestCancelByContext(t *testing.T) {
	srv := servertest.Start(t)
	cfg, err := pgx.ParseConfig(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, CancelRequestDelay: 0, DeadlineDelay: cancelLimit}
	}
	ctx := testCtx(t)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	servertest.Exec(t, conn, "SET RW_IMPLICIT_FLUSH TO true")
	servertest.Exec(t, conn, "CREATE TABLE c (k int PRIMARY KEY)")
	servertest.Exec(t, conn, "INSERT INTO c VALUES (1), (2), (3)")

	// The context ends as soon as the first row of a streaming query
	// arrives, so the query is certainly running when the cancel request
	// is sent.
	qctx, cancel := context.WithCancel(ctx)
	rows, err := conn.Query(qctx, endlessRows)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		if n++; n == 1 {
			cancel()
		}
	}
	rows.Close()
	cancel()
	if err := rows.Err(); sqlstate(err) != "57014" && !errors.Is(err, context.Canceled) {
		t.Fatalf("after %d rows: %v; want a cancellation", n, err)
	}
	if conn.IsClosed() {
		t.Fatal("the connection was closed by the cancellation")
	}
	checkSessionWorks(t, conn)
}
