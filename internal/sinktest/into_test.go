package sinktest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestSinkIntoTable: RisingWave's CREATE SINK ... INTO table. An upsert
// sink from an aggregation into a table with the view's key follows the
// view through seeded random DML (updates and deletes included), a
// RECOVER and a restart; FLUSH covers what the sink delivers, so the
// table equals the view right after it, with no waiting; a view over the
// target table sees the sink's rows; two append-only sinks into one
// table without a key (one with a column list, the other column's
// DEFAULT filling in) union their rows. The refusals: a sink that reads
// its own target, a target that is not a table, unknown target columns,
// a connector or FORMAT on a sink into a table, a key other than the
// table's; DROP TABLE of a target needs CASCADE, which drops the sink.
func TestSinkIntoTable(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 2))
	srv := servertest.Start(t)
	rw := srv.Connect(t)
	for _, q := range []string{
		`CREATE TABLE t (k int PRIMARY KEY, g int, v int)`,
		`CREATE MATERIALIZED VIEW agg AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g`,
		`CREATE TABLE totals (g int PRIMARY KEY, n bigint, s bigint, note text DEFAULT 'from sink')`,
		`CREATE SINK s_totals INTO totals FROM agg`,
		`CREATE MATERIALIZED VIEW over_totals AS SELECT count(*) AS groups, sum(n) AS rows FROM totals`,
		`CREATE TABLE log (id int, what varchar DEFAULT 'default')`,
		`CREATE SINK s_log1 INTO log (id) AS SELECT k FROM t WITH (type = 'append-only', force_append_only = 'true')`,
		`CREATE SINK s_log2 INTO log AS SELECT k * 1000, 'big' FROM t WHERE v > 900 WITH (force_append_only = 'true')`,
	} {
		mustExec(t, rw, q)
	}
	check := func(when string) {
		t.Helper()
		mustExec(t, rw, "FLUSH")
		want := rowsOf(t, rw, "SELECT g, n, s, 'from sink' FROM agg")
		if got := rowsOf(t, rw, "SELECT g, n, s, note FROM totals"); !slices.Equal(got, want) {
			t.Fatalf("%s: totals after FLUSH differs from the view\nview: %v\ntotals: %v", when, head(want), head(got))
		}
		wantOver := rowsOf(t, rw, "SELECT count(*), sum(n) FROM agg")
		if got := rowsOf(t, rw, "SELECT groups, rows FROM over_totals"); !slices.Equal(got, wantOver) {
			t.Fatalf("%s: view over the target table = %v; want %v", when, got, wantOver)
		}
	}
	randomDML(t, rw, r, 60, 40)
	check("after random DML")
	mustExec(t, rw, "RECOVER")
	randomDML(t, rw, r, 40, 40)
	check("after RECOVER")
	srv = srv.Restart(t)
	rw = srv.Connect(t)
	randomDML(t, rw, r, 40, 40)
	check("after restart")

	// The append-only sinks: every insert of t once in log (s_log1 with
	// the DEFAULT of what), and the big ones again from s_log2. Rows of
	// the initial backfill and all later inserts; nothing is deleted.
	got := rowsOf(t, rw, "SELECT what, count(*) FROM log GROUP BY what")
	if len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "default|") {
		t.Fatalf("log by what = %v; want rows from s_log1 with the DEFAULT", got)
	}

	for _, c := range []struct{ sql, code string }{
		{`CREATE SINK bad INTO t AS SELECT k + 1000, g, v FROM t`, "42P17"},
		{`CREATE SINK bad INTO totals AS SELECT g, count(*), 0 FROM over_totals, t GROUP BY g`, "42P17"},
		{`CREATE SINK bad INTO agg FROM t`, "42809"},
		{`CREATE SINK bad INTO nosuch FROM t`, "42P01"},
		{`CREATE SINK bad INTO log (nope) AS SELECT 1`, "42703"},
		{`CREATE SINK bad INTO log (id, id) AS SELECT 1, 2`, "42701"},
		{`CREATE SINK bad INTO log AS SELECT 1, 'a', 3`, "42601"},
		{`CREATE SINK bad INTO totals FROM agg WITH (connector = 'kafka')`, "22023"},
		{`CREATE SINK bad INTO totals FROM agg WITH (primary_key = 'n')`, "22023"},
		{`CREATE SINK bad INTO log AS SELECT g, 'x' FROM agg`, "22023"}, // not append-only, and log has no key
		{`CREATE SINK bad FROM t WITH (connector = '_table', type = 'append-only')`, "0A000"},
		{`DROP TABLE totals`, "2BP01"},
	} {
		_, err := rw.Exec(context.Background(), c.sql)
		var pe *pgconn.PgError
		if err == nil || !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v; want SQLSTATE %s", c.sql, err, c.code)
		}
	}
	mustExec(t, rw, "DROP TABLE totals CASCADE")
	if got := rowsOf(t, rw, "SELECT name FROM rw_catalog.rw_sinks"); !slices.Equal(got, []string{"s_log1", "s_log2"}) {
		t.Fatalf("sinks after DROP TABLE totals CASCADE: %v", got)
	}
	var n int
	if err := rw.QueryRow(context.Background(), "SELECT count(*) FROM over_totals", pgx.QueryExecModeSimpleProtocol).Scan(&n); err == nil {
		t.Fatalf("over_totals survived DROP TABLE totals CASCADE")
	}
}
