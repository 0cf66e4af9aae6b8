package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// `runnel bench tpch` runs TPC-H: the eight tables generated at a scale
// factor (tpch_gen.go) and loaded into Runnel and PostgreSQL with COPY,
// then the 22 queries (tpch_queries.go) on both, each query's results
// compared and its time printed side by side with the ratio, and the
// geometric mean of the ratios. A query Runnel cannot run is reported
// with its SQLSTATE; a result that differs is reported (and counted) as a
// difference, never silently.
//
// Results are read in the text format (simple protocol) and compared cell
// by cell: equal text, or equal numbers (1.50 = 1.5), or — where two
// decimals were printed with different scales, as avg() and division are —
// equal within one unit of the shorter's last digit; float columns within
// a relative 1e-9. Queries whose ORDER BY leaves ties (tpchQuery.Ordered
// false) are compared as sorted row sets.

// TPCHOptions configure RunTPCH.
type TPCHOptions struct {
	Scale float64 // default 0.01
	Seed  uint64
	// Queries names the queries to run ("q1".."q22"; empty: all).
	Queries []string
	// Rounds is the runs per query on each system; the best counts
	// (default 1).
	Rounds int
	// Timeout bounds one run of one query (default 10 minutes).
	Timeout     time.Duration
	PostgresURL string
	JSON        bool
	Out         io.Writer
	Progress    io.Writer
	Log         *slog.Logger
	// BeforeQuery and AfterQuery, when set, run around each of Runnel's
	// runs of a query (profiles).
	BeforeQuery, AfterQuery func(query string, round int)
}

// TPCHResult is one query's outcome.
type TPCHResult struct {
	Query string `json:"query"`
	Rows  int    `json:"rows"`
	// Status is "equal", "differs", "error" (Runnel failed; SQLState and
	// Error say why) or "timeout".
	Status   string `json:"status"`
	SQLState string `json:"sqlstate,omitempty"`
	Error    string `json:"error,omitempty"`
	// Diff describes the first difference when Status is "differs".
	Diff            string  `json:"diff,omitempty"`
	RunnelSeconds   float64 `json:"runnel_seconds"`
	PostgresSeconds float64 `json:"postgres_seconds"`
	// Ratio is PostgresSeconds / RunnelSeconds: above 1 Runnel is faster.
	Ratio float64 `json:"ratio"`
}

// TPCHReport is the whole run.
type TPCHReport struct {
	Scale              float64      `json:"scale"`
	Queries            []TPCHResult `json:"queries"`
	RunnelLoadSeconds  float64      `json:"runnel_load_seconds"`
	PGLoadSeconds      float64      `json:"postgres_load_seconds"`
	LoadRows           int64        `json:"load_rows"`
	GeoMeanRatio       float64      `json:"geomean_ratio"` // over the queries with equal results
	Equal              int          `json:"equal"`
	Differs            int          `json:"differs"`
	Failed             int          `json:"failed"`
	Cores              int          `json:"cores"`
	LoadAvgBefore      string       `json:"load_average_before"`
	LoadAvgAfter       string       `json:"load_average_after"`
	PGVersion          string       `json:"postgres_version"`
	RunnelQuerySeconds float64      `json:"runnel_query_seconds"`
	PGQuerySeconds     float64      `json:"postgres_query_seconds"`
}

