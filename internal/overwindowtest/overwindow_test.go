package overwindowtest

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func startServer(t *testing.T) string {
	t.Helper()
	return servertest.Start(t).URL()
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	return servertest.Connect(t, url)
}

func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	servertest.Exec(t, conn, sql, pgx.QueryExecModeSimpleProtocol)
}

// query returns the rows as text (simple protocol), one string per row.
func query(t *testing.T, conn *pgx.Conn, sql string) []string {
	t.Helper()
	return servertest.QueryText(t, conn, sql)
}

func compare(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d: got %s; want %s (got %d rows, want %d)", what, i, got[i], want[i], len(got), len(want))
		}
	}
	t.Fatalf("%s: got %d rows; want %d", what, len(got), len(want))
}

// both runs a statement on Runnel and PostgreSQL.
func both(t *testing.T, rw, pg *pgx.Conn, sql string) {
	t.Helper()
	exec(t, rw, sql)
	exec(t, pg, sql)
}

const storyView = `SELECT p, o, v, SUM(v) OVER w AS s1, MAX(v) OVER w AS s4, AVG(v) OVER w AS s6
  FROM t WINDOW w AS (PARTITION BY p ORDER BY o)`

// TestDesignStory runs ARCHITECTURE.md's acceptance story (without the
// DROP/RECOVER race, which is the lead's) and checks the view against
// PostgreSQL after each step.
func TestDesignStory(t *testing.T) {
	pg := connect(t, pgtest.NewDatabase(t))
	rw := connect(t, startServer(t))
	both(t, rw, pg, `CREATE TABLE t (p INT, o INT, v INT, PRIMARY KEY (o))`)
	both(t, rw, pg, `INSERT INTO t SELECT 0, i, 0 FROM generate_series(100001, 110000) g(i)`)
	both(t, rw, pg, `INSERT INTO t SELECT 1, i, i FROM generate_series(1, 100) g(i)`)
	exec(t, rw, `CREATE MATERIALIZED VIEW mv AS `+storyView)
	exec(t, rw, `FLUSH`)
	check := func(step string) {
		t.Helper()
		compare(t, step+": p = 1 first rows", query(t, rw, `SELECT * FROM mv WHERE p = 1 ORDER BY o LIMIT 5`),
			query(t, pg, `SELECT * FROM (`+storyView+`) x WHERE p = 1 ORDER BY o LIMIT 5`))
		compare(t, step+": whole view", query(t, rw, `SELECT * FROM mv ORDER BY p, o`),
			query(t, pg, storyView+` ORDER BY p, o`))
	}
	check("after backfill")
	both(t, rw, pg, `UPDATE t SET p = 0, v = 0 WHERE o = 50`)
	exec(t, rw, `FLUSH`)
	check("after moving o = 50 to p = 0")
	both(t, rw, pg, `DELETE FROM t WHERE o IN (1, 100, 100001, 110000)`)
	both(t, rw, pg, `UPDATE t SET o = 0 WHERE o = 60`)
	both(t, rw, pg, `UPDATE t SET v = 7 WHERE o = 100500`)
	exec(t, rw, `FLUSH`)
	check("after edge deletes and updates")
}

func seed(t *testing.T) int64 {
	s := rand.Int63()
	if e := os.Getenv("RUNNEL_TEST_SEED"); e != "" {
		s, _ = strconv.ParseInt(e, 10, 64)
	}
	t.Logf("seed %d (rerun with RUNNEL_TEST_SEED=%d)", s, s)
	return s
}

// TestWindowViewsDifferential maintains views with several windows and
// functions under random DML and compares them with PostgreSQL after
// each FLUSH.
func TestWindowViewsDifferential(t *testing.T) {
	sd := seed(t)
	rng := rand.New(rand.NewSource(sd))
	pg := connect(t, pgtest.NewDatabase(t))
	rw := connect(t, startServer(t))
	both(t, rw, pg, `CREATE TABLE u (id INT PRIMARY KEY, p INT, o INT, v INT)`)
	both(t, rw, pg, `INSERT INTO u SELECT i, i % 5, (i * 7) % 50, i % 11 - 5 FROM generate_series(1, 300) g(i)`)
	views := map[string]string{
		"w1": `SELECT id, p, o, v,
		  row_number() OVER (PARTITION BY p ORDER BY o, id) AS rn,
		  rank() OVER (PARTITION BY p ORDER BY o) AS rk,
		  dense_rank() OVER (PARTITION BY p ORDER BY o) AS drk,
		  lag(v) OVER (PARTITION BY p ORDER BY o, id) AS lg,
		  lead(v, 2, -1) OVER (PARTITION BY p ORDER BY o, id) AS ld,
		  sum(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s3
		  FROM u`,
		"w2": `SELECT id, p, o, v,
		  count(*) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 3 PRECEDING AND 2 FOLLOWING) AS c,
		  max(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW) AS mx,
		  first_value(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING) AS fv,
		  sum(v) OVER () AS total,
		  avg(v) OVER (ORDER BY o, id ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS a
		  FROM u`,
		"w3": `SELECT id, p, o, v,
		  sum(v) OVER (PARTITION BY p ORDER BY o DESC) AS s,
		  min(v) OVER (PARTITION BY v % 3 ORDER BY o, id ROWS 1 PRECEDING) AS mn,
		  cume_dist() OVER (PARTITION BY p ORDER BY o) AS cd,
		  ntile(3) OVER (PARTITION BY p ORDER BY o, id) AS nt,
		  bool_and(v > -3) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS ba
		  FROM u`,
	}
	names := []string{"w1", "w2", "w3"}
	for _, name := range names {
		exec(t, rw, `CREATE MATERIALIZED VIEW `+name+` AS `+views[name])
	}
	check := func(step int) {
		t.Helper()
		exec(t, rw, `FLUSH`)
		for _, name := range names {
			compare(t, fmt.Sprintf("seed %d step %d view %s", sd, step, name),
				query(t, rw, `SELECT * FROM `+name+` ORDER BY id`),
				query(t, pg, views[name]+` ORDER BY id`))
		}
	}
	check(0)
	nextID := 1000
	for step := 1; step <= 6; step++ {
		for i := 0; i < 5; i++ {
			switch rng.Intn(5) {
			case 0:
				nextID++
				both(t, rw, pg, fmt.Sprintf(`INSERT INTO u VALUES (%d, %d, %d, %d)`, nextID, rng.Intn(6), rng.Intn(50), rng.Intn(11)-5))
			case 1:
				both(t, rw, pg, fmt.Sprintf(`DELETE FROM u WHERE id %% 37 = %d`, rng.Intn(37)))
			case 2:
				both(t, rw, pg, fmt.Sprintf(`UPDATE u SET p = (p + 1) %% 6 WHERE id %% 29 = %d`, rng.Intn(29)))
			case 3:
				both(t, rw, pg, fmt.Sprintf(`UPDATE u SET o = %d WHERE id %% 23 = %d`, rng.Intn(50), rng.Intn(23)))
			case 4:
				both(t, rw, pg, fmt.Sprintf(`UPDATE u SET v = v + 1 WHERE id %% 13 = %d`, rng.Intn(13)))
			}
		}
		check(step)
	}
}
