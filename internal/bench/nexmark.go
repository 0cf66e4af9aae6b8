package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/connector/nexmark"
	"github.com/runneldb/runnel/internal/server"
)

// nexmarkTables declares the three nexmark sources in the column order of
// the specification.
var nexmarkTables = map[string]string{
	"person": `person (id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR, city VARCHAR,
		state VARCHAR, date_time TIMESTAMP, extra VARCHAR)`,
	"auction": `auction (id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, reserve BIGINT,
		date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR)`,
	"bid": `bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP,
		extra VARCHAR)`,
}

// NexmarkQuery is one standard query, in the SQL RisingWave's benchmark
// uses (adapted only where Runnel's names differ).
type NexmarkQuery struct {
	Name   string
	Tables []string
	SQL    string
}

// NexmarkQueries are q0–q8.
var NexmarkQueries = []NexmarkQuery{
	{"q0", []string{"bid"}, `SELECT auction, bidder, price, date_time FROM bid`},
	{"q1", []string{"bid"}, `SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid`},
	{"q2", []string{"bid"}, `SELECT auction, price FROM bid WHERE auction = 1007 OR auction = 1020 OR auction = 2001 OR auction = 2019 OR auction = 2087`},
	{"q3", []string{"auction", "person"}, `SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
		WHERE A.category = 10 AND (P.state = 'or' OR P.state = 'id' OR P.state = 'ca')`},
	{"q4", []string{"auction", "bid"}, `SELECT Q.category, AVG(Q.final) AS avg FROM (
		SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
		WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
		GROUP BY A.id, A.category) Q GROUP BY Q.category`},
	{"q5", []string{"bid"}, `SELECT AuctionBids.auction, AuctionBids.num FROM (
		SELECT bid.auction, count(*) AS num, window_start AS starttime
		FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
		GROUP BY window_start, bid.auction) AS AuctionBids
		JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime_c FROM (
			SELECT count(*) AS num, window_start AS starttime_c
			FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
			GROUP BY bid.auction, window_start) AS CountBids
		GROUP BY CountBids.starttime_c) AS MaxBids
		ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn`},
	// q6 orders the winning bid by price and then date_time: the
	// standard orders by price alone, so an auction with two top bids of
	// the same price has no single answer. With the tie broken (bids of a
	// stream never share a date_time at the default rates) the query is
	// deterministic and can be checked against PostgreSQL.
	{"q6", []string{"auction", "bid"}, `SELECT Q.seller, AVG(Q.final) OVER
			(PARTITION BY Q.seller ORDER BY Q.date_time ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg
		FROM (SELECT ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price DESC, B.date_time) AS rank,
				A.seller, B.price AS final, B.date_time
			FROM auction AS A, bid AS B
			WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires) AS Q
		WHERE Q.rank <= 1`},
	{"q7", []string{"bid"}, `SELECT B.auction, B.price, B.bidder, B.date_time FROM bid B
		JOIN (SELECT MAX(price) AS maxprice, window_end AS date_time
			FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_end) B1
		ON B.price = B1.maxprice
		WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time`},
	{"q8", []string{"person", "auction"}, `SELECT P.id, P.name, P.starttime FROM (
		SELECT id, name, window_start AS starttime, window_end AS endtime
		FROM TUMBLE(person, date_time, INTERVAL '10' SECOND) GROUP BY id, name, window_start, window_end) P
		JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
		FROM TUMBLE(auction, date_time, INTERVAL '10' SECOND) GROUP BY seller, window_start, window_end) A
		ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime`},
}

// NexmarkOptions configure `runnel bench nexmark`.
type NexmarkOptions struct {
	Queries []string // names; empty: all
	Events  int64
	JSON    bool
	// Splits is the number of source splits (default: GOMAXPROCS).
	Splits int
	// NoWatermark declares the sources without RisingWave's WATERMARK FOR
	// date_time (NexmarkWatermark), so that no state is cleaned.
	NoWatermark bool
	// MemProfile, when set, is a file to write a heap profile to after
	// each query (before its server stops; the query's name is appended
	// when several run).
	MemProfile string
	// ScrapeInterval, when set, serves the HTTP listener and scrapes
	// /metrics at this interval while each query runs, as Prometheus
	// would: the "metrics on" side of the overhead measurement
	// (scripts/metrics-overhead.sh).
	ScrapeInterval time.Duration
	Out            io.Writer
	// Progress, when set, receives a progress bar per query (redrawn in
	// place on a terminal, a line every few seconds elsewhere).
	Progress io.Writer
	Log      *slog.Logger
}