// RunTPCH runs the benchmark and writes its report to opts.Out.
func RunTPCH(ctx context.Context, opts TPCHOptions) (*TPCHReport, error) {
	if opts.Scale <= 0 {
		opts.Scale = 0.01
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 1
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	var dummy int64 = 1
	say := ivmDefaults(&dummy, &dummy, &opts.Out, &opts.Log, opts.JSON)
	all := tpchQueries(opts.Scale)
	queries := all
	if len(opts.Queries) > 0 {
		queries = nil
		for _, name := range opts.Queries {
			i := slices.IndexFunc(all, func(q tpchQuery) bool { return strings.EqualFold(q.Name, strings.TrimSpace(name)) })
			if i < 0 {
				return nil, fmt.Errorf("bench tpch: unknown query %q (q1..q22)", name)
			}
			queries = append(queries, all[i])
		}
	}
	peers, err := startPeers(ctx, "tpch", opts.PostgresURL, opts.Log)
	if err != nil {
		return nil, err
	}
	defer peers.close()
	rep := &TPCHReport{Scale: opts.Scale, Cores: runtime.GOMAXPROCS(0), PGVersion: peers.pgVersion, LoadAvgBefore: loadAverage()}
	say("runnel bench tpch: scale factor %g, seed %d, %d queries, best of %d", opts.Scale, opts.Seed, len(queries), opts.Rounds)
	say("PostgreSQL %s; %d cores (GOMAXPROCS %d); load average %s", peers.pgVersion, runtime.NumCPU(), runtime.GOMAXPROCS(0), rep.LoadAvgBefore)

	if err := tpchLoad(ctx, peers, NewTPCHGen(opts.Scale, opts.Seed), rep, say, opts.Progress); err != nil {
		return nil, err
	}

	say("%-4s %8s  %10s %10s %7s  %s", "", "rows", "Runnel s", "PG s", "ratio", "result")
	var logSum float64
	for _, q := range queries {
		r := tpchRun(ctx, peers, q, opts)
		rep.Queries = append(rep.Queries, r)
		switch r.Status {
		case "equal":
			rep.Equal++
			logSum += math.Log(r.Ratio)
			rep.RunnelQuerySeconds += r.RunnelSeconds
			rep.PGQuerySeconds += r.PostgresSeconds
		case "differs":
			rep.Differs++
		default:
			rep.Failed++
		}
		if opts.JSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(opts.Out, string(b))
			continue
		}
		detail := r.Status
		switch r.Status {
		case "differs":
			detail += ": " + r.Diff
		case "error", "timeout":
			detail += fmt.Sprintf(" (SQLSTATE %s): %s", r.SQLState, r.Error)
		}
		if r.RunnelSeconds > 0 {
			say("%-4s %8d  %10.3f %10.3f %6.2fx  %s", r.Query, r.Rows, r.RunnelSeconds, r.PostgresSeconds, r.Ratio, detail)
		} else {
			say("%-4s %8d  %10s %10.3f %7s  %s", r.Query, r.Rows, "-", r.PostgresSeconds, "-", detail)
		}
	}
	if rep.Equal > 0 {
		rep.GeoMeanRatio = math.Exp(logSum / float64(rep.Equal))
	}
	rep.LoadAvgAfter = loadAverage()
	if opts.JSON {
		b, _ := json.Marshal(struct {
			Summary bool `json:"summary"`
			*TPCHReport
		}{true, rep})
		fmt.Fprintln(opts.Out, string(b))
	} else {
		say("%d of %d queries equal to PostgreSQL, %d differ, %d not run by Runnel; total over the equal ones: Runnel %.3fs, PostgreSQL %.3fs",
			rep.Equal, len(queries), rep.Differs, rep.Failed, rep.RunnelQuerySeconds, rep.PGQuerySeconds)
		say("geometric mean of PostgreSQL/Runnel time over the %d equal queries: %.3fx (above 1: Runnel faster)", rep.Equal, rep.GeoMeanRatio)
		say("load average %s (before: %s)", rep.LoadAvgAfter, rep.LoadAvgBefore)
	}
	return rep, nil
}

