package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/server"
)

// ViewsOptions configure `runnel bench views`.
//
// Each scenario runs on a fresh embedded server: it creates its tables
// and views first, then feeds Rows rows into a table with INSERT …
// SELECT … FROM generate_series in batches of Batch rows (the rows are
// generated server-side, so the client and the wire do not bound the
// rate; every row still goes through the table's DML path, as COPY's
// rows do), and ends with FLUSH. The time is from the first INSERT until
// that FLUSH has returned, i.e. until every view reflects every row.
type ViewsOptions struct {
	// Scenarios to run: "table" (no view: the cost of the table alone),
	// "agg" and "join". Empty: all three.
	Scenarios []string
	Rows      int64
	// Groups is the number of distinct group keys of the aggregation.
	Groups int64
	// DimRows is the size of the join's other (dimension) side.
	DimRows int64
	// Batch is the number of rows per INSERT statement.
	Batch int64
	JSON  bool
	// Progress, when set, receives a line per million rows inserted.
	Progress io.Writer
	// Config is the server configuration (DataDir and Logger are filled
	// in per scenario).
	Config server.Config
	Out    io.Writer
	Log    *slog.Logger
}

// ViewsResult is one scenario's measurement.
type ViewsResult struct {
	Scenario      string  `json:"scenario"`
	Rows          int64   `json:"rows"`
	Seconds       float64 `json:"seconds"`
	RowsPerSec    float64 `json:"rows_per_sec"`
	RowsPerSecCPU float64 `json:"rows_per_sec_per_core"`
	Cores         int     `json:"cores"`
	// CPUSeconds is the process's user+system CPU time over the measured
	// interval; RowsPerCPUSec = Rows / CPUSeconds is the rate per fully
	// used core, which a loaded machine distorts less than wall time.
	CPUSeconds    float64 `json:"cpu_seconds"`
	RowsPerCPUSec float64 `json:"rows_per_cpu_sec"`
	// PeakRSSBytes is the process's peak resident set size during the
	// scenario (VmHWM, reset before each scenario where the kernel allows).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PeakRSSReset is false when the peak could not be reset before the
	// scenario, so PeakRSSBytes covers the whole process life so far.
	PeakRSSReset bool `json:"peak_rss_reset"`
	// ViewRows is the row count of the view at the end (a sanity check).
	ViewRows int64  `json:"view_rows"`
	Error    string `json:"error,omitempty"`
}

// viewsScenario is one workload: setup statements (tables, dimension
// data, views), the INSERT feeding the measured rows, and a check query.
type viewsScenario struct {
	name  string
	setup func(o ViewsOptions) []string
	// insert returns the statement inserting rows [lo, hi].
	insert func(o ViewsOptions, lo, hi int64) string
	check  string
}

var viewsScenarios = []viewsScenario{
	{
		name: "table",
		setup: func(ViewsOptions) []string {
			return []string{`CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)`}
		},
		insert: func(o ViewsOptions, lo, hi int64) string {
			return fmt.Sprintf(`INSERT INTO t SELECT i, i %% %d, (i * 7919) %% 100003 FROM generate_series(%d::bigint, %d::bigint) g(i)`, o.Groups, lo, hi)
		},
		check: `SELECT count(*) FROM t`,
	},
	{
		name: "agg",
		setup: func(ViewsOptions) []string {
			return []string{
				`CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)`,
				`CREATE MATERIALIZED VIEW agg AS SELECT k, count(*) AS c, sum(v) AS s, min(v) AS mn, max(v) AS mx, avg(v) AS a FROM t GROUP BY k`,
			}
		},
		insert: func(o ViewsOptions, lo, hi int64) string {
			return fmt.Sprintf(`INSERT INTO t SELECT i, i %% %d, (i * 7919) %% 100003 FROM generate_series(%d::bigint, %d::bigint) g(i)`, o.Groups, lo, hi)
		},
		check: `SELECT count(*) FROM agg`,
	},
	{
		name: "join",
		setup: func(o ViewsOptions) []string {
			return []string{
				`CREATE TABLE dim (id BIGINT PRIMARY KEY, name VARCHAR, cat BIGINT)`,
				fmt.Sprintf(`INSERT INTO dim SELECT i, 'name-' || i::varchar, i %% 100 FROM generate_series(0::bigint, %d::bigint) g(i)`, o.DimRows-1),
				`FLUSH`,
				`CREATE TABLE fact (id BIGINT PRIMARY KEY, dim_id BIGINT, amount BIGINT)`,
				`CREATE MATERIALIZED VIEW j AS SELECT f.id, f.amount, d.name, d.cat FROM fact f JOIN dim d ON f.dim_id = d.id`,
			}
		},
		insert: func(o ViewsOptions, lo, hi int64) string {
			return fmt.Sprintf(`INSERT INTO fact SELECT i, (i * 7919) %% %d, i %% 1000 FROM generate_series(%d::bigint, %d::bigint) g(i)`, o.DimRows, lo, hi)
		},
		check: `SELECT count(*) FROM j`,
	},
}