// NexmarkResult is one query's measurement.
type NexmarkResult struct {
	Query               string  `json:"query"`
	Events              int64   `json:"events"`
	Seconds             float64 `json:"seconds"`
	EventsPerSec        float64 `json:"events_per_sec"`
	EventsPerSecPerCore float64 `json:"events_per_sec_per_core"`
	Cores               int     `json:"cores"`
	// StateRows and StateBytes measure the view's internal state (every
	// state table but its own rows) after the run (Server.StateSize).
	StateRows  int64 `json:"state_rows"`
	StateBytes int64 `json:"state_bytes"`
	// CPUSeconds is the process's CPU time (user + system) over the
	// measured interval and EventsPerCPUSecond events per CPU-second: on a
	// shared machine the wall clock mostly measures the queue for a core,
	// CPU time does not.
	CPUSeconds         float64 `json:"cpu_seconds"`
	EventsPerCPUSecond float64 `json:"events_per_cpu_second"`
	// PeakRSS is the process's VmHWM in bytes, reset before the query
	// where the kernel allows (0: unknown).
	PeakRSS int64 `json:"peak_rss"`
	// Scrapes counts the /metrics scrapes during the run (ScrapeInterval).
	Scrapes int    `json:"scrapes,omitempty"`
	Error   string `json:"error,omitempty"`
}

// RunNexmark runs each query as a materialized view over N generated
// events on a fresh embedded server and reports throughput.
func RunNexmark(ctx context.Context, opts NexmarkOptions) ([]NexmarkResult, error) {
	if opts.Events <= 0 {
		opts.Events = 1_000_000
	}
	if opts.Splits <= 0 {
		opts.Splits = runtime.GOMAXPROCS(0)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	want := map[string]bool{}
	for _, q := range opts.Queries {
		want[strings.ToLower(strings.TrimSpace(q))] = true
	}
	var results []NexmarkResult
	for _, q := range NexmarkQueries {
		if len(want) > 0 && !want[q.Name] {
			continue
		}
		r := runOne(ctx, q, opts)
		results = append(results, r)
		if opts.JSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(opts.Out, string(b))
		} else if r.Error != "" {
			fmt.Fprintf(opts.Out, "%-4s  error: %s\n", r.Query, r.Error)
		} else {
			fmt.Fprintf(opts.Out, "%-4s  %d events in %.2fs: %.0f events/s, %.0f events/s per core (%d cores); %.1f CPU s, %.0f events per CPU s; state %d rows, %.1f MiB; peak RSS %d MiB\n",
				r.Query, r.Events, r.Seconds, r.EventsPerSec, r.EventsPerSecPerCore, r.Cores, r.CPUSeconds, r.EventsPerCPUSecond,
				r.StateRows, float64(r.StateBytes)/(1<<20), r.PeakRSS>>20)
		}
	}
	return results, nil
}

func runOne(ctx context.Context, q NexmarkQuery, opts NexmarkOptions) NexmarkResult {
	cores := runtime.GOMAXPROCS(0)
	res := NexmarkResult{Query: q.Name, Events: opts.Events, Cores: cores}
	e, err := startEmbedded(ctx, opts.Log, func(c *server.Config) {
		if opts.ScrapeInterval > 0 {
			c.HTTPListen = "127.0.0.1:0"
		}
	})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer e.close()
	conn, err := e.connect(ctx)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer conn.Close(context.Background())
	tables := append([]string(nil), q.Tables...)
	sort.Strings(tables)
	for _, t := range tables {
		if _, err := conn.Exec(ctx, nexmarkSourceDDL(t, opts.Events, opts.Splits, !opts.NoWatermark)); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	resetPeakRSS()
	start, cpu0 := time.Now(), processCPU()
	stopProgress := watchNexmark(e, q, opts)
	stopScraping := scrapeMetrics(e, opts.ScrapeInterval)
	err = func() error {
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", q.Name, q.SQL)); err != nil {
			return err
		}
		if err := e.srv.WaitSources(ctx, q.Name); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "FLUSH")
		return err
	}()
	stopProgress()
	res.Scrapes = stopScraping()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = (processCPU() - cpu0).Seconds()
	res.EventsPerCPUSecond = float64(opts.Events) / res.CPUSeconds
	res.PeakRSS = peakRSS()
	if opts.MemProfile != "" {
		if err := writeHeapProfile(opts.MemProfile, q.Name, len(opts.Queries) != 1); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	res.EventsPerSec = float64(opts.Events) / res.Seconds
	res.EventsPerSecPerCore = res.EventsPerSec / float64(cores)
	if res.StateRows, res.StateBytes, err = e.srv.StateSize(ctx, q.Name); err != nil {
		res.Error = err.Error()
	}
	return res
}

