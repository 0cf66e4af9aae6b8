package crashtest

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestMain is pgtest.Main plus the removal of the shared build.
func TestMain(m *testing.M) {
	code := m.Run()
	if sharedBuild.dir != "" {
		os.RemoveAll(sharedBuild.dir)
	}
	if err := pgtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

const (
	numWriters = 3
	// defaultIters keeps the default run near a minute on a shared 2-core
	// machine (one iteration: restart + recovery, ~1 s of load, checks).
	defaultIters = 20
	// readyLimit bounds a start or a recovery.
	readyLimit = 60 * time.Second
)

var schema = []string{
	"CREATE TABLE acct (id BIGINT PRIMARY KEY, grp INT, amount BIGINT, writer INT)",
	"CREATE TABLE ev (id BIGINT PRIMARY KEY, acct_id BIGINT, qty INT)",
}

// views are the materialized views under test, by name, with their query.
var views = []struct{ name, query string }{
	{"mv_agg", "SELECT grp, count(*) AS n, sum(amount) AS total, min(amount) AS lo, max(amount) AS hi, count(DISTINCT writer) AS writers FROM acct GROUP BY grp"},
	{"mv_join", "SELECT e.id AS eid, a.id AS aid, a.grp, e.qty, a.amount FROM ev e JOIN acct a ON e.acct_id = a.id"},
	{"mv_left_agg", "SELECT a.grp, count(*) AS n, count(e.id) AS events, sum(e.qty) AS qty FROM acct a LEFT JOIN ev e ON e.acct_id = a.id GROUP BY a.grp"},
}

func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// crashRun is the state carried across the restarts of one test.
type crashRun struct {
	t       *testing.T
	bin     string
	dataDir string
	logPath string
	rng     *rand.Rand
	writers []*writer
	cur     *proc   // the server started last
	procs   []*proc // every server started, killed at cleanup
}

// start starts a server on the run's data directory.
func (r *crashRun) start() *proc {
	p := startRunnel(r.t, r.bin, r.dataDir, r.logPath)
	r.cur = p
	r.procs = append(r.procs, p)
	return p
}

// newCrashRun prepares a run: the binary, a data directory and log, the
// seeded writers, and a cleanup that keeps the log of a failed run and
// kills every process still running.
func newCrashRun(t *testing.T, seed int64) *crashRun {
	r := &crashRun{t: t, bin: buildRunnel(t), rng: rand.New(rand.NewSource(seed))}
	work := t.TempDir()
	r.dataDir = filepath.Join(work, "data")
	r.logPath = filepath.Join(work, "runnel.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (tail of %s):\n%s", r.logPath, tail(r.logPath))
			t.Logf("whole server log (goroutine dump at the end if it was still running): %s", keepLog(r.cur, r.logPath, seed))
		}
		for _, p := range r.procs {
			p.signal(syscall.SIGKILL)
		}
	})
	for i := range numWriters {
		r.writers = append(r.writers, newWriter(i, seed+int64(i)+1))
	}
	return r
}

func TestSIGKILLUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: skipped with -short")
	}
	seed := envInt(t, "RUNNEL_CRASH_SEED", time.Now().UnixNano())
	iters := int(envInt(t, "RUNNEL_CRASH_ITERS", defaultIters))
	t.Logf("seed %d (RUNNEL_CRASH_SEED=%d replays the choices), %d iterations", seed, seed, iters)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d", seed)
		}
	})

	r := newCrashRun(t, seed)

	p := r.start()
	p.waitReady(t, readyLimit)
	r.setup(p)

	start := time.Now()
	for i := range iters {
		iterStart := time.Now()
		what := r.crashOnce(p)
		p = r.start()
		p.waitReady(t, readyLimit)
		nAcct, nEv := r.verify(p)
		t.Logf("iteration %d: %s; recovered and verified (%d acct, %d ev rows) in %v", i, what, nAcct, nEv, time.Since(iterStart).Round(time.Millisecond))
		if t.Failed() {
			return
		}
	}
	t.Logf("%d SIGKILL iterations in %v", iters, time.Since(start).Round(time.Millisecond))

	// Clean stop under load: SIGTERM must exit 0 and lose nothing
	// acknowledged.
	r.load(p, 300*time.Millisecond+time.Duration(r.rng.Int63n(int64(700*time.Millisecond))), syscall.SIGTERM)
	if err := exitedCleanly(p.WaitErr()); err != nil {
		t.Errorf("SIGTERM under load: %v", err)
	}
	p = r.start()
	p.waitReady(t, readyLimit)
	nAcct, nEv := r.verify(p)
	t.Logf("SIGTERM under load: exited cleanly, recovered and verified (%d acct, %d ev rows)", nAcct, nEv)

	// Stop cleanly once more (idle), then the offline storage check.
	if err := exitedCleanly(p.signal(syscall.SIGTERM)); err != nil {
		t.Errorf("SIGTERM when idle: %v", err)
	}
	out, err := exec.Command(r.bin, "ctl", "storage", "check", "--data-dir", r.dataDir).CombinedOutput()
	if err != nil {
		t.Errorf("runnel ctl storage check: %v\n%s", err, out)
	} else {
		t.Logf("storage check: %s", strings.TrimSpace(string(out)))
	}
	acked := 0
	for _, w := range r.writers {
		acked += w.acked
	}
	t.Logf("%d statements acknowledged in all", acked)
}

