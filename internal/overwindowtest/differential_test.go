package overwindowtest

import (
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// The differential views cover every window function and every frame
// shape the executor maintains. Each is created once per cache policy
// (over_window_cache_policy full and recent) over the same table, so one
// random DML stream checks both.
//
// Determinism: PostgreSQL leaves the order of peers open, so functions
// that see row order (row_number, ntile, lag/lead, first/last/nth_value,
// ROWS frames) order by (o, id); RANGE and GROUPS frames order by o alone
// and carry aggregates, or value functions of the order key itself.
//
// "ranking" also has lag with an offset that varies per row (every change
// recomputes the partition) and "default" an aggregate with FILTER.
//
// "bounded" holds only calls whose reach is bounded (ROWS / GROUPS
// offsets, lag/lead with constant offsets): under the recent policy its
// executors load a bounded range of rows around each change instead of
// the whole partition.
var diffViews = []struct{ name, query string }{
	{"bounded", `SELECT id, p, o, v,
	  sum(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s_rows,
	  max(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS mx_rows,
	  avg(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 2 FOLLOWING AND 4 FOLLOWING) AS a_rows,
	  count(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) AS c_rows,
	  bool_or(v > 2) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE CURRENT ROW) AS bo_rows,
	  lag(v) OVER (PARTITION BY p ORDER BY o, id) AS lg1,
	  lag(v, 3, 0) OVER (PARTITION BY p ORDER BY o, id) AS lg3,
	  lead(v, 2, -1) OVER (PARTITION BY p ORDER BY o, id) AS ld2,
	  first_value(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING) AS fv_rows,
	  nth_value(v, 2) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING) AS nv_rows,
	  last_value(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING) AS lv_rows,
	  sum(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP) AS s_groups,
	  count(*) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 2 PRECEDING AND CURRENT ROW EXCLUDE TIES) AS c_groups,
	  min(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN CURRENT ROW AND 1 FOLLOWING EXCLUDE CURRENT ROW) AS mn_groups,
	  bool_and(v > -4) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 1 FOLLOWING AND 2 FOLLOWING EXCLUDE NO OTHERS) AS ba_groups
	  FROM w`},
	{"ranking", `SELECT id, p, o, v,
	  row_number() OVER (PARTITION BY p ORDER BY o, id) AS rn,
	  rank() OVER wo AS rk,
	  dense_rank() OVER wo AS drk,
	  percent_rank() OVER wo AS prk,
	  cume_dist() OVER wo AS cd,
	  ntile(3) OVER (PARTITION BY p ORDER BY o, id) AS nt3,
	  ntile(5) OVER (ORDER BY o, id) AS nt_all,
	  rank() OVER (PARTITION BY p ORDER BY o DESC) AS rk_desc,
	  row_number() OVER (ORDER BY o DESC, id) AS rn_all,
	  lag(v, id % 3 + 1, 0) OVER (PARTITION BY p ORDER BY o, id) AS lg_var
	  FROM w WINDOW wo AS (PARTITION BY p ORDER BY o)`},
	{"range", `SELECT id, p, o, v, ts, x,
	  sum(v) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 3 PRECEDING AND 2 FOLLOWING) AS s_r,
	  count(*) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 1 FOLLOWING AND 3 FOLLOWING EXCLUDE CURRENT ROW) AS c_r,
	  max(v) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING) AS mx_r,
	  avg(v) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 2 FOLLOWING AND UNBOUNDED FOLLOWING EXCLUDE GROUP) AS a_r,
	  first_value(o) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 5 PRECEDING AND 1 PRECEDING) AS fv_r,
	  bool_and(v > 0) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN CURRENT ROW AND 4 FOLLOWING EXCLUDE TIES) AS ba_r,
	  sum(v) OVER (PARTITION BY p ORDER BY o DESC RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) AS s_r_desc,
	  count(v) OVER (PARTITION BY p ORDER BY ts RANGE BETWEEN INTERVAL '90 minutes' PRECEDING AND INTERVAL '1 hour' FOLLOWING) AS c_ts,
	  last_value(ts) OVER (PARTITION BY p ORDER BY ts RANGE BETWEEN CURRENT ROW AND INTERVAL '2 hours' FOLLOWING) AS lv_ts,
	  min(v) OVER (PARTITION BY p ORDER BY ts DESC RANGE BETWEEN INTERVAL '1 hour' PRECEDING AND INTERVAL '20 minutes' PRECEDING) AS mn_ts_desc,
	  sum(v) OVER (PARTITION BY p ORDER BY x RANGE BETWEEN 1.5 PRECEDING AND 0.5 FOLLOWING) AS s_x
	  FROM w`},
	{"default", `SELECT id, p, o, v,
	  sum(v) OVER wp AS s, max(v) OVER wp AS mx, min(v) OVER wp AS mn, avg(v) OVER wp AS a,
	  count(*) OVER wp AS c, bool_or(v < 0) OVER wp AS bo,
	  sum(v) OVER (wp ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS s_rest,
	  count(v) OVER (PARTITION BY p) AS c_part,
	  sum(v) OVER () AS total,
	  avg(v) OVER (ORDER BY o, id ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS a_all,
	  last_value(v) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS lv,
	  nth_value(v, 3) OVER (PARTITION BY p ORDER BY o, id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS nv,
	  first_value(v) OVER (PARTITION BY p ORDER BY o, id) AS fv,
	  sum(v) FILTER (WHERE v > 0) OVER (wp ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS s_pos
	  FROM w WINDOW wp AS (PARTITION BY p ORDER BY o)`},
}

var diffPolicies = []string{"full", "recent"}

// owDiffSteps is the number of DML rounds (each ending in a FLUSH and a
// comparison of every view); RUNNEL_OW_DIFF_STEPS raises it.
func owDiffSteps(def int) int {
	if s := os.Getenv("RUNNEL_OW_DIFF_STEPS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// diffGen makes the random data: one huge partition (p = 0, half the
// rows) and many tiny ones (p = 1..40); o has ties and NULLs; ts and x
// follow o with some jitter (RANGE offsets over timestamps and numerics).
type diffGen struct {
	rng    *rand.Rand
	nextID int
}

func (g *diffGen) part() int {
	if g.rng.Intn(2) == 0 {
		return 0
	}
	return 1 + g.rng.Intn(40)
}

// orderCols returns o, ts and x for a row (SQL literals).
func (g *diffGen) orderCols() (string, string, string) {
	if g.rng.Intn(20) == 0 {
		return "NULL", "NULL", "NULL"
	}
	o := g.rng.Intn(60)
	min := o*20 + g.rng.Intn(3)*5 // minutes from 2024-01-01
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(min) * time.Minute)
	x := fmt.Sprintf("%d.%d", o/2, g.rng.Intn(10))
	return strconv.Itoa(o), "'" + ts.Format("2006-01-02 15:04:05") + "'", x
}

func (g *diffGen) value() string {
	if g.rng.Intn(20) == 0 {
		return "NULL"
	}
	return strconv.Itoa(g.rng.Intn(11) - 5)
}

func (g *diffGen) insert() string {
	g.nextID++
	o, ts, x := g.orderCols()
	return fmt.Sprintf("INSERT INTO w VALUES (%d, %d, %s, %s, %s, %s, 0)", g.nextID, g.part(), o, ts, x, g.value())
}

// TestWindowDifferentialPolicies: every window function and frame, under
// every cache policy, against PostgreSQL after every FLUSH, over random
// DML that inserts, deletes at partition edges and elsewhere, moves rows
// between partitions, changes order keys and values, and updates a column
// no window reads.
func TestWindowDifferentialPolicies(t *testing.T) {
	sd := seed(t)
	rng := rand.New(rand.NewSource(sd))
	pg := connect(t, pgtest.NewDatabase(t))
	rw := connect(t, startServer(t))
	var history []string
	run := func(sql string) {
		t.Helper()
		history = append(history, sql)
		both(t, rw, pg, sql)
	}
	run(`CREATE TABLE w (id INT PRIMARY KEY, p INT, o INT, ts TIMESTAMP, x NUMERIC(6,1), v INT, u INT)`)
	g := &diffGen{rng: rng}
	var rows []string
	for i := 0; i < 300; i++ {
		rows = append(rows, strings.TrimPrefix(g.insert(), "INSERT INTO w VALUES "))
	}
	run(`INSERT INTO w VALUES ` + strings.Join(rows, ", "))
	type view struct{ name, query string }
	var views []view
	for _, pol := range diffPolicies {
		exec(t, rw, `SET over_window_cache_policy = '`+pol+`'`)
		for _, v := range diffViews {
			name := v.name + "_" + pol
			exec(t, rw, `CREATE MATERIALIZED VIEW `+name+` AS `+v.query)
			views = append(views, view{name, v.query})
		}
	}
	exec(t, rw, `SET over_window_cache_policy = 'full'`)
	check := func(step int) {
		t.Helper()
		exec(t, rw, `FLUSH`)
		for _, v := range views {
			got := query(t, rw, `SELECT * FROM `+v.name+` ORDER BY id`)
			want := query(t, pg, v.query+` ORDER BY id`)
			if !slices.Equal(got, want) {
				from := max(0, len(history)-30)
				t.Logf("last statements:\n  %s", strings.Join(history[from:], "\n  "))
				compare(t, fmt.Sprintf("seed %d step %d view %s", sd, step, v.name), got, want)
			}
		}
	}
	check(0)
	// ids currently in the table, from PostgreSQL (the oracle)
	ids := func() []int {
		var out []int
		for _, s := range query(t, pg, `SELECT id FROM w ORDER BY id`) {
			n, _ := strconv.Atoi(s)
			out = append(out, n)
		}
		return out
	}
	pick := func() (int, bool) {
		all := ids()
		if len(all) == 0 {
			return 0, false
		}
		return all[rng.Intn(len(all))], true
	}
	steps := owDiffSteps(6)
	for step := 1; step <= steps; step++ {
		for i := 0; i < 8; i++ {
			switch op := rng.Intn(10); op {
			case 0, 1:
				run(g.insert())
			case 2: // delete at a partition edge (first or last row in o order)
				p := g.part()
				dir := []string{"ASC", "DESC"}[rng.Intn(2)]
				edge := query(t, pg, fmt.Sprintf(`SELECT id FROM w WHERE p = %d ORDER BY o %s, id %s LIMIT 1`, p, dir, dir))
				if len(edge) == 1 {
					run(`DELETE FROM w WHERE id = ` + edge[0])
				}
			case 3: // a scattered delete
				run(fmt.Sprintf(`DELETE FROM w WHERE id %% 41 = %d`, rng.Intn(41)))
			case 4: // move rows between partitions (into or out of the huge one)
				if id, ok := pick(); ok {
					run(fmt.Sprintf(`UPDATE w SET p = %d, v = %s WHERE id = %d`, g.part(), g.value(), id))
				}
				run(fmt.Sprintf(`UPDATE w SET p = (p + 7) %% 41 WHERE id %% 53 = %d`, rng.Intn(53)))
			case 5: // order key changes
				if id, ok := pick(); ok {
					o, ts, x := g.orderCols()
					run(fmt.Sprintf(`UPDATE w SET o = %s, ts = %s, x = %s WHERE id = %d`, o, ts, x, id))
				}
			case 6: // values only
				run(fmt.Sprintf(`UPDATE w SET v = %s WHERE id %% 17 = %d`, g.value(), rng.Intn(17)))
			case 7: // a column no window reads
				run(fmt.Sprintf(`UPDATE w SET u = u + 1 WHERE id %% 7 = %d`, rng.Intn(7)))
			case 8: // a burst of inserts into one tiny partition
				p := 1 + rng.Intn(40)
				for k := 0; k < 3; k++ {
					g.nextID++
					o, ts, x := g.orderCols()
					run(fmt.Sprintf("INSERT INTO w VALUES (%d, %d, %s, %s, %s, %s, 0)", g.nextID, p, o, ts, x, g.value()))
				}
			case 9: // empty a tiny partition
				run(fmt.Sprintf(`DELETE FROM w WHERE p = %d`, 1+rng.Intn(40)))
			}
		}
		check(step)
	}
}
