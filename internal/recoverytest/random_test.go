package recoverytest

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

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// randomViews are the views the randomized test creates and drops: an
// aggregation, a join, a left join under an aggregation, a window and a
// top-N. Each is compared with its query evaluated by PostgreSQL.
var randomViews = []struct{ name, query string }{
	{"v_agg", "SELECT g, count(*) AS n, sum(v) AS s, min(v) AS mn, max(v) AS mx FROM a GROUP BY g"},
	{"v_join", "SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k"},
	{"v_ljagg", "SELECT a.g, count(b.k) AS nb, sum(b.w) AS sw FROM a LEFT JOIN b ON a.k = b.k GROUP BY a.g"},
	{"v_win", "SELECT k, g, v, sum(v) OVER (PARTITION BY g ORDER BY k) AS s, row_number() OVER (PARTITION BY g ORDER BY k) AS rn FROM a"},
	{"v_top", "SELECT k, v FROM a ORDER BY v DESC, k LIMIT 5"},
}

const randomSessions = 3

// randomModel is what has been acknowledged: the rows each session owns
// (keys are disjoint between sessions, so the order in which concurrent
// sessions' writes land does not matter) and the views that exist.
type randomModel struct {
	rows  [randomSessions]map[string]map[int][2]int // session -> table -> key -> (g, v)
	views map[string]bool
	next  [randomSessions]int // next fresh key per session
}

// op is one statement of a step, run on one session.
type op struct {
	session int
	sql     string
	kind    string // dml, create, drop, recover, flush, fail
	view    string
	// apply updates the model and PostgreSQL once the statement is
	// acknowledged.
	apply func()
	fail  stream.Failpoint
	err   error
	took  time.Duration
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// Seeded interleavings of DML, CREATE/DROP MATERIALIZED VIEW, RECOVER and
// injected actor failures from several sessions. Each interleaving is a
// few steps; in a step every session runs one statement and the
// statements run concurrently. DML runs with implicit_flush, so a
// statement that succeeded is durable and is applied to PostgreSQL too;
// one that failed with 40001 (rolled back by a recovery) or 55000 (table
// unavailable while recovering) is not acknowledged and not applied. After
// each interleaving every table and view must equal PostgreSQL's answer.
func TestRandomInterleavings(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	rounds := envInt("RUNNEL_RECOVERY_SEEDS", 100)
	base := int64(envInt("RUNNEL_RECOVERY_SEED", envInt("RUNNEL_TEST_SEED", int(time.Now().UnixNano()%1_000_000_000))))
	round := -1
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (failed in interleaving %d); replay the choices with RUNNEL_RECOVERY_SEED=%d RUNNEL_RECOVERY_SEEDS=%d (timing is not replayed)", base, round, base, round+1)
		}
	})
	pgURL := pgtest.NewDatabase(t)
	srv, in := startServer(t, func(c *server.Config) { c.BarrierInterval = 20 * time.Millisecond })
	pg := connectURL(t, pgURL)
	check := srv.Connect(t)
	var conns [randomSessions]*pgx.Conn
	for i := range conns {
		conns[i] = srv.Connect(t)
		mustExec(t, conns[i], "SET implicit_flush = true")
	}
	life := newLifecycle()
	life.install(t, in)
	m := &randomModel{views: map[string]bool{}}
	for _, ddl := range []string{
		"CREATE TABLE a (k INT PRIMARY KEY, g INT, v INT)",
		"CREATE TABLE b (k INT PRIMARY KEY, g INT, w INT)",
	} {
		mustExec(t, check, ddl)
		mustExec(t, pg, ddl)
	}
	rng := rand.New(rand.NewSource(base))
	for s := range randomSessions {
		m.rows[s] = map[string]map[int][2]int{"a": {}, "b": {}}
		m.next[s] = s * 1_000_000
		for range 10 {
			o := m.insert(rng, s)
			mustExec(t, conns[s], o.sql)
			mustExec(t, pg, o.sql)
			o.apply()
		}
	}
	for _, v := range randomViews[:2] {
		mustExec(t, check, "CREATE MATERIALIZED VIEW "+v.name+" AS "+v.query)
		m.views[v.name] = true
	}
	stats := map[string]int{}
	for round = 0; round < rounds; round++ {
		rng := rand.New(rand.NewSource(base + int64(round)))
		steps := 2 + rng.Intn(2)
		roundStart := time.Now()
		for step := range steps {
			ops := m.plan(rng)
			var wg sync.WaitGroup
			var disarm []func() int
			for _, o := range ops {
				if o.kind == "fail" {
					d := stream.ArmFailpoint(o.fail)
					disarm = append(disarm, d)
					t.Cleanup(func() { d() }) // if the step fails the test
					stats["fail"]++
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					o.err = execErr(conns[o.session], o.sql)
					o.took = time.Since(start)
				}()
			}
			wg.Wait()
			if os.Getenv("RUNNEL_RECOVERY_TRACE") != "" {
				t.Logf("interleaving %d step %d:%s", round, step, describe(ops))
			}
			for _, o := range ops {
				if o.kind == "fail" {
					continue
				}
				code := sqlstate(o.err)
				switch {
				case o.err == nil:
					stats[o.kind]++
					if o.kind == "dml" {
						if err := execErr(pg, o.sql); err != nil {
							t.Fatalf("interleaving %d step %d: PostgreSQL rejected %s, which Runnel acknowledged: %v", round, step, o.sql, err)
						}
					}
					if o.apply != nil {
						o.apply()
					}
				case (o.kind == "dml" || o.kind == "flush") && (code == "40001" || code == "55000" || code == "57014"):
					// Not acknowledged, and not applied: 40001 rolled back by
					// a recovery, 55000 the table was unavailable, 57014 the
					// table's actor was aborted while applying it (the
					// client did not cancel it; it should say 40001).
					stats[o.kind+" "+code]++
				case o.kind == "create" && code == "55000":
					// interrupted by a recovery, or an upstream was down
					stats["create interrupted"]++ // the view must not exist
				default:
					t.Fatalf("interleaving %d step %d, session %d: %s: %v\nsteps so far: %s", round, step, o.session, o.sql, o.err, describe(ops))
				}
			}
			for _, d := range disarm {
				d()
			}
		}
		if os.Getenv("RUNNEL_RECOVERY_TRACE") != "" {
			t.Logf("interleaving %d took %v", round, time.Since(roundStart))
		}
		m.compare(t, round, check, pg)
		life.check(t)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d interleavings (seed %d): %v; %d recoveries", rounds, base, stats, len(in.Epochs.Recoveries()))
}

