package server

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/stream/exec"
)

// aggStateRows counts the committed rows of every state table of view
// except its own rows (the aggregation's, the sources' ...).
func aggStateRows(t *testing.T, s *Server, view string) int {
	t.Helper()
	n, _, err := s.StateSize(context.Background(), view)
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// wmWindows is the expected content of the tumbling-window view over the
// rows id 0..n-1 at base + id seconds with v = id % 7: per 10-second
// window, count, sum and max of v.
func wmWindows(n int) []string {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	type agg struct{ n, sum, max int }
	var order []string
	m := map[string]*agg{}
	for id := 0; id < n; id++ {
		at := base.Add(time.Duration(id) * time.Second)
		ws := at.Truncate(10 * time.Second).Format("2006-01-02 15:04:05")
		a := m[ws]
		if a == nil {
			a = &agg{max: -1}
			m[ws] = a
			order = append(order, ws)
		}
		v := id % 7
		a.n++
		a.sum += v
		a.max = max(a.max, v)
	}
	out := make([]string, len(order))
	for i, ws := range order {
		a := m[ws]
		out[i] = fmt.Sprintf("%s|%d|%d|%d", ws, a.n, a.sum, a.max)
	}
	return out
}

func insertEvents(t *testing.T, conn *pgx.Conn, from, to int) {
	t.Helper()
	mustExec(t, conn, fmt.Sprintf(`INSERT INTO ev SELECT g, TIMESTAMP '2024-01-01 00:00:00' + g * INTERVAL '1 second', g %% 7
		FROM generate_series(%d, %d) g`, from, to-1))
}

func viewRows(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	got := queryStrings(t, conn, "SELECT window_start, n, s, mx FROM w ORDER BY window_start")
	for i, g := range got {
		// pgx renders timestamps with a zone; keep the wall time.
		if j := strings.Index(g, " +0000 UTC"); j >= 0 {
			got[i] = g[:j] + g[j+len(" +0000 UTC"):]
		}
	}
	return got
}

func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %d rows %v\nwant %d rows %v", what, len(got), got, len(want), want)
	}
}

