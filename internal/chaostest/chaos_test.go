package chaostest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/s3test"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// healLimit bounds how long Runnel may take, after every backend is back,
// to commit a write again. Recovery backs off up to 10 s between tries and
// the S3 client retries a refused connection for a while, so allow a few
// rounds of both.
const healLimit = 60 * time.Second

func seed(t *testing.T) uint64 {
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RUNNEL_TEST_SEED=%q: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

func envInt(name string, def int) int {
	if s := os.Getenv(name); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			return v
		}
	}
	return def
}

// cluster is one Runnel process with its two backends.
type cluster struct {
	t       *testing.T
	bin     string
	pg      *pgtest.Cluster
	s3      *s3test.Server
	objURL  string
	metaURL string
	dataDir string
	logPath string

	mu   sync.Mutex
	proc *servertest.Process
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	bin := os.Getenv("RUNNEL_CHAOS_BIN")
	if bin == "" {
		bin = servertest.BuildBinary(t)
	}
	pg, err := pgtest.StartCluster("")
	if err != nil {
		if errors.Is(err, pgtest.ErrNoBinaries) && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	s3 := s3test.Start(t)
	s3.SetEnv(t)
	bucket := s3.NewBucket(t)
	c := &cluster{
		t: t, bin: bin, pg: pg, s3: s3,
		objURL:  s3.URL(bucket, "chaos"),
		metaURL: pg.URL("postgres"),
		dataDir: t.TempDir(),
		logPath: filepath.Join(t.TempDir(), "runnel.log"),
	}
	c.startRunnel()
	return c
}

func (c *cluster) startRunnel() {
	c.t.Helper()
	p := servertest.StartProcess(c.t, c.bin, servertest.ProcessOptions{
		DataDir: c.dataDir, LogPath: c.logPath,
		Args: []string{"--barrier-interval", "50ms", "--log-level", "warn",
			"--object-store", c.objURL, "--meta-store", c.metaURL},
	})
	p.WaitReady(c.t, healLimit)
	c.mu.Lock()
	c.proc = p
	c.mu.Unlock()
}

func (c *cluster) url() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc.URL() + "&implicit_flush=true"
}

func (c *cluster) current() *servertest.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// rangeState is what the test knows about one key range.
type rangeState int

const (
	absent          rangeState = iota
	present                    // inserted, acknowledged
	uncertainIns               // INSERT failed ambiguously: all or nothing
	uncertainDel               // DELETE failed ambiguously: all or nothing
	deleted                    // DELETE acknowledged
	discardedInsert            // INSERT answered 40001 (rolled back): must be absent
)

type keyRange struct {
	lo, hi int64
	state  rangeState
}

// writer owns keys [base, base+1e9) and a model of them.
type writer struct {
	id     int
	rng    *rand.Rand
	next   int64
	ranges []*keyRange

	acked, failed atomic.Int64
}

// isDiscarded reports an error that says the statement was rolled back,
// so its writes must not exist.
func isDiscarded(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001" && strings.Contains(pe.Message, "rolled back by a recovery")
}

