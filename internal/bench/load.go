package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// `runnel bench load` measures bulk loading: the data set of `runnel bench
// ivm` (orders and customers) loaded into empty tables on Runnel and on
// PostgreSQL in the same run, through each bulk path a client uses:
//
//   - text, csv: COPY ... FROM STDIN in that format (psql's \copy),
//   - binary: COPY ... (FORMAT binary), which pgx's CopyFrom and most
//     drivers' bulk APIs send,
//   - insert: multi-row INSERT ... VALUES statements of loadInsertRows rows,
//   - insert-select: INSERT INTO orders SELECT ... FROM generate_series,
//     the rows computed by the server.
//
// Rows go in batches of copyBatch per statement on both systems (as `bench
// ivm` loads). Runnel's time ends with a FLUSH, so it covers the commit of
// every row (I7: acknowledged means durable); PostgreSQL's COPY returns
// once its transaction committed. Each round drops and recreates the
// tables, alternating which system goes first; the best round counts.
// After the first round the tables' contents are compared (an
// order-independent digest of every row's text) and the run fails if they
// differ.

// LoadFormats are the load paths `runnel bench load` knows.
var LoadFormats = []string{"text", "csv", "binary", "insert", "insert-select"}

// loadInsertRows is the rows per multi-row INSERT statement.
const loadInsertRows = 1000

// LoadOptions configure RunLoad.
type LoadOptions struct {
	Rows      int64 // orders (default 1,000,000)
	Customers int64 // customers (default Rows/10)
	Rounds    int   // default 3
	Seed      uint64
	// Formats names the load paths (empty: text and binary).
	Formats     []string
	PostgresURL string
	JSON        bool
	Out         io.Writer
	Progress    io.Writer
	Log         *slog.Logger
	// BeforeLoad and AfterLoad, when set, run around each of Runnel's
	// loads (profiles).
	BeforeLoad, AfterLoad func(format string, round int)
}

// LoadResult is one load path's measurement.
type LoadResult struct {
	Format string `json:"format"`
	Rows   int64  `json:"rows"` // rows loaded (both tables)
	// RunnelSeconds and PostgresSeconds are the best rounds' times;
	// RunnelCPUSeconds the Runnel process's CPU time in its best round.
	RunnelSeconds    float64 `json:"runnel_seconds"`
	RunnelCPUSeconds float64 `json:"runnel_cpu_seconds"`
	PostgresSeconds  float64 `json:"postgres_seconds"`
	// PostgresCPUSeconds is the CPU time of PostgreSQL's backend process
	// in its best round (0 when it cannot be read: a remote server).
	PostgresCPUSeconds float64 `json:"postgres_cpu_seconds"`
	RunnelRowsPerSec   float64 `json:"runnel_rows_per_second"`
	PGRowsPerSec       float64 `json:"postgres_rows_per_second"`
	// Ratio is PostgresSeconds / RunnelSeconds: above 1 Runnel is faster.
	Ratio     float64 `json:"ratio"`
	Equal     bool    `json:"equal"`
	Rounds    int     `json:"rounds"`
	Cores     int     `json:"cores"`
	LoadAvg   string  `json:"load_average"`
	PGVersion string  `json:"postgres_version"`
}