// tpchLoad creates the tables on both systems and loads the generated
// rows with COPY (text format), in chunks generated once and sent to
// both; then FLUSH on Runnel and ANALYZE on PostgreSQL.
func tpchLoad(ctx context.Context, peers *benchPeers, g *TPCHGen, rep *TPCHReport, say func(string, ...any), progressOut io.Writer) error {
	for _, c := range []struct {
		name string
		conn *pgx.Conn
	}{{"runnel", peers.rw}, {"postgres", peers.pg}} {
		for i := len(TPCHTables) - 1; i >= 0; i-- {
			if _, err := c.conn.Exec(ctx, "DROP TABLE IF EXISTS "+TPCHTables[i]); err != nil {
				return fmt.Errorf("bench tpch: drop %s on %s: %w", TPCHTables[i], c.name, err)
			}
		}
		for _, ddl := range tpchSchema {
			if _, err := c.conn.Exec(ctx, ddl); err != nil {
				return fmt.Errorf("bench tpch: create table on %s: %w", c.name, err)
			}
		}
	}
	var rwTime, pgTime time.Duration
	var buf []byte
	for _, table := range TPCHTables {
		total := g.Rows(table)
		if table == "lineitem" {
			total = g.orders
		}
		// About 100,000 rows per COPY (lineitem: 25,000 orders' lines).
		chunk := int64(100_000)
		if table == "lineitem" {
			chunk = 25_000
		}
		var p *progress
		if progressOut != nil {
			p = newProgress(progressOut, IsTerminal(progressOut), "load "+table, "rows", total)
		}
		var rows int64
		var trw, tpg time.Duration
		for lo := int64(0); lo < total; lo += chunk {
			var n int64
			buf, n = g.Generate(buf[:0], table, lo, min(total, lo+chunk))
			rows += n
			stmt := "COPY " + table + " FROM STDIN"
			start := time.Now()
			if _, err := peers.rw.PgConn().CopyFrom(ctx, bytes.NewReader(buf), stmt); err != nil {
				return fmt.Errorf("bench tpch: COPY %s into Runnel: %w", table, err)
			}
			mid := time.Now()
			if _, err := peers.pg.PgConn().CopyFrom(ctx, bytes.NewReader(buf), stmt); err != nil {
				return fmt.Errorf("bench tpch: COPY %s into PostgreSQL: %w", table, err)
			}
			trw += mid.Sub(start)
			tpg += time.Since(mid)
			if p != nil {
				p.update(min(total, lo+chunk))
			}
		}
		if p != nil {
			p.clear()
		}
		rep.LoadRows += rows
		rwTime += trw
		pgTime += tpg
		say("loaded %-8s %9d rows: Runnel %.2fs, PostgreSQL %.2fs", table, rows, trw.Seconds(), tpg.Seconds())
	}
	start := time.Now()
	if _, err := peers.rw.Exec(ctx, "FLUSH"); err != nil {
		return fmt.Errorf("bench tpch: FLUSH: %w", err)
	}
	rwTime += time.Since(start)
	start = time.Now()
	if _, err := peers.pg.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("bench tpch: ANALYZE: %w", err)
	}
	pgTime += time.Since(start)
	rep.RunnelLoadSeconds, rep.PGLoadSeconds = rwTime.Seconds(), pgTime.Seconds()
	say("loaded %d rows: Runnel %.2fs (COPY + FLUSH), PostgreSQL %.2fs (COPY + ANALYZE)", rep.LoadRows, rwTime.Seconds(), pgTime.Seconds())
	// Let compaction of the load finish so that it does not run during the
	// queries.
	if err := peers.e.settle(ctx, 30*time.Minute); err != nil {
		return err
	}
	if _, err := peers.pg.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("bench tpch: CHECKPOINT: %w", err)
	}
	return nil
}

// tpchRun runs one query on both systems opts.Rounds times and compares
// the first round's results.
func tpchRun(ctx context.Context, peers *benchPeers, q tpchQuery, opts TPCHOptions) TPCHResult {
	r := TPCHResult{Query: q.Name}
	var rwRows, pgRows [][]string
	var rwTypes []uint32
	for round := 1; round <= opts.Rounds; round++ {
		order := []string{"runnel", "postgres"}
		if round%2 == 0 {
			order = []string{"postgres", "runnel"}
		}
		for _, sys := range order {
			if sys == "runnel" && r.Status != "" {
				continue // failed in an earlier round
			}
			conn := peers.pg
			if sys == "runnel" {
				conn = peers.rw
				if opts.BeforeQuery != nil {
					opts.BeforeQuery(q.Name, round)
				}
			}
			qctx, cancel := context.WithTimeout(ctx, opts.Timeout)
			start := time.Now()
			rows, types, err := tpchQueryRows(qctx, conn, q.SQL)
			secs := time.Since(start).Seconds()
			cancel()
			if sys == "runnel" && opts.AfterQuery != nil {
				opts.AfterQuery(q.Name, round)
			}
			if err != nil {
				status, state := "error", ""
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) {
					state = pgErr.Code
				}
				if qctx.Err() != nil {
					status = "timeout"
					err = fmt.Errorf("no result after %v: %w", opts.Timeout, err)
				}
				if sys == "postgres" {
					status = "error"
					err = fmt.Errorf("PostgreSQL: %w", err)
				}
				r.Status, r.SQLState, r.Error = status, state, err.Error()
				if qctx.Err() != nil && sys == "runnel" {
					// The connection may be busy cancelling; start over
					// on a fresh one.
					if c, cerr := peers.e.connect(ctx); cerr == nil {
						peers.rw.Close(context.Background())
						peers.rw = c
					}
				}
				if sys == "postgres" {
					return r
				}
				continue
			}
			if sys == "runnel" {
				if r.RunnelSeconds == 0 || secs < r.RunnelSeconds {
					r.RunnelSeconds = secs
				}
				if rwRows == nil {
					rwRows, rwTypes = rows, types
				}
			} else {
				if r.PostgresSeconds == 0 || secs < r.PostgresSeconds {
					r.PostgresSeconds = secs
				}
				if pgRows == nil {
					pgRows = rows
				}
			}
		}
	}
	r.Rows = len(pgRows)
	if r.Status != "" {
		r.RunnelSeconds = 0
		return r
	}
	r.Ratio = r.PostgresSeconds / r.RunnelSeconds
	if d := tpchCompare(rwRows, pgRows, rwTypes, q.Ordered); d != "" {
		r.Status, r.Diff = "differs", d
		return r
	}
	r.Status = "equal"
	return r
}