func (r *crashRun) setup(p *proc) {
	t := r.t
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.url())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range schema {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, v := range views {
		s := fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", v.name, v.query)
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// crashOnce kills the server at a random instant: usually under load,
// sometimes during its startup and recovery (before it is ready).
func (r *crashRun) crashOnce(p *proc) string {
	if r.rng.Intn(8) == 0 {
		// Kill while the previous incarnation's restart is recovering:
		// start a new process and kill it before or just after it is
		// ready, with no load.
		p.signal(syscall.SIGTERM)
		q := r.start()
		d := time.Duration(r.rng.Int63n(int64(400 * time.Millisecond)))
		time.Sleep(d)
		q.signal(syscall.SIGKILL)
		return fmt.Sprintf("SIGKILL %v after a restart (no load)", d)
	}
	d := 200*time.Millisecond + time.Duration(r.rng.Int63n(int64(1200*time.Millisecond)))
	acked := r.load(p, d, syscall.SIGKILL)
	return fmt.Sprintf("SIGKILL after %v of load (%d statements acknowledged)", d, acked)
}

// load runs every writer against p for d, then marks the server as dying,
// sends sig and waits for it to exit and for the writers to stop. It
// returns the number of statements acknowledged meanwhile.
func (r *crashRun) load(p *proc, d time.Duration, sig syscall.Signal) int {
	var stop, dying atomic.Bool
	before := 0
	for _, w := range r.writers {
		before += w.acked
	}
	var wg sync.WaitGroup
	for _, w := range r.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(r.t, p.url(), &stop, &dying)
		}()
	}
	time.Sleep(d)
	dying.Store(true)
	p.signal(sig)
	stop.Store(true)
	wg.Wait()
	after := 0
	for _, w := range r.writers {
		after += w.acked
	}
	return after - before
}

// verify checks the recovered server against the writers' models and
// every view against its query, on Runnel and on a real PostgreSQL loaded
// with the recovered rows. It returns the number of rows of acct and ev.
func (r *crashRun) verify(p *proc) (nAcct, nEv int) {
	t := r.t
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.url())
	if err != nil {
		t.Fatalf("connect after recovery: %v", err)
	}
	defer conn.Close(ctx)
	// Nothing is being written; FLUSH makes sure no epoch is pending.
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatalf("FLUSH after recovery: %v", err)
	}
	acct, ev := r.readTables(conn)
	for _, w := range r.writers {
		w.resolve(t, acct, ev)
		w.compareModel(t, acct, ev)
	}
	for k := range acct {
		if k < 0 || k >= int64(len(r.writers))*keySpan {
			t.Errorf("acct row %d belongs to no writer", k)
		}
	}
	for k := range ev {
		if k < 0 || k >= int64(len(r.writers))*keySpan {
			t.Errorf("ev row %d belongs to no writer", k)
		}
	}
	for _, v := range views {
		got := queryText(t, conn, "SELECT * FROM "+v.name)
		want := queryText(t, conn, v.query)
		if d := diffRows(got, want); d != "" {
			t.Errorf("view %s differs from its query evaluated by Runnel over the recovered tables:\n%s", v.name, d)
		}
	}
	r.verifyOnPostgres(conn, acct, ev)
	return len(acct), len(ev)
}

