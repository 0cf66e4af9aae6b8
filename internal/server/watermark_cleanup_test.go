package server

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// wmDistinct is the expected content of SELECT DISTINCT window_start, v
// over TUMBLE(ev, at, 10 s) for the rows id 0..n-1 at base + id seconds
// with v = id % 7, sorted.
func wmDistinct(n int) []string {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	var out []string
	for id := 0; id < n; id++ {
		ws := base.Add(time.Duration(id) * time.Second).Truncate(10 * time.Second).Format("2006-01-02 15:04:05")
		r := fmt.Sprintf("%s|%d", ws, id%7)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// wallTimes strips pgx's zone from rendered timestamps.
func wallTimes(rows []string) []string {
	for i, g := range rows {
		rows[i] = strings.ReplaceAll(g, " +0000 UTC", "")
	}
	return rows
}

// insertEventsWatchingState inserts the rows 0..n-1 of ev in order, in
// statements of 100 rows, and flushes; it returns the largest state size
// of view seen at a FLUSH every 500 rows.
func insertEventsWatchingState(t *testing.T, conn *pgx.Conn, s *Server, view string, n int) (maxState int) {
	t.Helper()
	for from := 0; from < n; from += 100 {
		insertEvents(t, conn, from, from+100)
		if from%500 == 400 {
			mustExec(t, conn, "FLUSH")
			maxState = max(maxState, aggStateRows(t, s, view))
		}
	}
	mustExec(t, conn, "FLUSH")
	return maxState
}

func explainView(t *testing.T, conn *pgx.Conn, query string, want ...string) {
	t.Helper()
	explain := strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW x AS "+query), "\n")
	for _, w := range want {
		if !strings.Contains(explain, w) {
			t.Fatalf("EXPLAIN lacks %q:\n%s", w, explain)
		}
	}
}

// DISTINCT over TUMBLE's window_start on a table with WATERMARK FOR:
// the view is exact, the DISTINCT state holds only the open windows'
// tuples however many windows closed, a late row re-creates nothing, and
// cleanup resumes after RECOVER and a restart.
func TestWatermarkCleansDistinctState(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE TABLE ev (id INT, at TIMESTAMP, v INT, WATERMARK FOR at AS at - INTERVAL '5 seconds') APPEND ONLY`)
	const view = `SELECT DISTINCT window_start, v FROM TUMBLE(ev, at, INTERVAL '10 seconds')`
	explainView(t, conn, view, "state cleaned by watermark on: [window_start]",
		"├── cleaned by watermark on: [window_start]", "output watermarks: [window_start]")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW d AS "+view)
	rows := func() []string {
		return wallTimes(queryStrings(t, conn, "SELECT window_start, v FROM d ORDER BY 1, 2"))
	}

	// 200 windows of 7 tuples each.
	const n = 2000
	maxState := insertEventsWatchingState(t, conn, ts.srv, "d", n)
	sameRows(t, "view", rows(), wmDistinct(n))
	// Open windows: the one holding the watermark (5 s behind the last
	// row) and the last one, 7 tuples each at most.
	if st := aggStateRows(t, ts.srv, "d"); st > 14 || maxState > 14 {
		t.Fatalf("DISTINCT state holds %d tuples (max %d while inserting) after 200 windows; want only the open windows'", st, maxState)
	}

	// A late row with a new tuple of a closed window is dropped.
	mustExec(t, conn, `INSERT INTO ev VALUES (-1, TIMESTAMP '2024-01-01 00:00:03', 100)`)
	mustExec(t, conn, "FLUSH")
	sameRows(t, "view after a late row", rows(), wmDistinct(n))

	mustExec(t, conn, "RECOVER")
	mustExec(t, conn, `INSERT INTO ev VALUES (-2, TIMESTAMP '2024-01-01 00:00:05', 100)`)
	insertEvents(t, conn, n, n+500)
	mustExec(t, conn, "FLUSH")
	sameRows(t, "view after RECOVER", rows(), wmDistinct(n+500))
	if st := aggStateRows(t, ts.srv, "d"); st > 14 {
		t.Fatalf("after RECOVER the DISTINCT state holds %d tuples", st)
	}

	conn.Close(context.Background())
	ts.stop()
	ts = startTestServer(t, dir)
	conn = ts.connect(t)
	insertEvents(t, conn, n+500, n+1000)
	mustExec(t, conn, "FLUSH")
	sameRows(t, "view after restart", rows(), wmDistinct(n+1000))
	if st := aggStateRows(t, ts.srv, "d"); st > 14 {
		t.Fatalf("after restart the DISTINCT state holds %d tuples", st)
	}
}