// tpchQueryRows runs sql and returns its rows as text (nil for NULL) and
// the columns' type OIDs.
func tpchQueryRows(ctx context.Context, conn *pgx.Conn, sql string) ([][]string, []uint32, error) {
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]string, len(raw))
		for i, v := range raw {
			if v == nil {
				row[i] = "\x00NULL"
			} else {
				row[i] = string(v)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	var types []uint32
	for _, f := range rows.FieldDescriptions() {
		types = append(types, f.DataTypeOID)
	}
	if out == nil {
		out = [][]string{}
	}
	return out, types, nil
}

// tpchCompare returns "" when Runnel's rows match PostgreSQL's, else a
// description of the first difference.
func tpchCompare(rw, pg [][]string, types []uint32, ordered bool) string {
	if len(rw) != len(pg) {
		return fmt.Sprintf("Runnel returned %d rows, PostgreSQL %d", len(rw), len(pg))
	}
	if !ordered {
		sortRows := func(rows [][]string) [][]string {
			s := slices.Clone(rows)
			slices.SortFunc(s, func(a, b []string) int { return slices.Compare(a, b) })
			return s
		}
		rw, pg = sortRows(rw), sortRows(pg)
	}
	for i := range rw {
		if len(rw[i]) != len(pg[i]) {
			return fmt.Sprintf("row %d: Runnel has %d columns, PostgreSQL %d", i+1, len(rw[i]), len(pg[i]))
		}
		for j := range rw[i] {
			isFloat := j < len(types) && (types[j] == 700 || types[j] == 701)
			if !tpchCellEqual(rw[i][j], pg[i][j], isFloat) {
				return fmt.Sprintf("row %d column %d: Runnel %q, PostgreSQL %q (Runnel row %q, PostgreSQL row %q)",
					i+1, j+1, rw[i][j], pg[i][j], rw[i], pg[i])
			}
		}
	}
	return ""
}

// tpchCellEqual compares two cells' text (see the comment at the top).
func tpchCellEqual(a, b string, isFloat bool) bool {
	if a == b {
		return true
	}
	x, okx := new(big.Rat).SetString(a)
	y, oky := new(big.Rat).SetString(b)
	if !okx || !oky {
		return false
	}
	if x.Cmp(y) == 0 {
		return true
	}
	diff := new(big.Rat).Sub(x, y)
	diff.Abs(diff)
	if isFloat || strings.ContainsAny(a+b, "eE") {
		fx, _ := x.Float64()
		fy, _ := y.Float64()
		return math.Abs(fx-fy) <= 1e-9*math.Max(math.Abs(fx), math.Abs(fy))
	}
	sa, sb := decimalScale(a), decimalScale(b)
	if sa == sb {
		return false
	}
	// One unit in the last place of the shorter representation.
	ulp := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(min(sa, sb))), nil))
	return diff.Cmp(ulp) <= 0
}

func decimalScale(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}