// RunLoad runs the benchmark and writes its report to opts.Out.
func RunLoad(ctx context.Context, opts LoadOptions) ([]LoadResult, error) {
	say := ivmDefaults(&opts.Rows, &opts.Customers, &opts.Out, &opts.Log, opts.JSON)
	if opts.Rounds <= 0 {
		opts.Rounds = 3
	}
	if len(opts.Formats) == 0 {
		opts.Formats = []string{"text", "binary"}
	}
	for _, f := range opts.Formats {
		if !containsFold(LoadFormats, f) {
			return nil, fmt.Errorf("bench load: unknown format %q (known: %s)", f, strings.Join(LoadFormats, ", "))
		}
	}
	peers, err := startPeers(ctx, "load", opts.PostgresURL, opts.Log)
	if err != nil {
		return nil, err
	}
	defer peers.close()
	conns := map[string]*pgx.Conn{"runnel": peers.rw, "postgres": peers.pg}
	var pgPID int
	if err := peers.pg.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pgPID); err != nil {
		return nil, fmt.Errorf("bench load: pg_backend_pid: %w", err)
	}

	say("runnel bench load: %d orders, %d customers, %d rounds, formats %s", opts.Rows, opts.Customers, opts.Rounds, strings.Join(opts.Formats, ","))
	say("PostgreSQL %s; %d cores (GOMAXPROCS %d); load average %s", peers.pgVersion, runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAverage())
	d := newIVMData(opts.Rows, opts.Customers, opts.Seed)
	results := make([]LoadResult, len(opts.Formats))
	for i, f := range opts.Formats {
		results[i] = LoadResult{Format: strings.ToLower(strings.TrimSpace(f)), Rows: opts.Rows + opts.Customers,
			Rounds: opts.Rounds, Cores: runtime.GOMAXPROCS(0), PGVersion: peers.pgVersion}
		if results[i].Format == "insert-select" {
			results[i].Rows = opts.Rows
		}
	}
	for round := 1; round <= opts.Rounds; round++ {
		for i := range results {
			r := &results[i]
			order := []string{"runnel", "postgres"}
			if (round+i)%2 == 0 {
				order = []string{"postgres", "runnel"}
			}
			for _, name := range order {
				c := conns[name]
				if err := loadReset(ctx, c, name); err != nil {
					return nil, err
				}
				if name == "runnel" {
					if err := peers.e.settle(ctx, 10*time.Minute); err != nil {
						return nil, err
					}
				} else if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
					return nil, fmt.Errorf("bench load: CHECKPOINT: %w", err)
				}
				if name == "runnel" && opts.BeforeLoad != nil {
					opts.BeforeLoad(r.Format, round)
				}
				runtime.GC()
				start, cpu0, pgCPU0 := time.Now(), processCPU(), pidCPU(pgPID)
				if err := d.loadAs(ctx, c, name, r.Format, opts.Progress); err != nil {
					return nil, err
				}
				flushStart := time.Now()
				if name == "runnel" {
					if _, err := c.Exec(ctx, "FLUSH"); err != nil {
						return nil, fmt.Errorf("bench load: FLUSH: %w", err)
					}
				}
				secs, cpu := time.Since(start).Seconds(), (processCPU() - cpu0).Seconds()
				flushSecs := time.Since(flushStart).Seconds()
				pgCPU := (pidCPU(pgPID) - pgCPU0).Seconds()
				if name == "runnel" && opts.AfterLoad != nil {
					opts.AfterLoad(r.Format, round)
				}
				if name == "runnel" {
					if r.RunnelSeconds == 0 || secs < r.RunnelSeconds {
						r.RunnelSeconds, r.RunnelCPUSeconds = secs, cpu
					}
					say("round %d  %-8s %-14s %6.2fs (%.2f CPU s, FLUSH %.2fs) %9.0f rows/s", round, name, r.Format, secs, cpu, flushSecs, float64(r.Rows)/secs)
				} else {
					if r.PostgresSeconds == 0 || secs < r.PostgresSeconds {
						r.PostgresSeconds, r.PostgresCPUSeconds = secs, pgCPU
					}
					say("round %d  %-8s %-14s %6.2fs (backend %.2f CPU s) %9.0f rows/s", round, name, r.Format, secs, pgCPU, float64(r.Rows)/secs)
				}
			}
			if round == 1 {
				tables := []string{"customers", "orders"}
				if r.Format == "insert-select" {
					tables = []string{"orders"}
				}
				r.Equal = true
				for _, t := range tables {
					rn, rd, err := viewDigest(ctx, conns["runnel"], t)
					if err != nil {
						return nil, err
					}
					pn, pd, err := viewDigest(ctx, conns["postgres"], t)
					if err != nil {
						return nil, err
					}
					if rn != pn || rd != pd {
						return nil, fmt.Errorf("bench load: %s after %s load differs: Runnel %d rows (digest %x), PostgreSQL %d rows (digest %x)", t, r.Format, rn, rd, pn, pd)
					}
				}
			}
		}
	}
	la := loadAverage()
	for i := range results {
		r := &results[i]
		r.Ratio = r.PostgresSeconds / r.RunnelSeconds
		r.RunnelRowsPerSec = float64(r.Rows) / r.RunnelSeconds
		r.PGRowsPerSec = float64(r.Rows) / r.PostgresSeconds
		r.LoadAvg = la
		if opts.JSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(opts.Out, string(b))
			continue
		}
		say("%-14s %d rows, equal: Runnel %.2fs (%.2f CPU s, %.0f rows/s), PostgreSQL %.2fs (backend %.2f CPU s, %.0f rows/s): %.2fx PostgreSQL's speed (best of %d)",
			r.Format, r.Rows, r.RunnelSeconds, r.RunnelCPUSeconds, r.RunnelRowsPerSec, r.PostgresSeconds, r.PostgresCPUSeconds, r.PGRowsPerSec, r.Ratio, r.Rounds)
	}
	say("load average %s", la)
	return results, nil
}

// loadReset drops and recreates the benchmark's tables on conn.
func loadReset(ctx context.Context, conn *pgx.Conn, system string) error {
	for _, stmt := range append([]string{"DROP TABLE IF EXISTS orders", "DROP TABLE IF EXISTS customers"}, strings.Split(ivmSchema, ";")...) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("bench load: %s on %s: %w", strings.TrimSpace(stmt), system, err)
		}
	}
	return nil
}