// RunViews runs the view-maintenance throughput scenarios.
func RunViews(ctx context.Context, opts ViewsOptions) ([]ViewsResult, error) {
	if opts.Rows <= 0 {
		opts.Rows = 10_000_000
	}
	if opts.Groups <= 0 {
		opts.Groups = 100_000
	}
	if opts.DimRows <= 0 {
		opts.DimRows = 100_000
	}
	if opts.Batch <= 0 {
		opts.Batch = 100_000
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	want := map[string]bool{}
	for _, s := range opts.Scenarios {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			want[s] = true
		}
	}
	for s := range want {
		known := false
		for _, sc := range viewsScenarios {
			known = known || sc.name == s
		}
		if !known {
			return nil, fmt.Errorf("bench views: unknown scenario %q (want table, agg or join)", s)
		}
	}
	var results []ViewsResult
	for _, sc := range viewsScenarios {
		if len(want) > 0 && !want[sc.name] {
			continue
		}
		r := runViewsScenario(ctx, sc, opts)
		results = append(results, r)
		if opts.JSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(opts.Out, string(b))
		} else if r.Error != "" {
			fmt.Fprintf(opts.Out, "%-5s  error: %s\n", r.Scenario, r.Error)
		} else {
			fmt.Fprintf(opts.Out, "%-5s  %d rows in %.2fs: %.0f rows/s, %.0f rows/s per core (%d cores); %.1f CPU s, %.0f rows per CPU s; peak RSS %.0f MiB; view rows %d\n",
				r.Scenario, r.Rows, r.Seconds, r.RowsPerSec, r.RowsPerSecCPU, r.Cores, r.CPUSeconds, r.RowsPerCPUSec,
				float64(r.PeakRSSBytes)/(1<<20), r.ViewRows)
		}
	}
	return results, nil
}

func runViewsScenario(ctx context.Context, sc viewsScenario, opts ViewsOptions) ViewsResult {
	cores := runtime.GOMAXPROCS(0)
	res := ViewsResult{Scenario: sc.name, Rows: opts.Rows, Cores: cores}
	fail := func(err error) ViewsResult {
		res.Error = err.Error()
		return res
	}
	dir, err := os.MkdirTemp("", "runnel-bench-views-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	cfg := opts.Config
	cfg.DataDir = dir
	cfg.Logger = opts.Log
	if cfg.BarrierInterval <= 0 {
		cfg.BarrierInterval = time.Second
	}
	// Start from a clean heap so one scenario's garbage does not count
	// towards the next one's peak.
	runtime.GC()
	res.PeakRSSReset = resetPeakRSS()
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	go srv.Serve(ln)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://root@%s/dev?sslmode=disable", ln.Addr()))
	if err != nil {
		return fail(err)
	}
	defer conn.Close(context.Background())
	for _, stmt := range sc.setup(opts) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fail(fmt.Errorf("%s: %w", firstLine(stmt), err))
		}
	}
	start, cpu0 := time.Now(), processCPU()
	for lo := int64(0); lo < opts.Rows; lo += opts.Batch {
		hi := min(lo+opts.Batch, opts.Rows) - 1
		if _, err := conn.Exec(ctx, sc.insert(opts, lo, hi)); err != nil {
			return fail(fmt.Errorf("insert rows %d..%d: %w", lo, hi, err))
		}
		if opts.Progress != nil && (hi+1)/1_000_000 != lo/1_000_000 {
			fmt.Fprintf(opts.Progress, "%s: %d rows inserted, %.0fs, peak RSS %d MiB\n", sc.name, hi+1, time.Since(start).Seconds(), peakRSS()>>20)
		}
	}
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		return fail(err)
	}
	res.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = (processCPU() - cpu0).Seconds()
	if res.CPUSeconds > 0 {
		res.RowsPerCPUSec = float64(opts.Rows) / res.CPUSeconds
	}
	res.RowsPerSec = float64(opts.Rows) / res.Seconds
	res.RowsPerSecCPU = res.RowsPerSec / float64(cores)
	if err := conn.QueryRow(ctx, sc.check).Scan(&res.ViewRows); err != nil {
		return fail(fmt.Errorf("%s: %w", sc.check, err))
	}
	res.PeakRSSBytes = peakRSS()
	return res
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the kernel's peak-RSS mark of this process
// (writing 5 to /proc/self/clear_refs, Linux ≥ 4.0); false when it
// cannot.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS returns VmHWM from /proc/self/status in bytes (0 when unknown).
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmHWM:") {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "VmHWM:"))
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