// A table with WATERMARK FOR feeding a TUMBLE aggregation: the view is
// exact for on-time rows, the aggregation's state holds only the open
// windows however many have closed, late rows are dropped (not stored,
// not aggregated) and counted, and all of it keeps working after RECOVER
// and a restart.
func TestWatermarkCleansTumbleAggState(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE TABLE ev (id INT, at TIMESTAMP, v INT, WATERMARK FOR at AS at - INTERVAL '5 seconds') APPEND ONLY`)
	const view = `SELECT window_start, count(*) AS n, sum(v) AS s, max(v) AS mx
		FROM TUMBLE(ev, at, INTERVAL '10 seconds') GROUP BY window_start`
	explain := strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW w AS "+view), "\n")
	for _, want := range []string{"state cleaned by watermark on: [group_0]", "├── cleaned by watermark on: [group_0]",
		"watermark: at - INTERVAL '5 seconds', late rows dropped", "output watermarks: [window_start]"} {
		if !strings.Contains(explain, want) {
			t.Fatalf("EXPLAIN lacks %q:\n%s", want, explain)
		}
	}
	mustExec(t, conn, "CREATE MATERIALIZED VIEW w AS "+view)

	// 200 windows' worth of rows.
	const n = 2000
	maxState := insertEventsWatchingState(t, conn, ts.srv, "w", n)
	sameRows(t, "view", viewRows(t, conn), wmWindows(n))
	// Open windows: the one holding the watermark (5 s behind the last
	// row) and the last one; each keeps a result row and its max() inputs
	// (at most 10 rows per window).
	if st := aggStateRows(t, ts.srv, "w"); st > 30 || maxState > 30 {
		t.Fatalf("aggregation state holds %d rows (max %d while inserting) after 200 windows; want only the open windows'", st, maxState)
	}

	// Late rows: an insert into a closed window is dropped and counted;
	// so is a delete of a row in one (the row stays, as in the view).
	late0 := exec.LateRows("table ev")
	mustExec(t, conn, `INSERT INTO ev VALUES (-1, TIMESTAMP '2024-01-01 00:00:03', 5)`)
	mustExec(t, conn, `DELETE FROM ev WHERE id = 10`)
	mustExec(t, conn, "FLUSH")
	if got := exec.LateRows("table ev") - late0; got != 2 {
		t.Fatalf("late rows counted: %d; want 2", got)
	}
	if got := queryStrings(t, conn, "SELECT count(*), min(id) FROM ev"); fmt.Sprint(got) != fmt.Sprintf("[%d|0]", n) {
		t.Fatalf("table after late insert and delete: %v", got)
	}
	sameRows(t, "view after late rows", viewRows(t, conn), wmWindows(n))

	// RECOVER: the table recomputes its watermark from its rows, so a late
	// row stays late; on-time rows keep flowing and cleaning.
	mustExec(t, conn, "RECOVER")
	mustExec(t, conn, `INSERT INTO ev VALUES (-2, TIMESTAMP '2024-01-01 00:00:05', 5)`)
	insertEvents(t, conn, n, n+500)
	mustExec(t, conn, "FLUSH")
	sameRows(t, "view after RECOVER", viewRows(t, conn), wmWindows(n+500))
	if st := aggStateRows(t, ts.srv, "w"); st > 30 {
		t.Fatalf("after RECOVER the aggregation state holds %d rows", st)
	}

	// Restart.
	conn.Close(context.Background())
	ts.stop()
	ts = startTestServer(t, dir)
	conn = ts.connect(t)
	mustExec(t, conn, `INSERT INTO ev VALUES (-3, TIMESTAMP '2024-01-01 00:00:07', 5)`)
	insertEvents(t, conn, n+500, n+1000)
	mustExec(t, conn, "FLUSH")
	sameRows(t, "view after restart", viewRows(t, conn), wmWindows(n+1000))
	if st := aggStateRows(t, ts.srv, "w"); st > 30 {
		t.Fatalf("after restart the aggregation state holds %d rows", st)
	}
	if got := queryStrings(t, conn, "SELECT count(*) FROM ev WHERE id < 0"); fmt.Sprint(got) != "[0]" {
		t.Fatalf("late rows were stored: %v", got)
	}
}

// A nexmark source with WATERMARK FOR date_time over two splits: the
// HOP and TUMBLE aggregations equal the same views over the source
// without a watermark (its streams are in order per split: nothing is
// late), while their state stays bounded; the source's watermark
// survives RECOVER with its split positions. RUNNEL_WM_NEXMARK_EVENTS
// sets the events (default 10,000; the state sizes are logged).
func TestWatermarkNexmarkSourceMatchesUnwatermarked(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	events := 10000
	if s := os.Getenv("RUNNEL_WM_NEXMARK_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("RUNNEL_WM_NEXMARK_EVENTS=%q: want a positive number", s)
		}
		events = n
	}
	opts := fmt.Sprintf(`connector = 'nexmark', nexmark.table.type = 'bid', nexmark.event.num = '%d', nexmark.event.rate = '50',
		nexmark.split.num = '2', nexmark.min.event.gap.in.ns = '0'`, events)
	cols := `auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR`
	mustExec(t, conn, fmt.Sprintf(`CREATE SOURCE bid_wm (%s, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND) WITH (%s)`, cols, opts))
	mustExec(t, conn, fmt.Sprintf(`CREATE SOURCE bid_plain (%s) WITH (%s)`, cols, opts))
	views := map[string]string{
		"tumble": `SELECT window_start, count(*) AS n, max(price) AS mx, sum(price) AS s FROM TUMBLE(%s, date_time, INTERVAL '10' SECOND) GROUP BY window_start`,
		"hop": `SELECT auction, window_start, window_end, count(*) AS n
			FROM HOP(%s, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end`,
		// Nexmark q5: two aggregations and a join on window_start, all
		// cleaned.
		"q5": `SELECT AuctionBids.auction, AuctionBids.num FROM (
			SELECT auction, count(*) AS num, window_start AS starttime
			FROM HOP(%[1]s, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY window_start, auction) AS AuctionBids
			JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime_c FROM (
				SELECT count(*) AS num, window_start AS starttime_c
				FROM HOP(%[1]s, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start) AS CountBids
			GROUP BY CountBids.starttime_c) AS MaxBids
			ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn`,
		// Nexmark q7: the join on price keeps a bid only while the
		// interval condition lets a later window's maximum match it.
		"q7": `SELECT B.auction, B.price, B.bidder, B.date_time FROM %[1]s B
			JOIN (SELECT MAX(price) AS maxprice, window_end AS date_time
				FROM TUMBLE(%[1]s, date_time, INTERVAL '10' SECOND) GROUP BY window_end) B1
			ON B.price = B1.maxprice
			WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time`,
		// The three highest bids per window: an OverWindow partitioned by
		// window_start, cleaned.
		"top3": `SELECT window_start, rn, auction, price FROM (
			SELECT window_start, auction, price,
				row_number() OVER (PARTITION BY window_start ORDER BY price DESC, date_time, auction, bidder) AS rn
			FROM TUMBLE(%s, date_time, INTERVAL '10' SECOND)) s WHERE rn <= 3`,
		// The auctions bid on per window: a DISTINCT, cleaned.
		"distinct": `SELECT DISTINCT window_start, auction FROM TUMBLE(%s, date_time, INTERVAL '10' SECOND)`,
	}
	for name, q := range views {
		mustExec(t, conn, fmt.Sprintf("CREATE MATERIALIZED VIEW %s_wm AS ", name)+fmt.Sprintf(q, "bid_wm"))
		mustExec(t, conn, fmt.Sprintf("CREATE MATERIALIZED VIEW %s_plain AS ", name)+fmt.Sprintf(q, "bid_plain"))
	}
	explain := strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW x AS "+fmt.Sprintf(views["q5"], "bid_wm")), "\n")
	if n := strings.Count(explain, "├── cleaned by watermark on:"); n != 6 {
		// Three aggregations (a result table each, plus max's inputs) and
		// both sides of the join.
		t.Fatalf("q5: %d state tables cleaned by watermark, want 6:\n%s", n, explain)
	}
	explain = strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW x AS "+fmt.Sprintf(views["q7"], "bid_wm")), "\n")
	if n := strings.Count(explain, "├── cleaned by watermark on: [b.date_time]"); n != 1 ||
		!strings.Contains(explain, "├── cleaned by watermark on: [date_time]") {
		// The join's two sides, by the interval condition.
		t.Fatalf("q7: join state not cleaned by the interval condition:\n%s", explain)
	}
	ctx := context.Background()
	for name := range views {
		for _, v := range []string{name + "_wm", name + "_plain"} {
			if err := ts.srv.WaitSources(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustExec(t, conn, "FLUSH")
	for name := range views {
		want := queryStrings(t, conn, fmt.Sprintf("SELECT * FROM %s_plain ORDER BY 1, 2", name))
		got := queryStrings(t, conn, fmt.Sprintf("SELECT * FROM %s_wm ORDER BY 1, 2", name))
		sameRows(t, name, got, want)
		wmState, plainState := aggStateRows(t, ts.srv, name+"_wm"), aggStateRows(t, ts.srv, name+"_plain")
		t.Logf("%s: %d view rows; state rows %d with watermark, %d without", name, len(want), wmState, plainState)
		if wmState*4 > plainState {
			t.Fatalf("%s: state with watermark %d rows, without %d: want far fewer", name, wmState, plainState)
		}
	}
	if got := exec.LateRows("source bid_wm"); got != 0 {
		t.Fatalf("in-order nexmark stream: %d late rows", got)
	}
	// After RECOVER the sources resume at their committed positions with
	// their committed watermarks: nothing changes.
	mustExec(t, conn, "RECOVER")
	mustExec(t, conn, "FLUSH")
	for name := range views {
		want := queryStrings(t, conn, fmt.Sprintf("SELECT * FROM %s_plain ORDER BY 1, 2", name))
		got := queryStrings(t, conn, fmt.Sprintf("SELECT * FROM %s_wm ORDER BY 1, 2", name))
		sameRows(t, name+" after RECOVER", got, want)
	}
}

// A source's watermark is committed with its split positions: a view
// whose job is recovered part-way through an out-of-order datagen stream
// drops exactly the late rows a view that ran without recovery dropped.
// (Were it restarted from nothing, rows late before the recovery would be
// accepted after it.)
func TestWatermarkSourceLateRowsAcrossRecover(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	ctx := context.Background()
	mustExec(t, conn, `CREATE SOURCE dg (id INT, at TIMESTAMP, WATERMARK FOR at AS at - INTERVAL '1 hour') WITH (
		connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '10000',
		fields.at.max_past = '10 hours', fields.at.basetime = '2024-01-01 00:00:00',
		datagen.split.num = '2', datagen.rows.per.second = '4000')`)
	const q = `SELECT count(*) AS n, sum(id) AS s FROM dg`
	mustExec(t, conn, "CREATE MATERIALIZED VIEW v1 AS "+q)
	if err := ts.srv.WaitSources(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "FLUSH")
	want := queryStrings(t, conn, "SELECT * FROM v1")
	late := exec.LateRows("source dg")
	if late < 1000 {
		t.Fatalf("only %d late rows: the stream is not out of order enough for this test", late)
	}

	mustExec(t, conn, "CREATE MATERIALIZED VIEW v2 AS "+q)
	// Recover once v2's sources are part-way through (they are paced at
	// 4000 rows/s per split: 1.25 s in all).
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := ts.srv.SourceRows("v2")
		if err != nil {
			t.Fatal(err)
		}
		if n >= 2000 {
			if n >= 10000 {
				t.Logf("v2's sources finished before RECOVER (%d rows): the check below is weaker", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("v2's sources emitted only %d rows in 30 s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mustExec(t, conn, "RECOVER")
	if err := ts.srv.WaitSources(ctx, "v2"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "FLUSH")
	sameRows(t, "v2 (recovered) vs v1", queryStrings(t, conn, "SELECT * FROM v2"), want)
}
