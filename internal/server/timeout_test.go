package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pg_sleep waits; statement_timeout cancels a statement that runs too
// long with 57014, over both protocols, and the session goes on; SET
// validates and normalises the value as PostgreSQL does.
func TestStatementTimeoutAndPgSleep(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	ctx := context.Background()

	start := time.Now()
	if got := queryStrings(t, conn, "SELECT pg_sleep(0.05), 1"); fmt.Sprint(got) != "[<nil>|1]" {
		t.Fatalf("pg_sleep = %v", got)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("pg_sleep(0.05) returned after %v", el)
	}
	start = time.Now()
	if got := queryStrings(t, conn, "SELECT pg_sleep_for('50 milliseconds'), pg_sleep_until(clock_timestamp() + interval '50 ms'), pg_sleep_until(now() - interval '1 day')"); fmt.Sprint(got) != "[<nil>|<nil>|<nil>]" {
		t.Fatalf("pg_sleep_for/until = %v", got)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Fatalf("pg_sleep_for(50 ms) and pg_sleep_until(+50 ms) returned after %v", el)
	}
	if got := queryStrings(t, conn, "SELECT pg_typeof(pg_sleep(0)), pg_typeof(1.5::numeric(4,1)), pg_typeof(NULL), pg_sleep(NULL) IS NULL, pg_sleep(-1) IS NULL"); fmt.Sprint(got) != "[void|numeric|unknown|true|true]" {
		t.Fatalf("got %v", got)
	}

	mustExec(t, conn, "SET statement_timeout = 100")
	if got := queryStrings(t, conn, "SHOW statement_timeout"); fmt.Sprint(got) != "[100ms]" {
		t.Fatalf("SHOW statement_timeout = %v", got)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		start := time.Now()
		_, err := conn.Exec(ctx, "SELECT pg_sleep_for('30 seconds')", mode)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to statement timeout" {
			t.Fatalf("mode %v: %v; want 57014 statement timeout", mode, err)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("mode %v: cancelled after %v", mode, el)
		}
		if got := queryStrings(t, conn, "SELECT 1"); fmt.Sprint(got) != "[1]" {
			t.Fatalf("after the timeout: %v", got)
		}
	}
	for v, want := range map[string]string{"'2s'": "2s", "'1 min'": "1min", "'1500ms'": "1500ms", "0": "0", "'3h'": "3h"} {
		mustExec(t, conn, "SET statement_timeout = "+v)
		if got := queryStrings(t, conn, "SHOW statement_timeout"); fmt.Sprint(got) != "["+want+"]" {
			t.Fatalf("SET statement_timeout = %s: SHOW gives %v, want %s", v, got, want)
		}
	}
	for _, bad := range []string{"'abc'", "'-1'", "'5 parsecs'", "'99999999999'"} {
		if pe := pgErr(t, conn, "SET statement_timeout = "+bad); pe == nil || pe.Code != "22023" {
			t.Fatalf("SET statement_timeout = %s: %v, want 22023", bad, pe)
		}
	}

	// A cancel request (the client's context) stops pg_sleep too.
	mustExec(t, conn, "RESET statement_timeout")
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := conn.Exec(cctx, "SELECT pg_sleep(30)"); err == nil {
		t.Fatal("cancelled pg_sleep succeeded")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("cancel request took %v", el)
	}
}

// A SET statement_timeout sent in the same simple Query message as the
// statements after it applies to them, each on its own, as in PostgreSQL
// 13+: the timer is re-armed from the setting at every statement.
func TestStatementTimeoutInOneSimpleQuery(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	ctx := context.Background()

	start := time.Now()
	_, err := conn.PgConn().Exec(ctx, "SET statement_timeout = 200; SELECT pg_sleep(30)").ReadAll()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "canceling statement due to statement timeout" {
		t.Fatalf("SET; SELECT pg_sleep(30) in one message: %v; want 57014 statement timeout", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("timed out after %v, want about 200ms", el)
	}
	// Each statement has its own budget: three sleeps of 150 ms under a
	// 400 ms timeout all finish (PostgreSQL before 13 timed the message).
	res, err := conn.PgConn().Exec(ctx, "SET statement_timeout = 400; SELECT pg_sleep(0.15); SELECT pg_sleep(0.15); SELECT pg_sleep(0.15); SELECT 7").ReadAll()
	if err != nil {
		t.Fatalf("three 150 ms sleeps under a 400 ms per-statement timeout: %v", err)
	}
	if got := string(res[len(res)-1].Rows[0][0]); got != "7" {
		t.Fatalf("last result %q", got)
	}
	// RESET in the message lifts the timeout for what follows.
	if _, err := conn.PgConn().Exec(ctx, "SET statement_timeout = 100; RESET statement_timeout; SELECT pg_sleep(0.3)").ReadAll(); err != nil {
		t.Fatalf("after RESET in the same message: %v", err)
	}
	if got := queryStrings(t, conn, "SHOW statement_timeout"); fmt.Sprint(got) != "[0]" {
		t.Fatalf("SHOW statement_timeout = %v", got)
	}
}
