package server

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/stream/exec"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/wiretest"
)

// TestIndexDifferential: indexes (CREATE INDEX) on a table and on a
// materialized view are maintained through random inserts, updates that
// move rows between index keys, and deletes, across a RECOVER and a
// restart; every query that EXPLAIN shows reading an index (equality on a
// key prefix, a range on the next column, covering and not) returns what
// PostgreSQL returns for the same statements. Seeded: RUNNEL_TEST_SEED
// replays a run, the seed is printed on failure.
func TestIndexDifferential(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays it)", seed, seed)
		}
	}()

	dir := t.TempDir()
	ts := startTestServer(t, dir)
	rw := ts.connect(t)
	pg := wiretest.Connect(t, pgtest.NewDatabase(t))
	both := func(sql string) {
		t.Helper()
		mustExec(t, rw, sql)
		mustExec(t, pg, sql)
	}
	mustExec(t, rw, "SET implicit_flush = true")
	both("CREATE TABLE t (id INT PRIMARY KEY, a INT, b TEXT, c BIGINT, d INT)")
	nextID := 0
	randRow := func() string {
		nextID++
		val := func(s string) string {
			if rng.Intn(10) == 0 {
				return "NULL"
			}
			return s
		}
		return fmt.Sprintf("(%d, %s, %s, %s, %s)", nextID, val(strconv.Itoa(rng.Intn(20))),
			val(fmt.Sprintf("'s%d'", rng.Intn(15))), val(strconv.Itoa(rng.Intn(200)-50)), val(strconv.Itoa(rng.Intn(1000))))
	}
	insert := func(n int) {
		rows := make([]string, n)
		for i := range rows {
			rows[i] = randRow()
		}
		both("INSERT INTO t VALUES " + strings.Join(rows, ", "))
	}
	insert(300) // backfilled by the indexes created next
	mustExec(t, rw, "CREATE MATERIALIZED VIEW m AS SELECT a, count(*) AS n, sum(c) AS s FROM t GROUP BY a")
	mustExec(t, pg, "CREATE VIEW m AS SELECT a, count(*) AS n, sum(c) AS s FROM t GROUP BY a")
	both("CREATE INDEX ia ON t (a)")                      // covering (RisingWave's default)
	both("CREATE INDEX ibc ON t (b DESC, c) INCLUDE (d)") // not covering: rows are fetched by primary key
	both("CREATE INDEX ic ON t (c DESC)")
	mustExec(t, rw, "CREATE INDEX mn ON m (n DESC, s)")

	type shape struct {
		index string
		query func() string
	}
	ival := func(n, off int) string { return strconv.Itoa(rng.Intn(n) + off) }
	shapes := []shape{
		{"ia", func() string { return "SELECT * FROM t WHERE a = " + ival(22, -1) }},
		{"ia", func() string {
			return fmt.Sprintf("SELECT id, b FROM t WHERE a >= %s AND a < %s", ival(22, -1), ival(22, -1))
		}},
		{"ibc", func() string { return fmt.Sprintf("SELECT * FROM t WHERE b = 's%d'", rng.Intn(16)) }},
		{"ibc", func() string {
			return fmt.Sprintf("SELECT id, c, d FROM t WHERE b = 's%d' AND c BETWEEN %s AND %s", rng.Intn(16), ival(220, -60), ival(220, -60))
		}},
		{"ibc", func() string { return fmt.Sprintf("SELECT id FROM t WHERE b > 's%d'", rng.Intn(16)) }},
		{"ic", func() string { return "SELECT id, c FROM t WHERE c < " + ival(220, -60) }},
		{"ic", func() string {
			return fmt.Sprintf("SELECT * FROM t WHERE c > %s AND d > %s", ival(220, -60), ival(1000, 0))
		}},
		{"mn", func() string { return "SELECT a, n, s FROM m WHERE n = " + ival(30, 0) }},
		{"mn", func() string {
			return fmt.Sprintf("SELECT a, n, s FROM m WHERE n = %s AND s <= %s", ival(30, 0), ival(2000, -200))
		}},
		{"mn", func() string { return "SELECT a FROM m WHERE n >= " + ival(30, 0) }},
	}
	check := func(round int) {
		t.Helper()
		for _, sh := range shapes {
			for range 3 {
				q := sh.query()
				plan := strings.Join(queryStrings(t, rw, "EXPLAIN "+q), "\n")
				if !strings.Contains(plan, "IndexScan") || !strings.Contains(plan, "using "+sh.index) {
					t.Fatalf("round %d: %s does not read index %s:\n%s", round, q, sh.index, plan)
				}
				got := sortedRows(t, rw, q)
				want := sortedRows(t, pg, q)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("round %d: %s\nrunnel (%d rows): %v\npostgres (%d rows): %v", round, q, len(got), got, len(want), want)
				}
			}
		}
	}
	check(0)
	for round := 1; round <= 12; round++ {
		insert(20 + rng.Intn(40))
		for range 10 {
			switch rng.Intn(5) {
			case 0:
				both(fmt.Sprintf("UPDATE t SET a = %d WHERE id %% 17 = %d", rng.Intn(20), rng.Intn(17)))
			case 1:
				both(fmt.Sprintf("UPDATE t SET b = 's%d', c = c + %d WHERE a = %d", rng.Intn(15), rng.Intn(50), rng.Intn(20)))
			case 2:
				both(fmt.Sprintf("UPDATE t SET c = NULL WHERE id = %d", rng.Intn(nextID)+1))
			case 3:
				both(fmt.Sprintf("DELETE FROM t WHERE id %% 23 = %d AND d < %d", rng.Intn(23), rng.Intn(1000)))
			case 4:
				both(fmt.Sprintf("DELETE FROM t WHERE b = 's%d' AND a = %d", rng.Intn(15), rng.Intn(20)))
			}
		}
		switch round {
		case 4:
			mustExec(t, rw, "RECOVER")
		case 8:
			// The indexes are jobs rebuilt from the catalog after a
			// restart, over the state they had committed (I7).
			rw.Close(context.Background())
			ts.stop()
			ts = startTestServer(t, dir)
			rw = ts.connect(t)
			mustExec(t, rw, "SET implicit_flush = true")
		}
		check(round)
	}
}

