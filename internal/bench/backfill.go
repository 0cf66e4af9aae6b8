package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// `runnel bench backfill` measures CREATE MATERIALIZED VIEW over tables
// that already hold their rows (Runnel's backfill) against PostgreSQL's
// CREATE MATERIALIZED VIEW on the same rows, in the same run: the data set
// and the two views of `runnel bench ivm` (a join, an aggregation) and an
// aggregation of min/max per customer. Each round creates every view on
// both systems, alternating which goes first, then drops them; the best
// round of each counts. After the first round the views' contents are
// compared (an order-independent digest of every row's text): a fast but
// wrong view fails the run.
//
// Runnel's CREATE returns once the backfill is done and the epoch holding
// it has committed (I7), so the time covers the whole view. Before each
// round Runnel waits until its compaction is idle and PostgreSQL runs
// CHECKPOINT, so neither pays for the other's or its own earlier writes.

// BackfillOptions configure RunBackfill.
type BackfillOptions struct {
	Rows      int64 // orders (default 1,000,000)
	Customers int64 // customers (default Rows/10)
	Rounds    int   // default 3
	Seed      uint64
	// Views names the views to create (empty: all of BackfillViews).
	Views []string
	// PostgresURL names the PostgreSQL database to compare with; empty
	// starts a throwaway cluster (pgtest).
	PostgresURL string
	JSON        bool
	Out         io.Writer
	Progress    io.Writer
	Log         *slog.Logger
	// BeforeCreate and AfterCreate, when set, run around each of Runnel's
	// CREATE statements (profiles).
	BeforeCreate, AfterCreate func(view string, round int)
}

// BackfillResult is one view's measurement.
type BackfillResult struct {
	View string `json:"view"`
	Rows int64  `json:"rows"`
	// RunnelSeconds and PostgresSeconds are the best rounds' CREATE
	// times; RunnelCPUSeconds the Runnel process's CPU time in its best
	// round.
	RunnelSeconds    float64 `json:"runnel_seconds"`
	RunnelCPUSeconds float64 `json:"runnel_cpu_seconds"`
	PostgresSeconds  float64 `json:"postgres_seconds"`
	// Ratio is PostgresSeconds / RunnelSeconds: above 1 Runnel is faster.
	Ratio     float64 `json:"ratio"`
	ViewRows  int64   `json:"view_rows"`
	Equal     bool    `json:"equal"`
	Rounds    int     `json:"rounds"`
	Cores     int     `json:"cores"`
	LoadAvg   string  `json:"load_average"`
	PGVersion string  `json:"postgres_version"`
}

// BackfillViews are the views `runnel bench backfill` creates.
var BackfillViews = append(append([]ivmView(nil), ivmViews...), ivmView{
	name: "customer_extremes",
	sql:  `SELECT customer_id, min(amount) AS lo, max(amount) AS hi, count(*) AS n FROM orders GROUP BY customer_id`,
})

