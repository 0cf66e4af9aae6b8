package server

import (
	"context"
	"strings"
	"testing"
)

// EMIT ON WINDOW CLOSE: a window's row appears only once the watermark has
// passed the window, with its final values (those of the same view without
// the clause), and never changes afterwards; the open windows wait in
// state across a restart and are emitted once, not twice. SHOW CREATE
// keeps the clause; a view whose key has no watermark is refused.
func TestEmitOnWindowClose(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE ev (id INT PRIMARY KEY, at TIMESTAMP, v INT, WATERMARK FOR at AS at - INTERVAL '5 seconds') APPEND ONLY")
	const body = "SELECT window_start, count(*) AS n, sum(v) AS s FROM TUMBLE(ev, at, INTERVAL '10 seconds') GROUP BY window_start"
	mustExec(t, conn, "CREATE MATERIALIZED VIEW closed AS "+body+" EMIT ON WINDOW CLOSE")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW live AS "+body)
	rows := func(view string) string {
		t.Helper()
		return strings.Join(queryStrings(t, conn, "SELECT window_start, n, s FROM "+view+" ORDER BY window_start"), " ")
	}
	// The watermark is at - 5 s; a window [w, w+10 s) closes once the
	// watermark on window_start (the window of the watermark) passes w.
	mustExec(t, conn, "INSERT INTO ev VALUES (1, '2024-01-01 00:00:01', 1), (2, '2024-01-01 00:00:05', 2), (3, '2024-01-01 00:00:12', 3)")
	mustExec(t, conn, "FLUSH")
	if got := rows("closed"); got != "" {
		t.Fatalf("closed before any window closed: %q", got)
	}
	mustExec(t, conn, "INSERT INTO ev VALUES (4, '2024-01-01 00:00:16', 4)")
	mustExec(t, conn, "FLUSH")
	const first = "2024-01-01 00:00:00 +0000 UTC|2|3"
	if got := rows("closed"); got != first {
		t.Fatalf("closed = %q; want the first window only: %q", got, first)
	}
	if n := aggStateRows(t, ts.srv, "closed"); n == 0 {
		t.Fatal("the open window [10 s, 20 s) is not held in state")
	}

	conn.Close(context.Background())
	ts.stop()
	ts = startTestServer(t, ts.dataDir)
	conn = ts.connect(t)
	// Window [10 s, 20 s) gets no row after the restart: only its state
	// can emit it.
	mustExec(t, conn, "INSERT INTO ev VALUES (6, '2024-01-01 00:00:02', 100), (5, '2024-01-01 00:00:31', 5)")
	mustExec(t, conn, "FLUSH")
	want := first + " 2024-01-01 00:00:10 +0000 UTC|2|7"
	if got := rows("closed"); got != want {
		t.Fatalf("closed after restart = %q; want %q (each closed window once, from state; the late row dropped)", got, want)
	}
	if got, live := rows("closed"), rows("live"); !strings.HasPrefix(live, got) {
		t.Fatalf("closed windows %q differ from the same view without the clause %q", got, live)
	}
	if got := queryStrings(t, conn, "SHOW CREATE MATERIALIZED VIEW closed"); len(got) != 1 || !strings.HasSuffix(got[0], "EMIT ON WINDOW CLOSE") {
		t.Fatalf("SHOW CREATE = %v; want the clause kept", got)
	}
	for _, bad := range []string{
		"CREATE MATERIALIZED VIEW bad AS SELECT id, v FROM ev EMIT ON WINDOW CLOSE",
		"CREATE MATERIALIZED VIEW bad AS SELECT v, count(*) FROM ev GROUP BY v EMIT ON WINDOW CLOSE",
	} {
		if err := execErr(conn, bad); err == nil || !strings.Contains(err.Error(), "0A000") || !strings.Contains(err.Error(), "watermark") {
			t.Fatalf("%s: got %v; want 0A000 naming the watermark", bad, err)
		}
	}
	if err := execErr(conn, "CREATE VIEW bad AS "+body+" EMIT ON WINDOW CLOSE"); err == nil || !strings.Contains(err.Error(), "0A000") {
		t.Fatalf("EMIT ON WINDOW CLOSE on a plain view: got %v; want 0A000", err)
	}
}
