package server

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestTimeWindowViewsFollowRandomDML keeps materialized views over TUMBLE
// and HOP (aggregated, joined, plain projections) equal to their defining
// queries evaluated as batch SELECTs, through seeded random inserts,
// updates that move rows between windows or to a NULL time, deletes, and
// a restart (the views are re-planned from their definitions).
func TestTimeWindowViewsFollowRandomDML(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE ev (id INT PRIMARY KEY, g INT, v INT, at TIMESTAMP, atz TIMESTAMPTZ)")
	views := map[string]string{
		"tw_tumble_agg":  `SELECT g, window_start, window_end, count(*) AS c, sum(v) AS s FROM TUMBLE(ev, at, INTERVAL '10' SECOND) GROUP BY g, window_start, window_end`,
		"tw_hop_agg":     `SELECT window_start, max(v) AS m, count(*) AS c FROM HOP(ev, at, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY window_start`,
		"tw_hop_rows":    `SELECT id, v, window_start, window_end FROM HOP(ev, atz, INTERVAL '5' SECOND, INTERVAL '15' SECOND, INTERVAL '1' SECOND) WHERE v > 2`,
		"tw_tumble_rows": `SELECT * FROM TUMBLE(ev, atz, INTERVAL '1 minute')`,
		// q5's shape: the hottest key per hopping window.
		"tw_hot": `SELECT a.g, a.num, a.ws FROM (
				SELECT g, count(*) AS num, window_start AS ws FROM HOP(ev, at, INTERVAL '2' SECOND, INTERVAL '6' SECOND) GROUP BY g, window_start) a
			JOIN (SELECT max(num) AS maxn, ws FROM (
				SELECT count(*) AS num, window_start AS ws FROM HOP(ev, at, INTERVAL '2' SECOND, INTERVAL '6' SECOND) GROUP BY g, window_start) c GROUP BY ws) m
			ON a.ws = m.ws AND a.num >= m.maxn`,
		// q8's shape: TUMBLE joined with TUMBLE on the window.
		"tw_join": `SELECT p.g, p.ws FROM (SELECT g, window_start AS ws FROM TUMBLE(ev, at, INTERVAL '10' SECOND) GROUP BY g, window_start) p
			JOIN (SELECT g, window_start AS ws FROM TUMBLE(ev, atz, INTERVAL '10' SECOND) GROUP BY g, window_start) q ON p.g = q.g AND p.ws = q.ws`,
	}
	var names []string
	for name, def := range views {
		mustExec(t, conn, "CREATE MATERIALIZED VIEW "+name+" AS "+def)
		names = append(names, name)
	}
	sort.Strings(names)
	randTime := func() string {
		if r.Intn(10) == 0 {
			return "NULL"
		}
		return fmt.Sprintf("'2024-05-01 12:00:00'::timestamp + %d * INTERVAL '250 milliseconds'", r.Intn(400)-200)
	}
	check := func(round int) {
		t.Helper()
		mustExec(t, conn, "FLUSH")
		for _, name := range names {
			got := queryStrings(t, conn, "SELECT * FROM "+name)
			want := queryStrings(t, conn, views[name])
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("seed %d round %d: view %s differs from its query\ngot %d rows:\n  %s\nwant %d rows:\n  %s", seed, round, name,
					len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
			}
		}
	}
	for round := 0; round < 12; round++ {
		if round == 6 {
			ts.stop()
			ts = startTestServer(t, dir)
			conn = ts.connect(t)
		}
		for i := 0; i < 15; i++ {
			id := r.Intn(40)
			switch r.Intn(4) {
			case 0, 1:
				tv := randTime()
				tz := "NULL"
				if tv != "NULL" {
					tz = "(" + tv + ") AT TIME ZONE 'UTC'"
				}
				mustExec(t, conn, fmt.Sprintf("INSERT INTO ev VALUES (%d, %d, %d, %s, %s) ON CONFLICT (id) DO NOTHING", id, r.Intn(3), r.Intn(6), tv, tz))
			case 2:
				mustExec(t, conn, fmt.Sprintf("UPDATE ev SET at = %s, v = v + 1 WHERE id = %d", randTime(), id))
			default:
				mustExec(t, conn, fmt.Sprintf("DELETE FROM ev WHERE id = %d", id))
			}
		}
		check(round)
	}
	if got := queryStrings(t, conn, "SELECT count(*) FROM tw_hop_agg"); len(got) != 1 || got[0] == "0" {
		t.Fatalf("seed %d: tw_hop_agg is empty (%v): the test checks nothing", seed, got)
	}
}

// TestWatermarkIsStored: CREATE SOURCE / CREATE TABLE with WATERMARK FOR
// keep the clause in the catalog, across a restart.
func TestWatermarkIsStored(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE SOURCE wm_bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR,
		WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
		WITH (connector = 'nexmark', nexmark.table.type = 'bid', nexmark.event.num = '10')`)
	mustExec(t, conn, `CREATE TABLE wm_t (id INT, at TIMESTAMPTZ, WATERMARK FOR at AS at - INTERVAL '1 minute') APPEND ONLY`)
	mustExec(t, conn, `CREATE TABLE wm_none (id INT)`)
	check := func(s *Server) {
		t.Helper()
		for _, c := range []struct {
			rel  string
			col  int
			expr string
		}{{"wm_bid", 5, "date_time - INTERVAL '4' SECOND"}, {"wm_t", 1, "at - INTERVAL '1 minute'"}} {
			wm := mustRelation(t, s, c.rel).Watermark
			if wm == nil || wm.Column != c.col {
				t.Fatalf("%s: watermark %+v, want column %d", c.rel, wm, c.col)
			}
			if !strings.Contains(strings.ToLower(wm.Expr), strings.Split(c.expr, " ")[0]) || !strings.Contains(strings.ToLower(wm.Expr), "interval") {
				t.Fatalf("%s: watermark expression %q, want one like %q", c.rel, wm.Expr, c.expr)
			}
		}
		if wm := mustRelation(t, s, "wm_none").Watermark; wm != nil {
			t.Fatalf("wm_none: watermark %+v, want none", wm)
		}
	}
	check(ts.srv)
	ts.stop()
	ts = startTestServer(t, dir)
	check(ts.srv)
}
