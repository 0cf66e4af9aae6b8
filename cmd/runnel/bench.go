package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/runneldb/runnel/internal/bench"
)

// benchMain runs the built-in benchmarks.
func benchMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "ivm" {
		return benchIVM(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "backfill" {
		return benchBackfill(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "load" {
		return benchLoad(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "tpch" {
		return benchTPCH(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "nexmark" {
		fmt.Fprintln(stderr, "usage: runnel bench nexmark [--queries q0,q1,...] [--events N] [--json]")
		fmt.Fprintln(stderr, "       runnel bench ivm [--rows N] [--updates K] [--json]")
		fmt.Fprintln(stderr, "       runnel bench backfill [--rows N] [--rounds K] [--views a,b] [--json]")
		fmt.Fprintln(stderr, "       runnel bench load [--rows N] [--rounds K] [--formats text,csv,binary,insert,insert-select] [--json]")
		fmt.Fprintln(stderr, "       runnel bench tpch [--scale SF] [--queries q1,q2,...] [--rounds K] [--json]")
		return 2
	}
	fs := flag.NewFlagSet("bench nexmark", flag.ContinueOnError)
	fs.SetOutput(stderr)
	queries := fs.String("queries", "", "comma-separated queries (default: all)")
	events := fs.Int64("events", 1_000_000, "events to generate per query")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	splits := fs.Int("splits", 0, "source splits (default: GOMAXPROCS)")
	noWatermark := fs.Bool("no-watermark", false, "declare the sources without WATERMARK FOR date_time (no state cleanup)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	scrape := fs.Duration("scrape-interval", 0, "serve the HTTP listener and scrape /metrics at this interval during each query (metrics overhead; 0: no listener)")
	memProfile := fs.String("memprofile", "", "write a heap profile to this file at the end of each query (.QUERY appended when several run)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	stop, err := startCPUProfile(*cpuProfile)
	if err != nil {
		fmt.Fprintln(stderr, "runnel: bench:", err)
		return 1
	}
	defer stop()
	var qs []string
	if *queries != "" {
		qs = strings.Split(*queries, ",")
	}
	results, err := bench.RunNexmark(context.Background(), bench.NexmarkOptions{Queries: qs, Events: *events, JSON: *asJSON, Splits: *splits,
		NoWatermark: *noWatermark, MemProfile: *memProfile, ScrapeInterval: *scrape, Out: stdout, Progress: progressWriter(*asJSON, stdout, stderr)})
	if err != nil {
		fmt.Fprintln(stderr, "runnel: bench:", err)
		return 1
	}
	for _, r := range results {
		if r.Error != "" {
			return 1
		}
	}
	return 0
}

// startCPUProfile writes a CPU profile to path until the returned stop is
// called (no-op for an empty path).
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
