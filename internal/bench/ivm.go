package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// `runnel bench ivm` measures what incremental view maintenance buys: the
// time from a single-row UPDATE to reading its effect in a view, when
// Runnel maintains the view (UPDATE + FLUSH + read) and when PostgreSQL
// recomputes it (UPDATE + REFRESH MATERIALIZED VIEW + read). Both systems
// get the same rows, the same view definitions, the same updates and the
// same reads, interleaved update by update so that machine noise hits both
// alike, and every read is checked against the expected value computed
// here, so a fast but wrong answer fails the run.
//
// Runnel's FLUSH asks the barrier loop for a barrier at once (it does not
// wait for the 1 s tick) and returns when that epoch is committed, i.e.
// when every view has applied the update (I7); that wait is part of the
// measured latency.
//
// Both are measured in a steady state: after the load and the view
// creation, Runnel waits until its LSM has compacted what they wrote (no
// compaction running or due) and PostgreSQL runs VACUUM ANALYZE and
// CHECKPOINT. Compaction the updates themselves cause still runs during
// the measurement.
//
// PostgreSQL runs with the throwaway-cluster settings of pgtest (fsync off,
// 32 MB shared_buffers) and work_mem raised to ivmWorkMem so that REFRESH
// sorts and hashes in memory. Its views have no index: REFRESH then only
// recomputes, and the point read is a sequential scan of the view (an
// index would make the read cheap but every REFRESH would rebuild it).

// ivmWorkMem is PostgreSQL's work_mem for the run: enough for a hash join
// and hash aggregate over 1M rows without spilling.
const ivmWorkMem = "256MB"

// IVMOptions configure RunIVM.
type IVMOptions struct {
	Rows      int64 // orders (default 1,000,000)
	Customers int64 // customers (default Rows/10)
	Updates   int   // single-row updates per view (default 20)
	Seed      uint64
	// PostgresURL names the PostgreSQL database to compare with; empty
	// starts a throwaway cluster (pgtest) for the run. The database must
	// not have tables or views of the benchmark's names.
	PostgresURL string
	JSON        bool
	Out         io.Writer
	// Progress receives loading progress (nil: none).
	Progress io.Writer
	Log      *slog.Logger
}

// IVMLatency summarises one system's latencies for one view, in
// milliseconds; the component medians show where the time goes.
type IVMLatency struct {
	MedianMs float64 `json:"median_ms"`
	P95Ms    float64 `json:"p95_ms"`
	// WriteMs is the UPDATE, MaintainMs the FLUSH (Runnel) or REFRESH
	// MATERIALIZED VIEW (PostgreSQL), ReadMs the point read of the view.
	WriteMs    float64 `json:"update_median_ms"`
	MaintainMs float64 `json:"maintain_median_ms"`
	ReadMs     float64 `json:"read_median_ms"`
	// CreateSeconds is the time to create (and fill) the view.
	CreateSeconds float64 `json:"create_seconds"`
}

// IVMResult is one view's measurement.
type IVMResult struct {
	View          string     `json:"view"`
	Rows          int64      `json:"rows"`
	Customers     int64      `json:"customers"`
	Updates       int        `json:"updates"`
	Runnel        IVMLatency `json:"runnel"`
	Postgres      IVMLatency `json:"postgres"`
	SpeedupMedian float64    `json:"speedup_median"`
	SpeedupP95    float64    `json:"speedup_p95"`
	// SpeedupMaintain compares only the maintenance step: the median
	// REFRESH against the median FLUSH (the update and the read excluded).
	SpeedupMaintain float64 `json:"speedup_maintain_median"`
	PostgresVersion string  `json:"postgres_version"`
	Cores           int     `json:"cores"`
}

// ivmView is one view of the benchmark, with the read that checks an
// update.
type ivmView struct {
	name string
	sql  string
	// read returns the query and argument reading the row order id's
	// update affects, and the row it must return (as text).
	read func(d *ivmData, id int64) (query string, arg int64, want []string)
}