func (w *writer) step(ctx context.Context, c *cluster, conn **pgx.Conn) {
	if *conn == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cn, err := pgx.Connect(cctx, c.url())
		cancel()
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			return
		}
		*conn = cn
	}
	var live []*keyRange
	for _, r := range w.ranges {
		if r.state == present {
			live = append(live, r)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if len(live) > 0 && w.rng.IntN(10) < 3 {
		r := live[w.rng.IntN(len(live))]
		_, err := (*conn).Exec(sctx, "DELETE FROM t WHERE k BETWEEN $1 AND $2", r.lo, r.hi)
		switch {
		case err == nil:
			r.state = deleted
			w.acked.Add(1)
		default:
			r.state = uncertainDel
			w.failed.Add(1)
			(*conn).Close(context.Background())
			*conn = nil
		}
		return
	}
	n := int64(5)
	if w.rng.IntN(4) == 0 {
		n = 20000 // large enough to be uploaded as an SST, not inlined
	}
	r := &keyRange{lo: w.next, hi: w.next + n - 1}
	w.next += n
	w.ranges = append(w.ranges, r)
	_, err := (*conn).Exec(sctx, "INSERT INTO t SELECT k, k % 1000 FROM generate_series($1::bigint, $2::bigint) k", r.lo, r.hi)
	switch {
	case err == nil:
		r.state = present
		w.acked.Add(1)
	case isDiscarded(err):
		r.state = discardedInsert
		w.failed.Add(1)
	default:
		r.state = uncertainIns
		w.failed.Add(1)
		(*conn).Close(context.Background())
		*conn = nil
	}
}

// check compares the table's rows (sorted by k) with the model.
func (w *writer) check(t *testing.T, rows map[int64]int64) {
	t.Helper()
	for _, r := range w.ranges {
		have := 0
		for k := r.lo; k <= r.hi; k++ {
			if v, ok := rows[k]; ok {
				have++
				if v != k%1000 {
					t.Errorf("writer %d: row %d has v=%d, want %d", w.id, k, v, k%1000)
				}
			}
		}
		size := int(r.hi - r.lo + 1)
		switch r.state {
		case present:
			if have != size {
				t.Errorf("writer %d: acknowledged insert [%d,%d] has %d of %d rows (acknowledged write lost)", w.id, r.lo, r.hi, have, size)
			}
		case deleted, absent:
			if have != 0 {
				t.Errorf("writer %d: range [%d,%d] should be absent (state %d), has %d rows", w.id, r.lo, r.hi, r.state, have)
			}
		case discardedInsert:
			if have != 0 {
				t.Errorf("writer %d: insert [%d,%d] answered 40001 'rolled back' but %d rows exist (a false 40001 makes clients write twice)", w.id, r.lo, r.hi, have)
			}
		case uncertainIns, uncertainDel:
			if have != 0 && have != size {
				t.Errorf("writer %d: uncertain statement on [%d,%d] partly applied: %d of %d rows", w.id, r.lo, r.hi, have, size)
			}
		}
	}
}

type fault struct {
	name  string
	apply func(c *cluster) error
	heal  func(c *cluster) error
}

var faults = []fault{
	{"kill object store", func(c *cluster) error { c.s3.Kill(); return nil }, func(c *cluster) error { return c.s3.Restart() }},
	{"freeze object store", func(c *cluster) error { return c.s3.Pause() }, func(c *cluster) error { return c.s3.Resume() }},
	{"crash meta store", func(c *cluster) error { return c.pg.Crash() }, func(c *cluster) error { return c.pg.Restart() }},
	{"crash both stores", func(c *cluster) error { c.s3.Kill(); return c.pg.Crash() }, func(c *cluster) error {
		if err := c.pg.Restart(); err != nil {
			return err
		}
		return c.s3.Restart()
	}},
	{"kill runnel", func(c *cluster) error { c.current().Signal(syscall.SIGKILL); return nil }, func(c *cluster) error { c.startRunnel(); return nil }},
}

// TestChaosBackends takes the object store, the meta store and Runnel
// itself away at seeded moments under a write load, and checks I7 and I1
// at the end (see the package comment).
func TestChaosBackends(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	sd := seed(t)
	iters := envInt("RUNNEL_CHAOS_ITERS", 6)
	t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays the choices), %d iterations", sd, sd, iters)
	rng := rand.New(rand.NewPCG(sd, 1))
	c := startCluster(t)
	failed := true
	t.Cleanup(func() {
		if failed || t.Failed() {
			t.Logf("runnel log %s:\n%s", c.logPath, servertest.Tail(c.logPath))
		}
	})

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, c.url())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE t (k BIGINT PRIMARY KEY, v BIGINT)",
		"CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(v) AS s FROM t",
		"CREATE MATERIALIZED VIEW grouped AS SELECT v % 7 AS g, count(*) AS n, sum(k) AS s FROM t GROUP BY v % 7",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	admin.Close(ctx)

	writers := make([]*writer, 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		w := &writer{id: i, rng: rand.New(rand.NewPCG(sd, uint64(10+i))), next: int64(i+1) * 1_000_000_000}
		writers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn *pgx.Conn
			defer func() {
				if conn != nil {
					conn.Close(context.Background())
				}
			}()
			for {
				select {
				case <-stop:
					return
				default:
				}
				w.step(ctx, c, &conn)
			}
		}()
	}
	stopWriters := func() {
		if stop != nil {
			close(stop)
			wg.Wait()
			stop = nil
		}
	}
	defer stopWriters()

	for i := range iters {
		f := faults[rng.IntN(len(faults))]
		down := time.Duration(300+rng.IntN(1500)) * time.Millisecond
		before := progress(writers)
		t.Logf("iteration %d: %s for %v", i, f.name, down)
		if err := f.apply(c); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		time.Sleep(down)
		if f.name != "kill runnel" && c.current().Exited() {
			t.Fatalf("runnel died while its backend was away (%s): %v", f.name, c.current().WaitErr())
		}
		if err := f.heal(c); err != nil {
			t.Fatalf("heal %s: %v", f.name, err)
		}
		healed := time.Now()
		// Liveness: writes are acknowledged again soon after the backends
		// return, without anyone restarting Runnel.
		for progress(writers) <= before+2 {
			if c.current().Exited() {
				t.Fatalf("runnel died after %s: %v", f.name, c.current().WaitErr())
			}
			if time.Since(healed) > healLimit {
				t.Fatalf("no write acknowledged within %v after %s healed", healLimit, f.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("iteration %d: writes acknowledged again %v after healing", i, time.Since(healed).Round(time.Millisecond))
	}
	stopWriters()

	conn, err := pgx.Connect(ctx, c.url())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatalf("FLUSH: %v", err)
	}
	verify(t, conn, writers)
	var acked, failedN int64
	for _, w := range writers {
		acked += w.acked.Load()
		failedN += w.failed.Load()
	}
	t.Logf("%d statements acknowledged, %d failed or uncertain", acked, failedN)
	conn.Close(ctx)

	// A clean stop, then every object must have an owner (I1).
	p := c.current()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := servertest.ExitedCleanly(p.WaitErr()); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	out, err := exec.Command(c.bin, "ctl", "storage", "check", "--data-dir", c.dataDir,
		"--object-store", c.objURL, "--meta-store", c.metaURL).CombinedOutput()
	if err != nil {
		t.Errorf("runnel ctl storage check: %v\n%s", err, out)
	}
	t.Logf("storage check: %s", strings.TrimSpace(string(out)))
	failed = false
}

func progress(ws []*writer) int64 {
	var n int64
	for _, w := range ws {
		n += w.acked.Load()
	}
	return n
}

// verify checks the table against the writers' models and each view
// against its query over the table.
func verify(t *testing.T, conn *pgx.Conn, writers []*writer) {
	t.Helper()
	ctx := context.Background()
	rows := map[int64]int64{}
	rs, err := conn.Query(ctx, "SELECT k, v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var k, v int64
		if err := rs.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		rows[k] = v
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range writers {
		w.check(t, rows)
	}
	for _, q := range [][2]string{
		{"SELECT n::text || ',' || coalesce(s::text, '') FROM total",
			"SELECT count(*)::text || ',' || coalesce(sum(v)::text, '') FROM t"},
		{"SELECT string_agg(g || ':' || n || ':' || s, ' ' ORDER BY g) FROM grouped",
			"SELECT string_agg(g || ':' || n || ':' || s, ' ' ORDER BY g) FROM (SELECT v % 7 AS g, count(*) AS n, sum(k) AS s FROM t GROUP BY v % 7) x"},
	} {
		var view, want *string
		if err := conn.QueryRow(ctx, q[0]).Scan(&view); err != nil {
			t.Fatalf("%s: %v", q[0], err)
		}
		if err := conn.QueryRow(ctx, q[1]).Scan(&want); err != nil {
			t.Fatalf("%s: %v", q[1], err)
		}
		if fmt.Sprint(deref(view)) != fmt.Sprint(deref(want)) {
			t.Errorf("view differs from its query:\n view:  %s\n query: %s", deref(view), deref(want))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