// loadAs loads the data set through one load path.
func (d *ivmData) loadAs(ctx context.Context, conn *pgx.Conn, system, format string, progressOut io.Writer) error {
	switch format {
	case "text":
		return d.load(ctx, conn, system, progressOut)
	case "csv":
		return d.loadCSV(ctx, conn, system)
	case "binary":
		return d.loadBinary(ctx, conn, system)
	case "insert":
		return d.loadInsert(ctx, conn, system)
	case "insert-select":
		// The same amounts and statuses as the generated rows would need
		// mix64 in SQL; a simple arithmetic data set of the same shape.
		for lo := int64(0); lo < d.rows; lo += copyBatch {
			q := fmt.Sprintf(`INSERT INTO orders SELECT i, i %% %d, i %% 1000 + 1, (ARRAY['open','paid','shipped'])[i %% 3 + 1] FROM generate_series(%d, %d) g(i)`,
				d.customers, lo, min(d.rows, lo+copyBatch)-1)
			if _, err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("bench load: INSERT ... SELECT into %s: %w", system, err)
			}
		}
		return nil
	}
	return fmt.Errorf("bench load: unknown format %q", format)
}

func (d *ivmData) customerRow(c int64) []any {
	return []any{c, d.region(c), d.name(c)}
}

func (d *ivmData) orderRow(id int64) []any {
	return []any{id, d.customerOf(id), d.amount[id], ivmStatuses[id%int64(len(ivmStatuses))]}
}

// loadCSV copies both tables as CSV, quoting every text field.
func (d *ivmData) loadCSV(ctx context.Context, conn *pgx.Conn, system string) error {
	var buf bytes.Buffer
	copyRows := func(table string, n int64, row func(int64) []any) error {
		for lo := int64(0); lo < n; lo += copyBatch {
			buf.Reset()
			for i := lo; i < min(n, lo+copyBatch); i++ {
				for j, v := range row(i) {
					if j > 0 {
						buf.WriteByte(',')
					}
					switch v := v.(type) {
					case int64:
						buf.WriteString(strconv.FormatInt(v, 10))
					case string:
						buf.WriteString(strconv.Quote(v))
					}
				}
				buf.WriteByte('\n')
			}
			if _, err := conn.PgConn().CopyFrom(ctx, &buf, "COPY "+table+" FROM STDIN (FORMAT csv)"); err != nil {
				return fmt.Errorf("bench load: COPY %s (csv) into %s: %w", table, system, err)
			}
		}
		return nil
	}
	if err := copyRows("customers", d.customers, d.customerRow); err != nil {
		return err
	}
	return copyRows("orders", d.rows, d.orderRow)
}

// loadBinary copies both tables with pgx's CopyFrom (binary COPY).
func (d *ivmData) loadBinary(ctx context.Context, conn *pgx.Conn, system string) error {
	copyRows := func(table string, cols []string, n int64, row func(int64) []any) error {
		for lo := int64(0); lo < n; lo += copyBatch {
			hi := min(n, lo+copyBatch)
			i := lo - 1
			src := pgx.CopyFromFunc(func() ([]any, error) {
				if i++; i >= hi {
					return nil, nil
				}
				return row(i), nil
			})
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{table}, cols, src); err != nil {
				return fmt.Errorf("bench load: COPY %s (binary) into %s: %w", table, system, err)
			}
		}
		return nil
	}
	if err := copyRows("customers", []string{"id", "region", "name"}, d.customers, d.customerRow); err != nil {
		return err
	}
	return copyRows("orders", []string{"id", "customer_id", "amount", "status"}, d.rows, d.orderRow)
}

// loadInsert loads both tables with multi-row INSERT ... VALUES statements
// (literals, simple protocol).
func (d *ivmData) loadInsert(ctx context.Context, conn *pgx.Conn, system string) error {
	var b []byte
	insertRows := func(table string, n int64, row func(int64) []any) error {
		for lo := int64(0); lo < n; lo += loadInsertRows {
			b = append(b[:0], "INSERT INTO "+table+" VALUES "...)
			for i := lo; i < min(n, lo+loadInsertRows); i++ {
				if i > lo {
					b = append(b, ',')
				}
				b = append(b, '(')
				for j, v := range row(i) {
					if j > 0 {
						b = append(b, ',')
					}
					switch v := v.(type) {
					case int64:
						b = strconv.AppendInt(b, v, 10)
					case string:
						b = append(append(append(b, '\''), v...), '\'')
					}
				}
				b = append(b, ')')
			}
			if _, err := conn.Exec(ctx, string(b), pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("bench load: INSERT into %s on %s: %w", table, system, err)
			}
		}
		return nil
	}
	if err := insertRows("customers", d.customers, d.customerRow); err != nil {
		return err
	}
	return insertRows("orders", d.rows, d.orderRow)
}

// pidCPU returns the user + system CPU time of process pid (0 when
// /proc cannot tell: another host).
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (in parentheses, which may hold spaces):
	// state is field 3, utime 14, stime 15, in clock ticks (100 Hz).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}
