package crashtest

import (
	"context"
	"fmt"
	"math/rand"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// defaultSourceKills is the number of SIGKILLs of the source crash tests
// in the default run (each: 0.2–1.2 s of ingest, a kill, a restart).
const defaultSourceKills = 3

// sourceCrash is one Runnel data directory killed and restarted while an
// upstream system (a Kafka broker in this test process, a PostgreSQL
// cluster) keeps producing: the upstream outlives every Runnel process.
type sourceCrash struct {
	t       *testing.T
	bin     string
	dataDir string
	logPath string
	rng     *rand.Rand
	cur     *proc
	seed    int64
}

func newSourceCrash(t *testing.T) *sourceCrash {
	if testing.Short() {
		t.Skip("crash test: skipped with -short")
	}
	seed := envInt(t, "RUNNEL_CRASH_SEED", time.Now().UnixNano())
	t.Logf("seed %d (RUNNEL_CRASH_SEED=%d replays the choices, not the timing)", seed, seed)
	work := t.TempDir()
	c := &sourceCrash{t: t, bin: buildRunnel(t), dataDir: filepath.Join(work, "data"), logPath: filepath.Join(work, "runnel.log"),
		rng: rand.New(rand.NewSource(seed)), seed: seed}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d; server log tail:\n%s", seed, tail(c.logPath))
			t.Logf("whole server log: %s", keepLog(c.cur, c.logPath, seed))
		}
	})
	c.start()
	return c
}

func (c *sourceCrash) start() {
	c.cur = startRunnel(c.t, c.bin, c.dataDir, c.logPath)
	c.cur.waitReady(c.t, readyLimit)
}

