package crashtest

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestTemporalJoinProcessingTime drives a process-time temporal join
// (FOR SYSTEM_TIME AS OF PROCTIME()) through a real server: a left row
// takes the right table's value committed when it is processed; a later
// change of the right table leaves the rows already emitted as they were,
// and a later left row sees the new value. The view's rows, and the memo
// of a join over a retractable input, survive a SIGKILL: after the
// restart nothing is looked up again, and a retraction deletes exactly
// what the join emitted before the crash.
func TestTemporalJoinProcessingTime(t *testing.T) {
	bin := buildRunnel(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runnel.log")
	p := startRunnel(t, bin, filepath.Join(dir, "data"), logPath)
	p.waitReady(t, readyLimit)
	defer func() {
		if t.Failed() {
			t.Logf("server log: %s", tail(logPath))
		}
	}()
	ctx := context.Background()
	conn := servertest.Connect(t, p.url())
	exec := func(c *pgx.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	check := func(c *pgx.Conn, sql string, want ...string) {
		t.Helper()
		got := queryText(t, c, sql)
		if !slices.Equal(got, want) {
			t.Fatalf("%s:\n got %q\nwant %q", sql, got, want)
		}
	}
	for _, s := range []string{
		"CREATE TABLE dim (k INT PRIMARY KEY, v TEXT)",
		"CREATE TABLE fact (id INT, k INT) APPEND ONLY",
		"CREATE TABLE fact2 (id INT PRIMARY KEY, k INT)",
		"CREATE MATERIALIZED VIEW tj AS SELECT f.id, d.v FROM fact f LEFT JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON f.k = d.k",
		"CREATE MATERIALIZED VIEW tj2 AS SELECT f.id, d.v FROM fact2 f JOIN dim FOR SYSTEM_TIME AS OF PROCTIME() d ON f.k = d.k",
		"INSERT INTO dim VALUES (1, 'a')",
		"FLUSH",
		"INSERT INTO fact VALUES (1, 1)",
		"INSERT INTO fact2 VALUES (1, 1)",
		"FLUSH",
	} {
		exec(conn, s)
	}
	const q1, q2 = "SELECT id, v FROM tj ORDER BY id", "SELECT id, v FROM tj2 ORDER BY id"
	check(conn, q1, "1|a")
	check(conn, q2, "1|a")

	// A right-side change after the left row: the earlier output stays.
	exec(conn, "UPDATE dim SET v = 'b' WHERE k = 1")
	exec(conn, "FLUSH")
	check(conn, q1, "1|a")
	check(conn, q2, "1|a")
	// A later left row sees the new value.
	exec(conn, "INSERT INTO fact VALUES (2, 1)")
	exec(conn, "INSERT INTO fact2 VALUES (2, 1)")
	exec(conn, "FLUSH")
	check(conn, q1, "1|a", "2|b")
	check(conn, q2, "1|a", "2|b")
	// Gone from the right side: LEFT pads, inner drops.
	exec(conn, "DELETE FROM dim")
	exec(conn, "FLUSH")
	exec(conn, "INSERT INTO fact VALUES (3, 1)")
	exec(conn, "INSERT INTO fact2 VALUES (3, 1)")
	exec(conn, "FLUSH")
	check(conn, q1, "1|a", "2|b", "3|NULL")
	check(conn, q2, "1|a", "2|b")
	conn.Close(ctx)

	// Crash. The rebuilt jobs do not look anything up again: the rows
	// stay as emitted although dim now holds another value.
	_ = p.signal(syscall.SIGKILL) // its error is the kill
	p = startRunnel(t, bin, filepath.Join(dir, "data"), logPath)
	p.waitReady(t, readyLimit)
	conn = servertest.Connect(t, p.url())
	exec(conn, "INSERT INTO dim VALUES (1, 'c')")
	exec(conn, "FLUSH")
	check(conn, q1, "1|a", "2|b", "3|NULL")
	check(conn, q2, "1|a", "2|b")
	exec(conn, "INSERT INTO fact VALUES (4, 1)")
	exec(conn, "FLUSH")
	check(conn, q1, "1|a", "2|b", "3|NULL", "4|c")
	// The memo kept across the crash: retracting fact2's rows deletes
	// what was emitted for them ('a' and 'b'), not a new lookup ('c');
	// re-inserting one looks it up now.
	exec(conn, "DELETE FROM fact2 WHERE id IN (1, 2)")
	exec(conn, "FLUSH")
	check(conn, q2)
	exec(conn, "UPDATE fact2 SET k = 1 WHERE id = 3")
	exec(conn, "FLUSH")
	check(conn, q2, "3|c")
}
