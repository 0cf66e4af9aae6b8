package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/stream/exec"
)

// pgErr runs sql and returns its PostgreSQL error (nil when it succeeds).
func pgErr(t *testing.T, conn *pgx.Conn, sql string) *pgconn.PgError {
	t.Helper()
	_, err := conn.Exec(context.Background(), sql)
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("%s: %v is not a server error (connection lost?)", sql, err)
	}
	return pe
}

// EXPLAIN CREATE MATERIALIZED VIEW prints fragments, operators with their
// keys and distributions, and the state tables, and creates nothing.
func TestExplainCreateMaterializedView(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (a INT PRIMARY KEY, b INT, c TEXT)")
	mustExec(t, conn, "CREATE TABLE u (a INT, d INT)")
	before := len(ts.srv.catalog.Relations(nil))

	plan := strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW v AS SELECT b, count(*) AS n FROM t GROUP BY b"), "\n")
	for _, want := range []string{
		"Fragment 0 (parallel, hash(b))",
		"StreamMaterialize { columns: [b, n], stream key: [b], dist: hash(b) }",
		"StreamHashAgg { group key: [group_0], aggs: [count(*)]",
		"└── StreamExchange { dist: hash(group_0) } from Fragment 1",
		"Fragment 1 (one actor per actor of t)",
		"StreamTableScan { table: t, columns: [t.a, t.b, t.c], upstream: no shuffle",
		"Table 0 (Materialize)\n├── columns: [b integer, n bigint]\n├── primary key: [b ASC]\n└── distribution key: [b]",
		"Table 1 (HashAgg)\n├── columns: [group_0 integer, _row_count bigint,",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	join := strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW j AS SELECT t.a, u.d FROM t LEFT JOIN u ON t.a = u.a"), "\n")
	for _, want := range []string{
		"StreamHashJoin { type: Left, left keys: [join_key_0], right keys: [join_key_0]",
		"├── state tables: [1, 2]",
		"Fragment 3 (one actor per actor of u)",
		"_degree bigint",
		// Redistributed by the view's leading key column, so that a
		// lookup by it reads one vnode (streamplan's materialize).
		"StreamExchange { dist: hash(a) } from Fragment 1",
		"└── distribution key: [a]",
	} {
		if !strings.Contains(join, want) {
			t.Errorf("join plan lacks %q:\n%s", want, join)
		}
	}
	topn := strings.Join(queryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW k AS SELECT a, b FROM t ORDER BY b DESC LIMIT 3"), "\n")
	if !strings.Contains(topn, "StreamTopN { order: [b DESC, a ASC], limit: 3, stream key: [a], dist: single }") ||
		!strings.Contains(topn, "Fragment 0 (single actor)") {
		t.Errorf("top-N plan:\n%s", topn)
	}
	// Nothing was created.
	if after := len(ts.srv.catalog.Relations(nil)); after != before {
		t.Fatalf("EXPLAIN created relations: %d -> %d", before, after)
	}
	if e := pgErr(t, conn, "SELECT * FROM v"); e == nil || e.Code != "42P01" {
		t.Fatalf("SELECT from an explained view: %v", e)
	}
	// A prepared EXPLAIN describes its one text column.
	rows, err := conn.Query(context.Background(), "EXPLAIN CREATE MATERIALIZED VIEW v AS SELECT a FROM t WHERE b > $1", 1)
	if err == nil {
		rows.Close()
		t.Fatalf("EXPLAIN with a parameter succeeded")
	}
	if got := queryStrings(t, conn, "SELECT 1"); fmt.Sprint(got) != "[1]" {
		t.Fatalf("session after EXPLAIN: %v", got)
	}
}

// Bad input: every unsupported view query is refused with 0A000 naming the
// construct, by CREATE and by EXPLAIN alike, and the session stays usable.
func TestUnsupportedViewQueries(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (a INT PRIMARY KEY, b INT, c TEXT)")
	mustExec(t, conn, "CREATE TABLE u (a INT, d INT)")
	cases := []struct{ query, construct string }{
		{"SELECT a, EXISTS (SELECT 1 FROM u WHERE u.d > t.b) FROM t", "subqueries"}, // correlated by a non-equality
		{"SELECT a, (SELECT max(d) FROM u WHERE u.a > t.a) FROM t", "subqueries"},   // correlated by a non-equality
		{"SELECT (SELECT count(*) FROM u) AS n", "subqueries"},
		{"SELECT a, now() FROM t", "now()"},
		{"SELECT a FROM t WHERE b > extract(epoch from now())", "now()"},
		{"SELECT a, random() FROM t", "random()"},
		{"SELECT a, clock_timestamp() FROM t", "clock_timestamp()"},
		{"SELECT a, current_timestamp FROM t", "now()"}, // PostgreSQL's binding of CURRENT_TIMESTAMP
		{"SELECT current_date AS d", "current_date()"},
		{"SELECT b, max(a) FILTER (WHERE random() > 0.5) FROM t GROUP BY b", "random()"},
		{"WITH RECURSIVE r(n) AS (SELECT a FROM t UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r", "WITH RECURSIVE"},
		{"SELECT * FROM t FOR UPDATE", "FOR UPDATE"},
		{"SELECT * FROM t TABLESAMPLE SYSTEM (10)", "TABLESAMPLE"},
		{"SELECT * FROM t, LATERAL (SELECT d FROM u WHERE u.a = t.a) x", "LATERAL"},
		{"SELECT b, array_agg(ARRAY[a]) FROM t GROUP BY b", "multidimensional"},
		{"SELECT * FROM generate_series(1, 1000000)", "constant relation"},
		{"SELECT a FROM t WHERE b > (SELECT d FROM u)", "at most one row"},
	}
	for _, c := range cases {
		for _, prefix := range []string{"CREATE", "EXPLAIN CREATE"} {
			sql := prefix + " MATERIALIZED VIEW bad AS " + c.query
			e := pgErr(t, conn, sql)
			if e == nil {
				t.Errorf("%s: succeeded; want 0A000", sql)
				mustExec(t, conn, "DROP MATERIALIZED VIEW IF EXISTS bad")
				continue
			}
			if e.Code != "0A000" || !strings.Contains(e.Message, c.construct) {
				t.Errorf("%s: %s %q; want 0A000 naming %q", sql, e.Code, e.Message, c.construct)
			}
			if got := queryStrings(t, conn, "SELECT count(*) FROM t"); fmt.Sprint(got) != "[0]" {
				t.Fatalf("session after %s: %v", sql, got)
			}
		}
	}
	// What PostgreSQL and RisingWave accept is accepted.
	for _, q := range []string{
		"SELECT a FROM t ORDER BY a",
		"SELECT a FROM t LIMIT 2",
		"SELECT a FROM t ORDER BY b LIMIT 2 OFFSET 1",
		// A single window output projected to "any" before DISTINCT: its
		// fragment must run one actor (it failed with "actor N owns no
		// vnode"; found by TestRandomViewQueriesNeverBreakTheServer).
		"SELECT DISTINCT row_number() OVER (ORDER BY a) FROM t",
		"SELECT a, b, GROUPING(a, b) FROM t GROUP BY ROLLUP (a, b)",
	} {
		mustExec(t, conn, "CREATE MATERIALIZED VIEW ok AS "+q)
		mustExec(t, conn, "DROP MATERIALIZED VIEW ok")
	}
}

// DROP of something with dependents is 2BP01 naming them; CASCADE drops
// them too.
func TestDropWithDependents(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (a INT PRIMARY KEY, b INT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 10), (2, 20)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW m1 AS SELECT b, count(*) AS n FROM t GROUP BY b")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW m2 AS SELECT sum(n) AS total FROM m1")
	for _, c := range []struct{ sql, dependent string }{
		{"DROP TABLE t", "materialized view m1"},
		{"DROP MATERIALIZED VIEW m1", "materialized view m2"},
	} {
		e := pgErr(t, conn, c.sql)
		if e == nil || e.Code != "2BP01" || !strings.Contains(e.Message+"\n"+e.Detail, c.dependent) {
			t.Fatalf("%s: %+v; want 2BP01 naming %s", c.sql, e, c.dependent)
		}
		if got := queryStrings(t, conn, "SELECT total::bigint FROM m2"); fmt.Sprint(got) != "[2]" {
			t.Fatalf("after refused %s: m2 = %v", c.sql, got)
		}
	}
	mustExec(t, conn, "DROP MATERIALIZED VIEW m1 CASCADE")
	if e := pgErr(t, conn, "SELECT * FROM m2"); e == nil || e.Code != "42P01" {
		t.Fatalf("m2 after DROP m1 CASCADE: %v", e)
	}
	mustExec(t, conn, "CREATE MATERIALIZED VIEW m3 AS SELECT a FROM t")
	mustExec(t, conn, "DROP TABLE t CASCADE")
	for _, rel := range []string{"t", "m3"} {
		if e := pgErr(t, conn, "SELECT * FROM "+rel); e == nil || e.Code != "42P01" {
			t.Fatalf("%s after DROP TABLE t CASCADE: %v", rel, e)
		}
	}
}

// Constant relations in views are emitted once: not again after RECOVER,
// nor after a restart; and they combine with tables.
func TestConstantRelationViews(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (a INT PRIMARY KEY)")
	mustExec(t, conn, "INSERT INTO t VALUES (1), (2)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW series AS SELECT * FROM generate_series(1, 5000) g")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW vals AS VALUES (1, 'one'), (2, 'two'), (2, 'two')")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW nofrom AS SELECT 42 AS answer")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW mixed AS SELECT a FROM t UNION ALL VALUES (10), (11)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW joined AS SELECT t.a, g FROM t JOIN generate_series(1, 3) g ON t.a = g")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW agg AS SELECT count(*) AS n, sum(g) AS s FROM generate_series(1, 100) g WHERE g % 2 = 0")
	check := func(when string, conn *pgx.Conn) {
		t.Helper()
		for _, c := range []struct{ q, want string }{
			{"SELECT count(*), sum(g) FROM series", "[5000|12502500]"},
			{"SELECT * FROM vals ORDER BY 1", "[1|one 2|two 2|two]"},
			{"SELECT * FROM nofrom", "[42]"},
			{"SELECT * FROM mixed ORDER BY 1", "[1 2 3 10 11]"},
			{"SELECT * FROM joined ORDER BY 1", "[1|1 2|2 3|3]"},
			{"SELECT * FROM agg", "[50|2550]"},
		} {
			if got := queryStrings(t, conn, c.q); fmt.Sprint(got) != c.want {
				t.Errorf("%s: %s = %v; want %s", when, c.q, got, c.want)
			}
		}
	}
	mustExec(t, conn, "INSERT INTO t VALUES (3)")
	mustExec(t, conn, "FLUSH")
	check("after create", conn)
	mustExec(t, conn, "RECOVER")
	mustExec(t, conn, "FLUSH")
	check("after RECOVER", conn)
	conn.Close(context.Background())
	ts.stop()

	ts2 := startTestServer(t, dir)
	conn2 := ts2.connect(t)
	mustExec(t, conn2, "FLUSH")
	check("after restart", conn2)
}