func describe(ops []*op) string {
	var b strings.Builder
	for _, o := range ops {
		if o.kind == "fail" {
			fmt.Fprintf(&b, "\n  session %d armed failpoint %+v", o.session, o.fail)
			continue
		}
		fmt.Fprintf(&b, "\n  session %d %s: %s -> %v (%v)", o.session, o.kind, o.sql, o.err, o.took.Round(time.Millisecond))
	}
	return b.String()
}

func connectURL(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// plan chooses one step: a statement for some of the sessions. DDL on a
// view is given to at most one session per step, so that its outcome is
// determined by that statement alone.
func (m *randomModel) plan(rng *rand.Rand) []*op {
	var ops []*op
	claimed := map[string]bool{}
	recovered := false
	for s := range randomSessions {
		r := rng.Intn(100)
		switch {
		case r < 55:
			ops = append(ops, m.dml(rng, s))
		case r < 68:
			v := randomViews[rng.Intn(len(randomViews))]
			if claimed[v.name] {
				ops = append(ops, m.dml(rng, s))
				continue
			}
			claimed[v.name] = true
			if m.views[v.name] {
				name := v.name
				ops = append(ops, &op{session: s, kind: "drop", view: name, sql: "DROP MATERIALIZED VIEW " + name,
					apply: func() { delete(m.views, name) }})
			} else {
				name := v.name
				ops = append(ops, &op{session: s, kind: "create", view: name, sql: "CREATE MATERIALIZED VIEW " + name + " AS " + v.query,
					apply: func() { m.views[name] = true }})
			}
		case r < 76:
			if recovered {
				ops = append(ops, m.dml(rng, s))
				continue
			}
			recovered = true
			ops = append(ops, &op{session: s, kind: "recover", sql: "RECOVER"})
		case r < 85:
			jobs := []string{"table a", "table b"}
			for _, v := range randomViews {
				if m.views[v.name] {
					jobs = append(jobs, "materialized view "+v.name)
				}
			}
			ops = append(ops, &op{session: s, kind: "fail", fail: stream.Failpoint{Job: jobs[rng.Intn(len(jobs))], ChunksOnly: rng.Intn(2) == 0, Times: 1}})
			ops = append(ops, m.dml(rng, s))
		default:
			ops = append(ops, &op{session: s, kind: "flush", sql: "FLUSH"})
		}
	}
	return ops
}

// insert makes an INSERT of a fresh key of session s into a or b.
func (m *randomModel) insert(rng *rand.Rand, s int) *op {
	table := []string{"a", "b"}[rng.Intn(2)]
	k := m.next[s]
	m.next[s]++
	g, v := rng.Intn(4), rng.Intn(100)-20
	return &op{session: s, kind: "dml", sql: fmt.Sprintf("INSERT INTO %s VALUES (%d, %d, %d)", table, k, g, v),
		apply: func() { m.rows[s][table][k] = [2]int{g, v} }}
}

// dml makes one DML statement of session s on its own keys: an insert of
// fresh keys (one or three), or an update or delete of an existing key.
func (m *randomModel) dml(rng *rand.Rand, s int) *op {
	table := []string{"a", "b"}[rng.Intn(2)]
	col := map[string]string{"a": "v", "b": "w"}[table]
	keys := make([]int, 0, len(m.rows[s][table]))
	for k := range m.rows[s][table] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	r := rng.Intn(10)
	switch {
	case len(keys) == 0 || r < 3:
		return m.insert(rng, s)
	case r < 4:
		var vals []string
		rows := map[int][2]int{}
		for range 3 {
			k := m.next[s]
			m.next[s]++
			g, v := rng.Intn(4), rng.Intn(100)
			rows[k] = [2]int{g, v}
			vals = append(vals, fmt.Sprintf("(%d, %d, %d)", k, g, v))
		}
		return &op{session: s, kind: "dml", sql: fmt.Sprintf("INSERT INTO %s VALUES %s", table, strings.Join(vals, ", ")),
			apply: func() {
				for k, r := range rows {
					m.rows[s][table][k] = r
				}
			}}
	case r < 7:
		k := keys[rng.Intn(len(keys))]
		v := rng.Intn(100) - 20
		return &op{session: s, kind: "dml", sql: fmt.Sprintf("UPDATE %s SET %s = %d WHERE k = %d", table, col, v, k),
			apply: func() { r := m.rows[s][table][k]; m.rows[s][table][k] = [2]int{r[0], v} }}
	case r < 8:
		k := keys[rng.Intn(len(keys))]
		g := rng.Intn(4)
		return &op{session: s, kind: "dml", sql: fmt.Sprintf("UPDATE %s SET g = %d WHERE k = %d", table, g, k),
			apply: func() { r := m.rows[s][table][k]; m.rows[s][table][k] = [2]int{g, r[1]} }}
	default:
		k := keys[rng.Intn(len(keys))]
		return &op{session: s, kind: "dml", sql: fmt.Sprintf("DELETE FROM %s WHERE k = %d", table, k),
			apply: func() { delete(m.rows[s][table], k) }}
	}
}

// compare checks, after a FLUSH, that the tables hold exactly the
// acknowledged rows and that every view exists exactly when the model says
// and equals its query evaluated by PostgreSQL.
func (m *randomModel) compare(t *testing.T, round int, rw, pg *pgx.Conn) {
	t.Helper()
	if err := execErr(rw, "FLUSH"); err != nil {
		t.Fatalf("interleaving %d: FLUSH: %v", round, err)
	}
	for _, table := range []string{"a", "b"} {
		var want []string
		for s := range randomSessions {
			for k, r := range m.rows[s][table] {
				want = append(want, fmt.Sprintf("%d|%d|%d", k, r[0], r[1]))
			}
		}
		slices.Sort(want)
		got, err := queryText(rw, "SELECT * FROM "+table)
		if err != nil {
			t.Fatalf("interleaving %d: SELECT * FROM %s: %v", round, table, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("interleaving %d: table %s differs from the acknowledged writes: %s", round, table, diffRows(got, want))
		}
	}
	names, err := queryText(rw, "SELECT matviewname FROM pg_matviews")
	if err != nil {
		t.Fatalf("interleaving %d: list views: %v", round, err)
	}
	var want []string
	for name := range m.views {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("interleaving %d: views %v; want %v", round, names, want)
	}
	for _, v := range randomViews {
		if !m.views[v.name] {
			continue
		}
		got, err := queryText(rw, "SELECT * FROM "+v.name)
		if err != nil {
			t.Fatalf("interleaving %d: SELECT * FROM %s: %v", round, v.name, err)
		}
		exp, err := queryText(pg, v.query)
		if err != nil {
			t.Fatalf("interleaving %d: PostgreSQL: %s: %v", round, v.query, err)
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("interleaving %d: view %s differs from PostgreSQL: %s", round, v.name, diffRows(got, exp))
		}
	}
}
