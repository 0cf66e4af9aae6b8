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