// holdBackfill holds the backfill of materialized view name after its
// first batch: held receives the snapshot rows emitted by then, and the
// backfill goes on once unhold is called (at the latest when the test
// ends, before the server stops).
func holdBackfill(t *testing.T, name string) (held <-chan int64, unhold func()) {
	t.Helper()
	h := make(chan int64, 1)
	release := make(chan struct{})
	remove := exec.SetBackfillHook(func(ctx context.Context, executor string, rows int64) {
		if !strings.Contains(executor, "materialized view "+name+" ") {
			return
		}
		select {
		case h <- rows:
		default:
			return // held once
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	t.Cleanup(remove)
	var releaseOnce sync.Once
	unhold = func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unhold)
	return h, unhold
}

// heldViewCreation loads table big (3,000 rows) and starts CREATE
// MATERIALIZED VIEW slow over it on a second connection, its backfill
// held after the first batch (holdBackfill): it returns a connection for
// the test, the rows backfilled by then, the release, and the CREATE's
// outcome once it returns.
func heldViewCreation(t *testing.T) (conn *pgx.Conn, rows int64, unhold func(), created <-chan error) {
	t.Helper()
	ts := startTestServer(t, "")
	conn = ts.connect(t)
	mustExec(t, conn, "CREATE TABLE big (k INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO big SELECT g, g % 7 FROM generate_series(1, 3000) g")
	mustExec(t, conn, "FLUSH")
	held, unhold := holdBackfill(t, "slow")
	done := make(chan error, 1)
	conn2 := ts.connect(t)
	go func() {
		_, err := conn2.Exec(context.Background(), "CREATE MATERIALIZED VIEW slow AS SELECT v, count(*) AS n FROM big GROUP BY v")
		done <- err
	}()
	select {
	case rows = <-held:
	case err := <-done:
		t.Fatalf("CREATE finished before the backfill was held: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("backfill never reached the hook")
	}
	return conn, rows, unhold, done
}

// SHOW JOBS reports a backfill's progress while it runs, and rw_actors
// shows the backfilling actor; both are observed with the backfill held
// by a test hook after its first batch.
func TestShowJobsBackfillProgress(t *testing.T) {
	conn, rows, unhold, created := heldViewCreation(t)
	jobs := queryStrings(t, conn, "SHOW JOBS")
	want := fmt.Sprintf("CREATE MATERIALIZED VIEW slow|%d rows backfilled, 0/1 upstream actors done", rows)
	if len(jobs) != 1 || !strings.Contains(jobs[0], want) {
		t.Fatalf("SHOW JOBS = %q; want one job containing %q", jobs, want)
	}
	// The downstream actors may still be processing the batch the held
	// backfill emitted last, be idle by now, or (one that no row has
	// reached yet, under load) not have started pulling.
	states := queryStrings(t, conn, "SELECT DISTINCT state FROM rw_actors WHERE job = 'materialized view slow' ORDER BY 1")
	backfilling := false
	for _, s := range states {
		switch s {
		case "backfilling":
			backfilling = true
		case "starting", "waiting for input", "processing":
		default:
			t.Fatalf("states of the view's actors = %v: %q is neither the backfill's nor a downstream's (starting, idle or processing)", states, s)
		}
	}
	if !backfilling || len(states) < 2 {
		t.Fatalf("states of the view's actors = %v; want the backfill's and its downstream's", states)
	}
	unhold()
	if err := <-created; err != nil {
		t.Fatalf("CREATE: %v", err)
	}
	if jobs := queryStrings(t, conn, "SHOW JOBS"); len(jobs) != 0 {
		t.Fatalf("SHOW JOBS after creation = %q", jobs)
	}
	if got := queryStrings(t, conn, "SELECT sum(n)::bigint FROM slow"); fmt.Sprint(got) != "[3000]" {
		t.Fatalf("slow = %v", got)
	}
}

// rw_actors lists every actor with its job, root executor and state;
// rw_recovery_history records each recovery.
func TestActorAndRecoverySystemTables(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (a INT PRIMARY KEY, b INT)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW m AS SELECT b, count(*) AS n FROM t GROUP BY b")
	got := queryStrings(t, conn, "SELECT database, job, root, state FROM rw_catalog.rw_actors WHERE job = 'table t'")
	if fmt.Sprint(got) != "[dev|table t|Table(t, state table "+fmt.Sprint(mustRelation(t, ts.srv, "t").StateTable)+")|waiting for input]" {
		t.Fatalf("table actor: %v", got)
	}
	// waiting_on is each actor's await tree: an idle view actor is in its
	// aggregation reading the exchange (issue 17 item 4).
	waits := queryStrings(t, conn, "SELECT DISTINCT waiting_on FROM rw_actors WHERE job = 'materialized view m' AND fragment = 0")
	if len(waits) != 1 || !strings.HasPrefix(waits[0], "exec.(*Materialize).Next → ") || !strings.Contains(waits[0], "exec.(*HashAgg).Next → stream.(*Merge).Next (exchange.go:") {
		t.Fatalf("waiting_on of fragment 0's idle actors: %q; want the chain from Materialize through HashAgg into the exchange", waits)
	}
	// The fragments are those EXPLAIN prints: 0 writes the view.
	frags := queryStrings(t, conn, "SELECT DISTINCT fragment FROM rw_actors WHERE job = 'materialized view m' AND since <= now() AND duration >= interval '0' ORDER BY 1")
	if fmt.Sprint(frags) != "[0 1]" {
		t.Fatalf("fragments of m's actors: %v; want [0 1]", frags)
	}
	roots := queryStrings(t, conn, "SELECT DISTINCT split_part(root, '(', 1) FROM rw_actors WHERE job = 'materialized view m' AND fragment = 0")
	if fmt.Sprint(roots) != "[Materialize]" {
		t.Fatalf("roots of fragment 0: %v", roots)
	}
	if got := queryStrings(t, conn, "SELECT count(*) FROM rw_recovery_history"); fmt.Sprint(got) != "[0]" {
		t.Fatalf("recoveries before RECOVER: %v", got)
	}
	mustExec(t, conn, "RECOVER")
	got = queryStrings(t, conn, "SELECT reason, reset_ms >= 0, rebuild_ms >= 0, epoch > 0, error IS NULL FROM rw_catalog.rw_recovery_history")
	if fmt.Sprint(got) != "[RECOVER statement from user root|true|true|true|true]" {
		t.Fatalf("rw_recovery_history = %v", got)
	}
	// A user relation of the same name wins over the unqualified system one.
	mustExec(t, conn, "CREATE TABLE rw_actors (x INT)")
	if got := queryStrings(t, conn, "SELECT count(*) FROM rw_actors"); fmt.Sprint(got) != "[0]" {
		t.Fatalf("user rw_actors: %v", got)
	}
}