func (r *crashRun) readTables(conn *pgx.Conn) (map[int64]acctRow, map[int64]evRow) {
	t := r.t
	ctx := context.Background()
	acct := map[int64]acctRow{}
	rows, err := conn.Query(ctx, "SELECT id, grp, amount, writer FROM acct")
	if err != nil {
		t.Fatalf("read acct: %v", err)
	}
	for rows.Next() {
		var id, amount int64
		var grp, wr int
		if err := rows.Scan(&id, &grp, &amount, &wr); err != nil {
			t.Fatalf("read acct: %v", err)
		}
		if _, dup := acct[id]; dup {
			t.Errorf("acct: primary key %d appears twice", id)
		}
		if int64(wr) != id/keySpan {
			t.Errorf("acct row %d has writer %d", id, wr)
		}
		acct[id] = acctRow{grp: grp, amount: amount}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read acct: %v", err)
	}
	ev := map[int64]evRow{}
	rows, err = conn.Query(ctx, "SELECT id, acct_id, qty FROM ev")
	if err != nil {
		t.Fatalf("read ev: %v", err)
	}
	for rows.Next() {
		var id, a int64
		var qty int
		if err := rows.Scan(&id, &a, &qty); err != nil {
			t.Fatalf("read ev: %v", err)
		}
		if _, dup := ev[id]; dup {
			t.Errorf("ev: primary key %d appears twice", id)
		}
		ev[id] = evRow{acct: a, qty: qty}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read ev: %v", err)
	}
	return acct, ev
}

// queryText runs sql over the simple protocol and renders each row as its
// text values joined by "|", sorted.
func queryText(t *testing.T, conn *pgx.Conn, sql string) []string {
	t.Helper()
	out := servertest.QueryText(t, conn, sql)
	slices.Sort(out)
	return out
}

// diffRows describes how two sorted row lists differ ("" if equal).
func diffRows(got, want []string) string {
	var b strings.Builder
	i, j, n := 0, 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			if n < 10 {
				fmt.Fprintf(&b, "  extra   %s\n", got[i])
			}
			i, n = i+1, n+1
		case i == len(got) || want[j] < got[i]:
			if n < 10 {
				fmt.Fprintf(&b, "  missing %s\n", want[j])
			}
			j, n = j+1, n+1
		default:
			i, j = i+1, j+1
		}
	}
	if n > 10 {
		fmt.Fprintf(&b, "  ... %d differences in all (%d rows vs %d wanted)\n", n, len(got), len(want))
	}
	return b.String()
}

// verifyOnPostgres loads the recovered rows into a fresh PostgreSQL
// database and compares each view's rows on Runnel with its query there.
func (r *crashRun) verifyOnPostgres(rw *pgx.Conn, acct map[int64]acctRow, ev map[int64]evRow) {
	t := r.t
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer pg.Close(ctx)
	for _, s := range schema {
		if _, err := pg.Exec(ctx, s); err != nil {
			t.Fatalf("PostgreSQL: %s: %v", s, err)
		}
	}
	var acctRows, evRows [][]any
	for id, a := range acct {
		acctRows = append(acctRows, []any{id, a.grp, a.amount, int(id / keySpan)})
	}
	for id, e := range ev {
		evRows = append(evRows, []any{id, e.acct, e.qty})
	}
	if _, err := pg.CopyFrom(ctx, pgx.Identifier{"acct"}, []string{"id", "grp", "amount", "writer"}, pgx.CopyFromRows(acctRows)); err != nil {
		t.Fatalf("PostgreSQL: load acct: %v", err)
	}
	if _, err := pg.CopyFrom(ctx, pgx.Identifier{"ev"}, []string{"id", "acct_id", "qty"}, pgx.CopyFromRows(evRows)); err != nil {
		t.Fatalf("PostgreSQL: load ev: %v", err)
	}
	for _, v := range views {
		got := queryText(t, rw, "SELECT * FROM "+v.name)
		want := queryText(t, pg, v.query)
		if d := diffRows(got, want); d != "" {
			t.Errorf("view %s on Runnel differs from its query evaluated by PostgreSQL over the recovered rows:\n%s", v.name, d)
		}
	}
}