// RunBackfill runs the benchmark and writes its report to opts.Out.
func RunBackfill(ctx context.Context, opts BackfillOptions) ([]BackfillResult, error) {
	say := ivmDefaults(&opts.Rows, &opts.Customers, &opts.Out, &opts.Log, opts.JSON)
	if opts.Rounds <= 0 {
		opts.Rounds = 3
	}
	var views []ivmView
	for _, v := range BackfillViews {
		if len(opts.Views) == 0 || containsFold(opts.Views, v.name) {
			views = append(views, v)
		}
	}
	if len(views) == 0 {
		return nil, fmt.Errorf("bench backfill: no view among %v", opts.Views)
	}

	peers, err := startPeers(ctx, "backfill", opts.PostgresURL, opts.Log)
	if err != nil {
		return nil, err
	}
	defer peers.close()
	pgConn, rwConn, pgVersion, e := peers.pg, peers.rw, peers.pgVersion, peers.e

	say("runnel bench backfill: %d orders, %d customers, %d rounds", opts.Rows, opts.Customers, opts.Rounds)
	say("PostgreSQL %s (work_mem %s); %d cores (GOMAXPROCS %d); load average %s", pgVersion, ivmWorkMem, runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAverage())
	d := newIVMData(opts.Rows, opts.Customers, opts.Seed)
	conns := map[string]*pgx.Conn{"runnel": rwConn, "postgres": pgConn}
	for _, name := range []string{"runnel", "postgres"} {
		c := conns[name]
		for _, stmt := range strings.Split(ivmSchema, ";") {
			if _, err := c.Exec(ctx, stmt); err != nil {
				return nil, fmt.Errorf("bench backfill: schema on %s: %w", name, err)
			}
		}
		start := time.Now()
		if err := d.load(ctx, c, name, opts.Progress); err != nil {
			return nil, err
		}
		say("%-8s loaded %d rows in %.1fs", name, opts.Rows+opts.Customers, time.Since(start).Seconds())
	}
	if _, err := pgConn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, fmt.Errorf("bench backfill: VACUUM ANALYZE: %w", err)
	}

	quiet := func() error {
		if err := e.settle(ctx, 10*time.Minute); err != nil {
			return err
		}
		_, err := pgConn.Exec(ctx, "CHECKPOINT")
		return err
	}
	results := make([]BackfillResult, len(views))
	for i, v := range views {
		results[i] = BackfillResult{View: v.name, Rows: opts.Rows, Rounds: opts.Rounds, Cores: runtime.GOMAXPROCS(0), PGVersion: pgVersion}
	}
	for round := 1; round <= opts.Rounds; round++ {
		for i, v := range views {
			order := []string{"runnel", "postgres"}
			if (round+i)%2 == 0 {
				order = []string{"postgres", "runnel"}
			}
			for _, name := range order {
				if err := quiet(); err != nil {
					return nil, fmt.Errorf("bench backfill: settle: %w", err)
				}
				c := conns[name]
				if name == "runnel" && opts.BeforeCreate != nil {
					opts.BeforeCreate(v.name, round)
				}
				runtime.GC()
				start, cpu0 := time.Now(), processCPU()
				if _, err := c.Exec(ctx, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", v.name, v.sql)); err != nil {
					return nil, fmt.Errorf("bench backfill: create view %s on %s: %w", v.name, name, err)
				}
				secs, cpu := time.Since(start).Seconds(), (processCPU() - cpu0).Seconds()
				if name == "runnel" && opts.AfterCreate != nil {
					opts.AfterCreate(v.name, round)
				}
				r := &results[i]
				if name == "runnel" {
					if r.RunnelSeconds == 0 || secs < r.RunnelSeconds {
						r.RunnelSeconds, r.RunnelCPUSeconds = secs, cpu
					}
					say("round %d  %-8s %-18s %6.2fs (%.2f CPU s)", round, name, v.name, secs, cpu)
				} else {
					if r.PostgresSeconds == 0 || secs < r.PostgresSeconds {
						r.PostgresSeconds = secs
					}
					say("round %d  %-8s %-18s %6.2fs", round, name, v.name, secs)
				}
			}
			if round == 1 {
				rn, rd, err := viewDigest(ctx, rwConn, v.name)
				if err != nil {
					return nil, err
				}
				pn, pd, err := viewDigest(ctx, pgConn, v.name)
				if err != nil {
					return nil, err
				}
				results[i].ViewRows, results[i].Equal = rn, rn == pn && rd == pd
				if !results[i].Equal {
					return nil, fmt.Errorf("bench backfill: view %s differs: Runnel %d rows (digest %x), PostgreSQL %d rows (digest %x)", v.name, rn, rd, pn, pd)
				}
			}
			for _, name := range order {
				if _, err := conns[name].Exec(ctx, "DROP MATERIALIZED VIEW "+v.name); err != nil {
					return nil, fmt.Errorf("bench backfill: drop view %s on %s: %w", v.name, name, err)
				}
			}
		}
	}
	la := loadAverage()
	for i := range results {
		r := &results[i]
		r.Ratio = r.PostgresSeconds / r.RunnelSeconds
		r.LoadAvg = la
		if opts.JSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(opts.Out, string(b))
			continue
		}
		say("%-18s %d view rows, equal: Runnel %.2fs (%.2f CPU s), PostgreSQL %.2fs: %.2fx PostgreSQL's speed (best of %d)",
			r.View, r.ViewRows, r.RunnelSeconds, r.RunnelCPUSeconds, r.PostgresSeconds, r.Ratio, r.Rounds)
	}
	say("load average %s", la)
	return results, nil
}

// viewDigest reads every row of view as text and returns the row count
// and an order-independent digest (the sum of each row's FNV-64a).
func viewDigest(ctx context.Context, conn *pgx.Conn, view string) (int64, uint64, error) {
	rows, err := conn.Query(ctx, "SELECT * FROM "+view, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return 0, 0, fmt.Errorf("bench backfill: read %s: %w", view, err)
	}
	defer rows.Close()
	var n int64
	var sum uint64
	h := fnv.New64a()
	for rows.Next() {
		h.Reset()
		for _, v := range rows.RawValues() {
			h.Write(v)
			h.Write([]byte{0})
		}
		sum += h.Sum64()
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("bench backfill: read %s: %w", view, err)
	}
	return n, sum, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(strings.TrimSpace(x), s) {
			return true
		}
	}
	return false
}