// connect opens a session on the current server.
func (c *sourceCrash) connect() *pgx.Conn {
	c.t.Helper()
	conn, err := pgx.Connect(context.Background(), c.cur.url())
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// killLoop SIGKILLs the server kills times, each after a seeded random
// 200–1200 ms of upstream activity, and restarts it on the same data
// directory. Now and then the kill comes during the restart's recovery.
func (c *sourceCrash) killLoop(kills int) {
	for i := range kills {
		d := 200*time.Millisecond + time.Duration(c.rng.Int63n(int64(time.Second)))
		time.Sleep(d)
		c.cur.signal(syscall.SIGKILL)
		what := fmt.Sprintf("SIGKILL after %v", d)
		if c.rng.Intn(4) == 0 {
			// Kill the next incarnation while it recovers.
			p := startRunnel(c.t, c.bin, c.dataDir, c.logPath)
			e := time.Duration(c.rng.Int63n(int64(500 * time.Millisecond)))
			time.Sleep(e)
			p.signal(syscall.SIGKILL)
			what += fmt.Sprintf(", and its restart %v after start", e)
		}
		c.start()
		c.t.Logf("kill %d: %s; restarted", i, what)
	}
}

// waitEqual polls (with FLUSH) until query on Runnel gives want, or fails
// after limit with the last answer.
func waitEqual(t *testing.T, conn *pgx.Conn, query string, want func() []string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var got []string
		_, err := conn.Exec(context.Background(), "FLUSH")
		if err == nil {
			got, err = servertest.TryQueryText(conn, query)
		}
		w := want()
		if err == nil && strings.Join(got, "\n") == strings.Join(w, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %s (err %v); want %s", query, strings.Join(headLines(got), "\n"), err, strings.Join(headLines(w), "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func headLines(s []string) []string {
	if len(s) > 20 {
		return append(s[:20:20], "...")
	}
	return s
}

// TestKafkaSourceSIGKILL (I7, I8): a Kafka topic of three partitions,
// served by kfake in this test process (it outlives every Runnel process),
// feeds a source read by a view and a table without a primary key (a
// duplicate would be a second row). A producer writes ids 1, 2, 3, ...
// all along while Runnel is SIGKILLed at seeded random moments and
// restarted on its data directory. In the end the table holds every id
// exactly once and the views over the source and over the table say the
// same: the partitions' offsets are committed with the rows, in the same
// epoch, and nowhere else.
func TestKafkaSourceSIGKILL(t *testing.T) {
	c := newSourceCrash(t)
	kills := int(envInt(t, "RUNNEL_SOURCE_CRASH_KILLS", defaultSourceKills))
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "ev"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]
	prod := newIDProducer(t, addr, "ev", 3, func(id int64) []byte { return fmt.Appendf(nil, `{"id": %d, "v": %d}`, id, id%7) })
	if err := prod.produce(500); err != nil {
		t.Fatal(err)
	}

	conn := c.connect()
	with := fmt.Sprintf(`WITH (connector = 'kafka', topic = 'ev', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE JSON`, addr)
	for _, s := range []string{
		`CREATE SOURCE ks (id BIGINT, v INT) ` + with,
		`CREATE TABLE kt (id BIGINT, v INT) ` + with,
		`CREATE MATERIALIZED VIEW ks_mv AS SELECT count(*) AS n, sum(id) AS s, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM ks`,
		`CREATE MATERIALIZED VIEW kt_mv AS SELECT v, count(*) AS n, sum(id) AS s FROM kt GROUP BY v`,
	} {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}

	n := prod.during(c.seed, func() { c.killLoop(kills) })
	t.Logf("%d records produced across %d kills", n, kills)

	conn = c.connect()
	total := func() []string { return []string{fmt.Sprintf("%d|%d|%d|1|%d", n, n*(n+1)/2, n, n)} }
	waitEqual(t, conn, `SELECT n, s, d, lo, hi FROM ks_mv`, total, 2*time.Minute)
	waitEqual(t, conn, `SELECT count(*), sum(id), count(DISTINCT id), min(id), max(id) FROM kt`, total, time.Minute)
	byV := func() []string {
		var out []string
		for v := int64(0); v < 7; v++ {
			var cnt, sum int64
			for id := int64(1); id <= n; id++ {
				if id%7 == v {
					cnt, sum = cnt+1, sum+id
				}
			}
			out = append(out, fmt.Sprintf("%d|%d|%d", v, cnt, sum))
		}
		return out
	}
	waitEqual(t, conn, `SELECT v, n, s FROM kt_mv ORDER BY v`, byV, time.Minute)
}

// TestPostgresCDCSIGKILL (I7, I8): a PostgreSQL table read through
// postgres-cdc (CREATE SOURCE + CREATE TABLE ... FROM source TABLE) and a
// view over it, while a writer runs seeded random INSERT / UPDATE
// (key changes included) / DELETE upstream all along and Runnel is
// SIGKILLed at random moments and restarted: in the end Runnel's table
// equals the upstream table and the view equals its query upstream. The
// slot is acknowledged only after the epoch holding a change commits, so
// what a killed process had not committed is streamed again.
func TestPostgresCDCSIGKILL(t *testing.T) {
	c := newSourceCrash(t)
	kills := int(envInt(t, "RUNNEL_SOURCE_CRASH_KILLS", defaultSourceKills))
	raw := pgtest.NewLogicalDatabase(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	up, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close(ctx)
	t.Cleanup(func() {
		// The slot would keep the database from being dropped; it is
		// active until the killed walsender notices.
		c.cur.signal(syscall.SIGKILL)
		cl, err := pgx.Connect(ctx, raw)
		if err != nil {
			return
		}
		defer cl.Close(ctx)
		for range 100 {
			var left int
			cl.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
				WHERE database = current_database() AND NOT active) d`).Scan(&left)
			if err := cl.QueryRow(ctx, `SELECT count(*) FROM pg_replication_slots WHERE database = current_database()`).Scan(&left); err != nil || left == 0 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	exec := func(conn *pgx.Conn, sql string, args ...any) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	}
	if err := exec(up, `CREATE TABLE t (id int PRIMARY KEY, k int, v text)`); err != nil {
		t.Fatal(err)
	}
	if err := exec(up, `INSERT INTO t SELECT i, i % 10, 'v' || i FROM generate_series(1, 1000) i`); err != nil {
		t.Fatal(err)
	}

	conn := c.connect()
	port, _ := strconv.Atoi(u.Port())
	for _, s := range []string{
		fmt.Sprintf(`CREATE SOURCE pg WITH (connector = 'postgres-cdc', hostname = '%s', port = '%d', username = '%s', password = '',
			database.name = '%s', slot.name = 'crash_slot')`, u.Hostname(), port, u.User.Username(), strings.TrimPrefix(u.Path, "/")),
		`CREATE TABLE t (id int, k int, v varchar, PRIMARY KEY (id)) FROM pg TABLE 'public.t'`,
		`CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS n, sum(id) AS s FROM t GROUP BY k`,
	} {
		if err := exec(conn, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}

	// The upstream writer: one random statement every 2 ms until stopped.
	w, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var werr error
	var stmts int
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(c.seed))
		for !stop.Load() {
			id := rng.Intn(1500)
			var err error
			switch rng.Intn(6) {
			case 0, 1:
				err = exec(w, `INSERT INTO t VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET k = EXCLUDED.k, v = EXCLUDED.v`,
					id, rng.Intn(10), fmt.Sprintf("w%d", rng.Intn(1000)))
			case 2:
				err = exec(w, `UPDATE t SET k = k + 1, v = v || 'x' WHERE id % 53 = $1`, rng.Intn(53))
			case 3:
				err = exec(w, `DELETE FROM t WHERE id = $1`, id)
			case 4:
				err = exec(w, `DELETE FROM t WHERE id BETWEEN $1 AND $1 + 5`, id)
			case 5:
				err = exec(w, `UPDATE t SET id = id + 2000 WHERE id = $1 AND NOT EXISTS (SELECT FROM t WHERE id = $1 + 2000)`, id)
			}
			if err != nil {
				werr = err
				return
			}
			stmts++
			time.Sleep(2 * time.Millisecond)
		}
	}()
	c.killLoop(kills)
	stop.Store(true)
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	t.Logf("%d upstream statements across %d kills", stmts, kills)

	conn = c.connect()
	upstream := func(q string) func() []string {
		return func() []string { return servertest.QueryText(t, up, q) }
	}
	waitEqual(t, conn, `SELECT id, k, v FROM t ORDER BY id`, upstream(`SELECT id, k, v FROM t ORDER BY id`), 2*time.Minute)
	waitEqual(t, conn, `SELECT k, n, s FROM mv ORDER BY k`, upstream(`SELECT k, count(*), sum(id) FROM t GROUP BY k ORDER BY k`), time.Minute)
}

// idProducer writes records for ids 1, 2, 3, ... (value(id)) into a
// topic, id % partitions being the partition: the upstream of the Kafka
// crash tests.
type idProducer struct {
	t          *testing.T
	client     *kgo.Client
	partitions int64
	value      func(id int64) []byte
	produced   atomic.Int64 // ids 1..produced are in the topic
}

func newIDProducer(t *testing.T, addr, topic string, partitions int64, value func(id int64) []byte) *idProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &idProducer{t: t, client: cl, partitions: partitions, value: value}
}

// produce writes the next n ids.
func (p *idProducer) produce(n int) error {
	recs := make([]*kgo.Record, n)
	next := p.produced.Load()
	for i := range recs {
		id := next + int64(i) + 1
		recs[i] = &kgo.Record{Partition: int32(id % p.partitions), Value: p.value(id)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	p.produced.Add(int64(n))
	return nil
}

// during produces a batch of 1–40 records (seeded) every 5 ms while fn
// runs, and returns the number of ids produced in all.
func (p *idProducer) during(seed int64, fn func()) int64 {
	var stop atomic.Bool
	var wg sync.WaitGroup
	var perr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(seed))
		for !stop.Load() {
			if err := p.produce(1 + rng.Intn(40)); err != nil {
				perr = err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	fn()
	stop.Store(true)
	wg.Wait()
	if perr != nil {
		p.t.Fatal(perr)
	}
	return p.produced.Load()
}
