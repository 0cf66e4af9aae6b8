package corpustest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/runneldb/runnel/internal/httpapi"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestAbandonedStatementIsCancelled: a client that closes its connection
// while a long statement runs (a client-side timeout, a killed psql) gets
// the statement cancelled. Before, the statement ran on with nobody to
// read its answer: a string_agg abandoned this way grew the server until
// the kernel killed it for memory. The session list of /api/sessions
// shows the statement while it runs and must drop it soon after the
// client is gone (each running statement checks its client every second).
func TestAbandonedStatementIsCancelled(t *testing.T) {
	bin := servertest.BuildBinary(t)
	p := servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: t.TempDir()})
	p.WaitReady(t, time.Minute)
	const marker = "abandoned_statement_marker"
	// running reports whether a session runs the marked statement now
	// (an idle session keeps its last statement's text).
	running := func() (bool, string) {
		resp, err := http.Get("http://" + p.HTTPAddr + "/api/sessions")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var list []httpapi.Session
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		for _, s := range list {
			if s.State == "active" && strings.Contains(s.Query, marker) {
				return true, string(b)
			}
		}
		return false, string(b)
	}
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	// Runs for hours unless cancelled; no statement_timeout.
	sql := "SELECT count(*) AS " + marker + " FROM generate_series(1, 100000000000)"
	// Send the Query on the bare socket (no client library reading or
	// closing behind the test's back).
	hc, err := c.Hijack()
	if err != nil {
		t.Fatal(err)
	}
	hc.Frontend.Send(&pgproto3.Query{String: sql})
	if err := hc.Frontend.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, list := running()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the statement never ran in /api/sessions: %s", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Close the socket under the running statement, as a client process
	// that exits does.
	if err := hc.Conn.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	deadline = closed.Add(30 * time.Second)
	for {
		ok, list := running()
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the statement still runs 30 s after its client closed the connection: %s", list)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("statement ended %v after the client closed", time.Since(closed).Round(time.Millisecond))
	if p.Exited() {
		t.Fatalf("server exited: %v", p.WaitErr())
	}
}