// NexmarkWatermark is the WATERMARK FOR clause RisingWave's Nexmark
// benchmark declares on every source.
const NexmarkWatermark = "WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND"

// nexmarkSourceColumns is nexmark table t's name and columns for CREATE
// SOURCE, with NexmarkWatermark when watermark is set.
func nexmarkSourceColumns(t string, watermark bool) string {
	d := nexmarkTables[t]
	if watermark {
		d = strings.TrimSuffix(strings.TrimSpace(d), ")") + ", " + NexmarkWatermark + ")"
	}
	return d
}

// nexmarkSourceDDL declares nexmark table t as a source of events events
// over splits splits, unthrottled.
func nexmarkSourceDDL(t string, events int64, splits int, watermark bool) string {
	return fmt.Sprintf(`CREATE SOURCE %s WITH (connector = 'nexmark', nexmark.table.type = '%s', nexmark.event.num = '%d',
		nexmark.split.num = '%d', nexmark.min.event.gap.in.ns = '0')`, nexmarkSourceColumns(t, watermark), t, events, splits)
}

// watchNexmark draws the progress of query q's sources on opts.Progress
// (nothing when it is nil) until the returned stop is called. Progress is
// counted in events: the rows the view's sources emitted, scaled by the
// share of the event stream their tables make up (a bid-only query
// reaches N events when its source has emitted all 92% of bids).
func watchNexmark(e *embedded, q NexmarkQuery, opts NexmarkOptions) (stop func()) {
	if opts.Progress == nil {
		return func() {}
	}
	g := nexmark.NewGenerator(nexmark.Config{MaxEvents: opts.Events})
	var rows int64
	for _, t := range q.Tables {
		tt, _ := nexmark.ParseTableType(t)
		rows += g.Count(tt)
	}
	events := func() int64 {
		n, err := e.srv.SourceRows(q.Name)
		if err != nil || rows <= 0 {
			return 0 // the view is still being created
		}
		return int64(float64(n) / float64(rows) * float64(opts.Events))
	}
	p := newProgress(opts.Progress, IsTerminal(opts.Progress), q.Name, "events", opts.Events)
	// A local, not the named result: the returned closure is assigned to
	// stop on return, and calling stop from inside it would recurse.
	stopTicker := every(100*time.Millisecond, func() { p.update(events()) })
	return func() {
		stopTicker()
		p.clear()
	}
}

// every calls fn every interval on a goroutine until the returned function
// is called, which returns once that goroutine has exited.
func every(interval time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// writeHeapProfile writes a heap profile (after a GC, so in-use figures
// are current) to path, with "."+query appended when perQuery is set.
func writeHeapProfile(path, query string, perQuery bool) error {
	if perQuery {
		path += "." + query
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scrapeMetrics GETs the server's /metrics every interval (reading the
// whole body, as a scraper does) until the returned function is called,
// which reports how many scrapes completed. A zero interval scrapes
// nothing.
func scrapeMetrics(e *embedded, interval time.Duration) (stop func() int) {
	if interval <= 0 {
		return func() int { return 0 }
	}
	url := "http://" + e.srv.HTTPAddr() + "/metrics"
	count := 0
	stopTicks := every(interval, func() {
		resp, err := http.Get(url)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, resp.Body); err == nil && resp.StatusCode == http.StatusOK {
			count++
		}
		resp.Body.Close()
	})
	return func() int { stopTicks(); return count }
}
