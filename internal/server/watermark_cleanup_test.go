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

// eventTime is the time of row id of insertEvents, formatted as pgx
// renders it (wall time).
func eventTime(id int) time.Time {
	return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(id) * time.Second)
}

const wallTime = "2006-01-02 15:04:05"

// wmDistinct is the expected content of SELECT DISTINCT window_start, v
// over TUMBLE(ev, at, 10 s) for the rows 0..n-1 of insertEvents, sorted.
func wmDistinct(n int) []string {
	seen := map[string]bool{}
	var out []string
	for id := 0; id < n; id++ {
		r := fmt.Sprintf("%s|%d", eventTime(id).Truncate(10*time.Second).Format(wallTime), id%7)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// wmTop3 is the expected content of the top-3-per-window view (v
// descending, then id) over the rows 0..n-1 of insertEvents, sorted.
func wmTop3(n int) []string {
	var out []string
	for w := 0; w*10 < n; w++ {
		var ids []int
		for id := w * 10; id < min(n, w*10+10); id++ {
			ids = append(ids, id)
		}
		sort.SliceStable(ids, func(i, j int) bool { return ids[i]%7 > ids[j]%7 })
		ws := eventTime(w * 10).Format(wallTime)
		for r, id := range ids[:min(3, len(ids))] {
			out = append(out, fmt.Sprintf("%s|%d|%d|%d", ws, id, id%7, r+1))
		}
	}
	sort.Strings(out)
	return out
}

// TestWatermarkCleansKeyedState: views over TUMBLE windows of a table
// with WATERMARK FOR, whose operator keeps state per window_start — a
// DISTINCT over it, a top-3 per window (row_number() OVER (PARTITION BY
// window_start ...) <= 3: an OverWindow and a filter) — are exact, while
// the operator's state holds only the open windows' however many windows
// closed; a late row that would change a closed window's rows is dropped;
// cleanup resumes after RECOVER and a restart.
func TestWatermarkCleansKeyedState(t *testing.T) {
	for _, tc := range []struct {
		name, query, order string
		explain            []string
		want               func(n int) []string
		// maxState bounds the state: the open windows' (the one holding
		// the watermark, 5 s behind the last row, and the last one).
		maxState int
	}{{
		name:  "distinct",
		query: `SELECT DISTINCT window_start, v FROM TUMBLE(ev, at, INTERVAL '10 seconds')`,
		order: "window_start, v",
		explain: []string{"state cleaned by watermark on: [window_start]",
			"├── cleaned by watermark on: [window_start]", "output watermarks: [window_start]"},
		want:     wmDistinct,
		maxState: 2 * 7,
	}, {
		name: "top3",
		query: `SELECT window_start, id, v, rn FROM (
			SELECT window_start, id, v, row_number() OVER (PARTITION BY window_start ORDER BY v DESC, id) AS rn
			FROM TUMBLE(ev, at, INTERVAL '10 seconds')) s WHERE rn <= 3`,
		order: "window_start, id",
		explain: []string{"state cleaned by watermark on: [ev.window_start]",
			"├── cleaned by watermark on: [ev.window_start]"},
		want:     wmTop3,
		maxState: 2 * 10,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startTestServer(t, dir)
			conn := ts.connect(t)
			mustExec(t, conn, `CREATE TABLE ev (id INT, at TIMESTAMP, v INT, WATERMARK FOR at AS at - INTERVAL '5 seconds') APPEND ONLY`)
			explain := strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW v AS "+tc.query), "\n")
			for _, w := range tc.explain {
				if !strings.Contains(explain, w) {
					t.Fatalf("EXPLAIN lacks %q:\n%s", w, explain)
				}
			}
			mustExec(t, conn, "CREATE MATERIALIZED VIEW v AS "+tc.query)
			check := func(what string, n int) {
				t.Helper()
				got := queryStrings(t, conn, "SELECT * FROM v ORDER BY "+tc.order)
				for i, g := range got {
					got[i] = strings.ReplaceAll(g, " +0000 UTC", "")
				}
				sort.Strings(got)
				sameRows(t, "view "+what, got, tc.want(n))
				if st := aggStateRows(t, ts.srv, "v"); st > tc.maxState {
					t.Fatalf("%s: the state holds %d rows after %d windows; want only the open windows'", what, st, n/10)
				}
			}

			const n = 2000 // 200 windows
			if m := insertEventsWatchingState(t, conn, ts.srv, "v", n); m > tc.maxState {
				t.Fatalf("the state held %d rows while inserting", m)
			}
			check("", n)

			// A late row with a new value topping a closed window.
			mustExec(t, conn, `INSERT INTO ev VALUES (-1, TIMESTAMP '2024-01-01 00:00:03', 100)`)
			mustExec(t, conn, "FLUSH")
			check("after a late row", n)

			mustExec(t, conn, "RECOVER")
			mustExec(t, conn, `INSERT INTO ev VALUES (-2, TIMESTAMP '2024-01-01 00:00:05', 100)`)
			insertEvents(t, conn, n, n+500)
			mustExec(t, conn, "FLUSH")
			check("after RECOVER", n+500)

			conn.Close(context.Background())
			ts.stop()
			ts = startTestServer(t, dir)
			conn = ts.connect(t)
			insertEvents(t, conn, n+500, n+1000)
			mustExec(t, conn, "FLUSH")
			check("after restart", n+1000)
		})
	}
}

// Only a watermark on a key column cleans: a window function ordered by
// the watermark column but partitioned by another, or a DISTINCT without
// the watermark column, keeps its state (a later row can still change
// the outputs of rows below the watermark, or re-create a tuple) and
// forwards no watermark.
func TestWatermarkCleanupOnlyByKeyColumns(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE TABLE ev (id INT, at TIMESTAMP, v INT, WATERMARK FOR at AS at - INTERVAL '5 seconds') APPEND ONLY`)
	for _, q := range []string{
		`SELECT id, v, row_number() OVER (PARTITION BY v ORDER BY at) AS rn FROM ev`,
		`SELECT id, v, sum(v) OVER (PARTITION BY v, id % 3 ORDER BY at ROWS 2 PRECEDING) AS s FROM ev`,
		`SELECT DISTINCT v FROM ev`,
		`SELECT DISTINCT v, at - at AS d FROM ev`,
	} {
		explain := strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW x AS "+q), "\n")
		if strings.Contains(explain, "cleaned by watermark") {
			t.Fatalf("%s: state cleaned by a watermark on no key column:\n%s", q, explain)
		}
		for _, line := range strings.Split(explain, "\n") {
			if (strings.Contains(line, "StreamOverWindow") || strings.Contains(line, "StreamDistinct")) && strings.Contains(line, "output watermarks") {
				t.Fatalf("%s: forwards a watermark:\n%s", q, explain)
			}
		}
	}
	// A watermark column among other partition columns cleans by it.
	explain := strings.Join(queryStrings(t, conn, `EXPLAIN CREATE MATERIALIZED VIEW x AS
		SELECT id, count(*) OVER (PARTITION BY v, at) AS n FROM ev`), "\n")
	if !strings.Contains(explain, "├── cleaned by watermark on: [ev.at]") {
		t.Fatalf("partition (v, at): not cleaned by at:\n%s", explain)
	}
}
