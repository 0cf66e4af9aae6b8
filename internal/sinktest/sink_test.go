package sinktest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// seed returns the test's seed (RUNNEL_TEST_SEED replays one) and logs it.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("RUNNEL_TEST_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("RUNNEL_TEST_SEED: %v", err)
		}
	}
	t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays)", s, s)
	return s
}

// targetDB creates a fresh database in the shared PostgreSQL cluster and
// returns its URL and a connection to it (closed when the test ends).
func targetDB(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	pg, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close(context.Background()) })
	return url, pg
}

// jdbcURL turns a pgtest URL (postgres://user@host:port/db?...) into
// RisingWave's jdbc.url form.
func jdbcURL(t *testing.T, pgURL string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	u := fmt.Sprintf("jdbc:postgresql://%s:%d/%s?user=%s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	if cfg.Password != "" {
		u += "&password=" + cfg.Password
	}
	return u
}

// rowsOf returns the rows of a query as sorted text lines.
func rowsOf(t *testing.T, conn *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := rows.RawValues()
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// waitEqual waits until the target's rows equal the view's (the sink
// delivers asynchronously, a few barriers behind).
func waitEqual(t *testing.T, rw, pg *pgx.Conn, viewQ, targetQ string, limit time.Duration) {
	t.Helper()
	mustExec(t, rw, "FLUSH")
	want := rowsOf(t, rw, viewQ)
	deadline := time.Now().Add(limit)
	for {
		got := rowsOf(t, pg, targetQ)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("target differs from the view after %v:\nview (%d rows): %v\ntarget (%d rows): %v", limit, len(want), head(want), len(got), head(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func head(s []string) []string {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// randomDML applies n random statements to t(k int primary key, g int, v int).
func randomDML(t *testing.T, conn *pgx.Conn, r *rand.Rand, n, keys int) {
	t.Helper()
	for i := 0; i < n; i++ {
		k := r.IntN(keys)
		switch r.IntN(4) {
		case 0, 1:
			mustExec(t, conn, fmt.Sprintf("INSERT INTO t SELECT %d, %d, %d WHERE NOT EXISTS (SELECT 1 FROM t WHERE k = %d)", k, r.IntN(5), r.IntN(1000), k))
		case 2:
			mustExec(t, conn, fmt.Sprintf("UPDATE t SET v = %d, g = %d WHERE k = %d", r.IntN(1000), r.IntN(5), k))
		case 3:
			mustExec(t, conn, fmt.Sprintf("DELETE FROM t WHERE k >= %d AND k < %d", k, k+r.IntN(3)))
		}
	}
}

// TestPostgresSinkUpsertMatchesView: an upsert sink from a materialized
// view (aggregation: rows are updated and deleted) and an append-only sink
// with force_append_only, both into PostgreSQL, after seeded random DML and
// a RECOVER; the upsert target equals the view, the progress row holds the
// last delivered epoch, and rw_sinks shows the sinks with no backlog.
func TestPostgresSinkUpsertMatchesView(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 1))
	target, pg := targetDB(t)
	ctx := context.Background()
	mustExec(t, pg, "CREATE TABLE agg (g int PRIMARY KEY, n bigint, s bigint)")
	mustExec(t, pg, "CREATE TABLE log (k int, v int)")

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE t (k int PRIMARY KEY, g int, v int)")
	randomDML(t, rw, r, 30, 40) // the backfill's rows
	mustExec(t, rw, "CREATE MATERIALIZED VIEW mv AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK agg_sink FROM mv WITH (connector = 'jdbc', jdbc.url = '%s',
		table.name = 'agg', type = 'upsert', primary_key = 'g')`, jdbcURL(t, target)))
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK log_sink AS SELECT k, v FROM t WHERE v > 500 WITH (connector = 'postgres',
		jdbc.url = '%s', table.name = 'log', type = 'append-only', force_append_only = 'true')`, jdbcURL(t, target)))
	waitEqual(t, rw, pg, "SELECT g, n, s FROM mv", "SELECT g, n, s FROM agg", 20*time.Second)
	for round := 0; round < 4; round++ {
		randomDML(t, rw, r, 40, 40)
		if round == 2 {
			mustExec(t, rw, "FLUSH")
			mustExec(t, rw, "RECOVER")
		}
		waitEqual(t, rw, pg, "SELECT g, n, s FROM mv", "SELECT g, n, s FROM agg", 20*time.Second)
	}
	var progress int64
	if err := pg.QueryRow(ctx, "SELECT epoch FROM runnel_sink_progress WHERE sink = 'dev.public.agg_sink'").Scan(&progress); err != nil || progress == 0 {
		t.Fatalf("progress row: %d, %v", progress, err)
	}
	// The append-only target holds at least every row with v > 500 now
	// in t (inserts only: earlier versions stay).
	now := rowsOf(t, rw, "SELECT k, v FROM t WHERE v > 500")
	got := rowsOf(t, pg, "SELECT DISTINCT k, v FROM log")
	for _, row := range now {
		if _, found := slices.BinarySearch(got, row); !found {
			t.Fatalf("append-only target lacks %s", row)
		}
	}
	rows := rowsOf(t, rw, "SELECT name, connector, sink_type, status, pending_rows, last_error FROM rw_catalog.rw_sinks")
	want := []string{"agg_sink|jdbc|upsert|running|0|NULL", "log_sink|postgres|append-only|running|0|NULL"}
	if !slices.Equal(rows, want) {
		t.Fatalf("rw_sinks: %v, want %v", rows, want)
	}
	if got := rowsOf(t, rw, "SHOW SINKS"); !slices.Equal(got, []string{"agg_sink", "log_sink"}) {
		t.Fatalf("SHOW SINKS: %v", got)
	}
	mustExec(t, rw, "DROP SINK agg_sink")
	mustExec(t, rw, "DROP SINK IF EXISTS agg_sink")
	mustExec(t, rw, "DROP MATERIALIZED VIEW mv")
	if got := rowsOf(t, rw, "SHOW SINKS"); !slices.Equal(got, []string{"log_sink"}) {
		t.Fatalf("SHOW SINKS after DROP: %v", got)
	}
}