var ivmViews = []ivmView{
	{
		name: "order_details",
		sql: `SELECT o.id, o.customer_id, o.amount, o.status, c.region, c.name
			FROM orders o JOIN customers c ON o.customer_id = c.id`,
		read: func(d *ivmData, id int64) (string, int64, []string) {
			c := d.customerOf(id)
			return `SELECT amount, region, name FROM order_details WHERE id = $1`, id,
				[]string{strconv.FormatInt(d.amount[id], 10), d.region(c), d.name(c)}
		},
	},
	{
		name: "customer_totals",
		sql:  `SELECT customer_id, count(*) AS n_orders, sum(amount) AS total FROM orders GROUP BY customer_id`,
		read: func(d *ivmData, id int64) (string, int64, []string) {
			c := d.customerOf(id)
			return `SELECT n_orders, total FROM customer_totals WHERE customer_id = $1`, c,
				[]string{strconv.FormatInt(d.count[c], 10), strconv.FormatInt(d.total[c], 10)}
		},
	},
}

const ivmSchema = `CREATE TABLE customers (id BIGINT PRIMARY KEY, region VARCHAR NOT NULL, name VARCHAR NOT NULL);
CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL, amount BIGINT NOT NULL, status VARCHAR NOT NULL)`

var (
	ivmRegions  = []string{"north", "south", "east", "west", "central", "coast", "mountain", "islands"}
	ivmStatuses = []string{"open", "paid", "shipped"}
)

// ivmData is the generated data set and the expected state of the views.
type ivmData struct {
	rows, customers int64
	seed            uint64
	amount          []int64 // by order id
	count, total    []int64 // by customer id
}

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func newIVMData(rows, customers int64, seed uint64) *ivmData {
	d := &ivmData{rows: rows, customers: customers, seed: seed,
		amount: make([]int64, rows), count: make([]int64, customers), total: make([]int64, customers)}
	for id := range rows {
		a := int64(mix64(uint64(id)^seed^0x5eed)%1000) + 1
		d.amount[id] = a
		c := d.customerOf(id)
		d.count[c]++
		d.total[c] += a
	}
	return d
}

func (d *ivmData) customerOf(id int64) int64 {
	return int64(mix64(uint64(id)+d.seed) % uint64(d.customers))
}
func (d *ivmData) region(c int64) string { return ivmRegions[c%int64(len(ivmRegions))] }
func (d *ivmData) name(c int64) string   { return "customer-" + strconv.FormatInt(c, 10) }

// copyBatch is the rows per COPY statement: each COPY is one atomic
// statement that Runnel buffers whole, so batches bound its memory and
// give the progress display something to count.
const copyBatch = 100_000

// load copies both tables into conn (COPY FROM STDIN, text format).
func (d *ivmData) load(ctx context.Context, conn *pgx.Conn, system string, progressOut io.Writer) error {
	var buf bytes.Buffer
	copyRows := func(table string, n int64, line func(b []byte, i int64) []byte) error {
		p := newProgress(progressOut, IsTerminal(progressOut), "load "+system+" "+table, "rows", n)
		var b []byte
		for lo := int64(0); lo < n; lo += copyBatch {
			buf.Reset()
			for i := lo; i < min(n, lo+copyBatch); i++ {
				b = line(b[:0], i)
				buf.Write(b)
			}
			if _, err := conn.PgConn().CopyFrom(ctx, &buf, "COPY "+table+" FROM STDIN"); err != nil {
				return fmt.Errorf("bench ivm: COPY %s into %s: %w", table, system, err)
			}
			if progressOut != nil {
				p.update(min(n, lo+copyBatch))
			}
		}
		if progressOut != nil {
			p.finish(n)
		}
		return nil
	}
	err := copyRows("customers", d.customers, func(b []byte, c int64) []byte {
		b = strconv.AppendInt(b, c, 10)
		b = append(b, '\t')
		b = append(b, d.region(c)...)
		b = append(b, '\t')
		b = append(b, d.name(c)...)
		return append(b, '\n')
	})
	if err != nil {
		return err
	}
	return copyRows("orders", d.rows, func(b []byte, id int64) []byte {
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, d.customerOf(id), 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, d.amount[id], 10)
		b = append(b, '\t')
		b = append(b, ivmStatuses[id%int64(len(ivmStatuses))]...)
		return append(b, '\n')
	})
}