// sortedRows runs q and returns its rows in text form, sorted.
func sortedRows(t *testing.T, conn *pgx.Conn, q string) []string {
	t.Helper()
	rows := wiretest.QueryText(t, conn, q)
	slices.Sort(rows)
	return rows
}

// TestIndexPsql: psql's \di lists an index with its table, and \d t lists
// it under Indexes: with its definition, as for PostgreSQL.
func TestIndexPsql(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, a INT, b TEXT)")
	mustExec(t, conn, "CREATE INDEX ia ON t (a DESC) INCLUDE (b)")
	mustExec(t, conn, "CREATE INDEX ON t (b)")
	out := runPsql(t, ts, `\di`)
	wantLines(t, `\di`, out,
		" public | ia      | index | root  | t",
		" public | t_b_idx | index | root  | t",
		" public | t_pkey  | index | root  | t")
	out = runPsql(t, ts, `\d t`)
	wantLines(t, `\d t`, out,
		"Indexes:",
		`    "t_pkey" PRIMARY KEY, btree (id)`,
		`    "ia" btree (a DESC) INCLUDE (b)`,
		`    "t_b_idx" btree (b)`)
}

// TestIndexBackfillProgress: an index's backfill is a job SHOW JOBS
// reports while it runs (held by a test hook after its first batch);
// meanwhile no query plans to read the unfinished index, and writes are
// accepted; once created, the index holds the old rows and those written
// during its backfill.
func TestIndexBackfillProgress(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = true")
	mustExec(t, conn, "CREATE TABLE big (k INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO big SELECT g, g % 7 FROM generate_series(1, 3000) g")
	held := make(chan int64, 1)
	release := make(chan struct{})
	remove := exec.SetBackfillHook(func(ctx context.Context, executor string, rows int64) {
		if !strings.Contains(executor, "index iv ") {
			return
		}
		select {
		case held <- rows:
		default:
			return // held once
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	t.Cleanup(remove)
	var once sync.Once
	unhold := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unhold)
	created := make(chan error, 1)
	conn2 := ts.connect(t)
	go func() {
		_, err := conn2.Exec(context.Background(), "CREATE INDEX iv ON big (v)")
		created <- err
	}()
	var rows int64
	select {
	case rows = <-held:
	case err := <-created:
		t.Fatalf("CREATE INDEX finished before its backfill was held: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the index's backfill never reached the hook")
	}
	want := fmt.Sprintf("CREATE INDEX iv|%d rows backfilled, 0/1 upstream actors done", rows)
	if jobs := queryStrings(t, conn, "SHOW JOBS"); len(jobs) != 1 || !strings.Contains(jobs[0], want) {
		t.Fatalf("SHOW JOBS = %q; want one job containing %q", jobs, want)
	}
	// Writes are accepted meanwhile (their epoch commits once the
	// backfill passes the barrier).
	mustExec(t, conn, "SET implicit_flush = false")
	mustExec(t, conn, "INSERT INTO big VALUES (5000, 3), (5001, 3)")
	mustExec(t, conn, "UPDATE big SET v = 3 WHERE k = 1")
	plan := strings.Join(queryStrings(t, conn, "EXPLAIN SELECT k FROM big WHERE v = 3"), "\n")
	if strings.Contains(plan, "IndexScan") {
		t.Fatalf("a query reads the index being created:\n%s", plan)
	}
	unhold()
	if err := <-created; err != nil {
		t.Fatalf("CREATE INDEX: %v", err)
	}
	mustExec(t, conn, "FLUSH")
	plan = strings.Join(queryStrings(t, conn, "EXPLAIN SELECT k FROM big WHERE v = 3"), "\n")
	if !strings.Contains(plan, "IndexScan big using iv") {
		t.Fatalf("the created index is not read:\n%s", plan)
	}
	if got := queryStrings(t, conn, "SELECT count(*), sum(k)::bigint FROM big WHERE v = 3"); fmt.Sprint(got) != "[432|653931]" { // k % 7 = 3 in 1..3000, 5000, 5001 and 1
		t.Fatalf("through the index: %v", got)
	}
}

// TestIndexPreparedStatements: a statement prepared (pgx caches it) while
// an index exists is planned again once the index is dropped or created:
// it never reads a dropped index's state (I4 would fail it) and it starts
// reading a new one.
func TestIndexPreparedStatements(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = true")
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, a INT)")
	mustExec(t, conn, "INSERT INTO t SELECT g, g % 5 FROM generate_series(1, 100) g")
	mustExec(t, conn, "CREATE INDEX ia ON t (a)")
	const q = "SELECT count(*) FROM t WHERE a = $1"
	for _, step := range []string{"", "DROP INDEX ia", "CREATE INDEX ia ON t (a)", "DROP TABLE t", "CREATE TABLE t (id INT PRIMARY KEY, a INT)"} {
		if step != "" {
			mustExec(t, conn, step)
		}
		want := "[20]"
		if strings.HasPrefix(step, "CREATE TABLE") {
			want = "[0]"
		}
		if step == "DROP TABLE t" {
			if _, err := conn.Exec(context.Background(), q, 2); err == nil || !strings.Contains(err.Error(), "42P01") {
				t.Fatalf("after %s: %v; want 42P01", step, err)
			}
			continue
		}
		if got := queryStrings(t, conn, q, 2); fmt.Sprint(got) != want {
			t.Fatalf("after %q: %v; want %s", step, got, want)
		}
	}
}
