package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/bench"
)

// benchTPCH runs `runnel bench tpch`: the TPC-H tables generated at a
// scale factor, loaded into Runnel and PostgreSQL, and the 22 queries run
// on both with their results compared.
func benchTPCH(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench tpch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scale := fs.Float64("scale", 0.01, "TPC-H scale factor (1: 6 M line items)")
	queries := fs.String("queries", "", "comma-separated queries, q1..q22 (default: all)")
	rounds := fs.Int("rounds", 1, "runs of each query on each system (the best counts)")
	timeout := fs.Duration("timeout", 10*time.Minute, "time limit of one run of one query")
	seed := fs.Uint64("seed", 0, "data seed")
	pgURL := fs.String("pg-url", "", "PostgreSQL database to compare with (default: a throwaway cluster)")
	asJSON := fs.Bool("json", false, "one JSON object per query, then a summary")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of Runnel's queries to this file (prefix; .QUERY.ROUND appended)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var qs []string
	if *queries != "" {
		qs = strings.Split(*queries, ",")
	}
	opts := bench.TPCHOptions{Scale: *scale, Seed: *seed, Queries: qs, Rounds: *rounds, Timeout: *timeout, PostgresURL: *pgURL,
		JSON: *asJSON, Out: stdout, Progress: progressWriter(*asJSON, stdout, stderr)}
	if *cpuProfile != "" {
		opts.BeforeQuery, opts.AfterQuery = cpuProfileHooks(*cpuProfile, stderr)
	}
	rep, err := bench.RunTPCH(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(stderr, "runnel: bench:", err)
		return 1
	}
	if rep.Differs > 0 || rep.Failed > 0 {
		return 1
	}
	return 0
}