// ivmDefaults fills the data-set and report options the side-by-side
// benchmarks share (1,000,000 orders, a tenth as many customers, no
// output, no log) and returns the report printer, silent with asJSON.
func ivmDefaults(rows, customers *int64, out *io.Writer, log **slog.Logger, asJSON bool) (say func(format string, args ...any)) {
	if *rows <= 0 {
		*rows = 1_000_000
	}
	if *customers <= 0 {
		*customers = max(1, *rows/10)
	}
	if *out == nil {
		*out = io.Discard
	}
	if *log == nil {
		*log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := *out
	return func(format string, args ...any) {
		if !asJSON {
			fmt.Fprintf(w, format+"\n", args...)
		}
	}
}

// benchPeers are the two systems of a side-by-side benchmark: an embedded
// Runnel server and a PostgreSQL database (a throwaway cluster unless a
// URL names one), each with a connection; PostgreSQL's has work_mem set to
// ivmWorkMem.
type benchPeers struct {
	e         *embedded
	rw, pg    *pgx.Conn
	pgVersion string
	stops     []func()
}

func startPeers(ctx context.Context, bench, pgURL string, log *slog.Logger) (_ *benchPeers, err error) {
	p := &benchPeers{}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if pgURL == "" {
		pg, err := pgtest.StartCluster("")
		if err != nil {
			return nil, fmt.Errorf("bench %s: start PostgreSQL: %w", bench, err)
		}
		p.stops = append(p.stops, func() { pg.Stop() })
		pgURL = pg.URL("postgres")
	}
	if p.pg, err = pgx.Connect(ctx, pgURL); err != nil {
		return nil, fmt.Errorf("bench %s: connect to PostgreSQL: %w", bench, err)
	}
	p.stops = append(p.stops, func() { p.pg.Close(context.Background()) })
	if err := p.pg.QueryRow(ctx, "SHOW server_version").Scan(&p.pgVersion); err != nil {
		return nil, fmt.Errorf("bench %s: PostgreSQL version: %w", bench, err)
	}
	if _, err := p.pg.Exec(ctx, "SET work_mem = '"+ivmWorkMem+"'"); err != nil {
		return nil, fmt.Errorf("bench %s: PostgreSQL work_mem: %w", bench, err)
	}
	if p.e, err = startEmbedded(ctx, log); err != nil {
		return nil, err
	}
	p.stops = append(p.stops, p.e.close)
	if p.rw, err = p.e.connect(ctx); err != nil {
		return nil, err
	}
	p.stops = append(p.stops, func() { p.rw.Close(context.Background()) })
	return p, nil
}

// close stops what startPeers started, in reverse order.
func (p *benchPeers) close() {
	for i := len(p.stops) - 1; i >= 0; i-- {
		p.stops[i]()
	}
	p.stops = nil
}

// ivmSystem is one side of the comparison.
type ivmSystem struct {
	name string
	conn *pgx.Conn
	// maintain makes view's contents reflect the update just made.
	maintain string
}

// RunIVM runs the benchmark and writes its report to opts.Out.
func RunIVM(ctx context.Context, opts IVMOptions) ([]IVMResult, error) {
	say := ivmDefaults(&opts.Rows, &opts.Customers, &opts.Out, &opts.Log, opts.JSON)
	if opts.Updates <= 0 {
		opts.Updates = 20
	}

	peers, err := startPeers(ctx, "ivm", opts.PostgresURL, opts.Log)
	if err != nil {
		return nil, err
	}
	defer peers.close()
	pgConn, rwConn, pgVersion := peers.pg, peers.rw, peers.pgVersion
	e := peers.e

	cores := runtime.NumCPU()
	say("runnel bench ivm: %d orders, %d customers, %d single-row updates per view", opts.Rows, opts.Customers, opts.Updates)
	say("PostgreSQL %s (work_mem %s); %d cores (GOMAXPROCS %d); load average %s", pgVersion, ivmWorkMem, cores, runtime.GOMAXPROCS(0), loadAverage())

	d := newIVMData(opts.Rows, opts.Customers, opts.Seed)
	systems := []ivmSystem{
		{name: "runnel", conn: rwConn, maintain: "FLUSH"},
		{name: "postgres", conn: pgConn, maintain: "REFRESH MATERIALIZED VIEW %s"},
	}
	created := map[string]float64{} // system/view → seconds
	for _, s := range systems {
		for _, stmt := range strings.Split(ivmSchema, ";") {
			if _, err := s.conn.Exec(ctx, stmt); err != nil {
				return nil, fmt.Errorf("bench ivm: schema on %s: %w", s.name, err)
			}
		}
		start := time.Now()
		if err := d.load(ctx, s.conn, s.name, opts.Progress); err != nil {
			return nil, err
		}
		if s.name == "runnel" {
			if _, err := s.conn.Exec(ctx, "FLUSH"); err != nil {
				return nil, fmt.Errorf("bench ivm: FLUSH after load: %w", err)
			}
		} else if _, err := s.conn.Exec(ctx, "ANALYZE"); err != nil {
			return nil, fmt.Errorf("bench ivm: ANALYZE: %w", err)
		}
		say("%-8s loaded %d rows in %.1fs", s.name, opts.Rows+opts.Customers, time.Since(start).Seconds())
		for _, v := range ivmViews {
			start := time.Now()
			if _, err := s.conn.Exec(ctx, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", v.name, v.sql)); err != nil {
				return nil, fmt.Errorf("bench ivm: create view %s on %s: %w", v.name, s.name, err)
			}
			created[s.name+"/"+v.name] = time.Since(start).Seconds()
			say("%-8s created %s in %.1fs", s.name, v.name, created[s.name+"/"+v.name])
		}
		// Measure the steady state, not the aftermath of the bulk load:
		// Runnel's LSM compacts what the load and the backfills wrote;
		// PostgreSQL vacuums and checkpoints.
		start = time.Now()
		if s.name == "runnel" {
			if err := e.settle(ctx, 5*time.Minute); err != nil {
				return nil, err
			}
		} else {
			for _, stmt := range []string{"VACUUM ANALYZE", "CHECKPOINT"} {
				if _, err := s.conn.Exec(ctx, stmt); err != nil {
					return nil, fmt.Errorf("bench ivm: %s: %w", stmt, err)
				}
			}
		}
		say("%-8s settled in %.1fs", s.name, time.Since(start).Seconds())
	}

	rng := rand.New(rand.NewPCG(opts.Seed, 0x1b4))
	var results []IVMResult
	for _, v := range ivmViews {
		lat := map[string]*[4][]time.Duration{} // system → total, update, maintain, read
		for _, s := range systems {
			lat[s.name] = &[4][]time.Duration{}
		}
		for range opts.Updates {
			id := rng.Int64N(d.rows)
			delta := 1 + rng.Int64N(100)
			d.amount[id] += delta
			d.total[d.customerOf(id)] += delta
			query, arg, want := v.read(d, id)
			for _, s := range systems {
				// Each system's step starts on a quiet disk: the other's
				// dirty pages (PostgreSQL's cluster runs with fsync off, so
				// every REFRESH leaves ~100 MB for the kernel to write back)
				// are written out first, outside the timed region, instead
				// of stalling the next fsync that happens to meet their
				// writeback.
				syscall.Sync()
				t0 := time.Now()
				tag, err := s.conn.Exec(ctx, "UPDATE orders SET amount = $1 WHERE id = $2", d.amount[id], id)
				if err != nil {
					return nil, fmt.Errorf("bench ivm: update on %s: %w", s.name, err)
				}
				if tag.RowsAffected() != 1 {
					return nil, fmt.Errorf("bench ivm: update of order %d on %s: %s; want UPDATE 1", id, s.name, tag)
				}
				t1 := time.Now()
				maintain := s.maintain
				if strings.Contains(maintain, "%s") {
					maintain = fmt.Sprintf(maintain, v.name)
				}
				if _, err := s.conn.Exec(ctx, maintain); err != nil {
					return nil, fmt.Errorf("bench ivm: %s on %s: %w", maintain, s.name, err)
				}
				t2 := time.Now()
				got, err := readRow(ctx, s.conn, query, arg)
				if err != nil {
					return nil, fmt.Errorf("bench ivm: read %s on %s: %w", v.name, s.name, err)
				}
				t3 := time.Now()
				if strings.Join(got, "|") != strings.Join(want, "|") {
					return nil, fmt.Errorf("bench ivm: %s on %s after updating order %d: %s with $1 = %d returned %v; want %v",
						v.name, s.name, id, query, arg, got, want)
				}
				l := lat[s.name]
				l[0] = append(l[0], t3.Sub(t0))
				l[1] = append(l[1], t1.Sub(t0))
				l[2] = append(l[2], t2.Sub(t1))
				l[3] = append(l[3], t3.Sub(t2))
			}
		}
		summary := func(system string) IVMLatency {
			l := lat[system]
			return IVMLatency{
				MedianMs: ms(quantile(l[0], 0.5)), P95Ms: ms(quantile(l[0], 0.95)),
				WriteMs: ms(quantile(l[1], 0.5)), MaintainMs: ms(quantile(l[2], 0.5)), ReadMs: ms(quantile(l[3], 0.5)),
				CreateSeconds: created[system+"/"+v.name],
			}
		}
		r := IVMResult{View: v.name, Rows: opts.Rows, Customers: opts.Customers, Updates: opts.Updates,
			Runnel: summary("runnel"), Postgres: summary("postgres"), PostgresVersion: pgVersion, Cores: cores}
		r.SpeedupMedian = r.Postgres.MedianMs / r.Runnel.MedianMs
		r.SpeedupP95 = r.Postgres.P95Ms / r.Runnel.P95Ms
		r.SpeedupMaintain = r.Postgres.MaintainMs / r.Runnel.MaintainMs
		results = append(results, r)
		if opts.JSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(opts.Out, string(b))
			continue
		}
		say("")
		say("%s (%d updates): update -> visible in the view, ms", v.name, opts.Updates)
		say("  %-9s %9s %9s   %s", "system", "median", "p95", "median of: update / flush|refresh / read")
		for _, sys := range []struct {
			name string
			l    IVMLatency
		}{{"runnel", r.Runnel}, {"postgres", r.Postgres}} {
			say("  %-9s %9.1f %9.1f   %.1f / %.1f / %.1f", sys.name, sys.l.MedianMs, sys.l.P95Ms, sys.l.WriteMs, sys.l.MaintainMs, sys.l.ReadMs)
		}
		say("  speedup (postgres / runnel): %.1fx median, %.1fx p95; maintenance step alone (refresh / flush): %.1fx",
			r.SpeedupMedian, r.SpeedupP95, r.SpeedupMaintain)
	}
	return results, nil
}

// readRow runs a one-row query and returns its columns as text.
func readRow(ctx context.Context, conn *pgx.Conn, query string, arg int64) ([]string, error) {
	// Text results, so both systems' answers compare as PostgreSQL prints
	// them whatever binary encoding each chooses.
	rows, err := conn.Query(ctx, query, pgx.QueryResultFormats{pgx.TextFormatCode}, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	n := 0
	for rows.Next() {
		n++
		out = out[:0]
		for _, raw := range rows.RawValues() {
			out = append(out, string(raw))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n != 1 {
		return nil, fmt.Errorf("%d rows; want 1", n)
	}
	return out, nil
}

// quantile is the nearest-rank q-quantile (the median of an even count is
// the mean of the middle two).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if q == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// loadAverage is the 1-, 5- and 15-minute load average (Linux), or "n/a".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}
