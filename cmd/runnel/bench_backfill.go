package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/runneldb/runnel/internal/bench"
)

// benchBackfill runs `runnel bench backfill`: CREATE MATERIALIZED VIEW over
// loaded tables, Runnel against PostgreSQL on the same rows.
func benchBackfill(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench backfill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rows := fs.Int64("rows", 1_000_000, "orders to load (customers: rows/10)")
	rounds := fs.Int("rounds", 3, "times each view is created on each system (the best counts)")
	views := fs.String("views", "", "comma-separated views (default: all)")
	seed := fs.Uint64("seed", 0, "data seed")
	pgURL := fs.String("pg-url", "", "PostgreSQL database to compare with (default: a throwaway cluster)")
	asJSON := fs.Bool("json", false, "one JSON object per view")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of Runnel's CREATE statements to this file (prefix; .VIEW.ROUND appended)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var vs []string
	if *views != "" {
		vs = strings.Split(*views, ",")
	}
	opts := bench.BackfillOptions{Rows: *rows, Rounds: *rounds, Views: vs, Seed: *seed, PostgresURL: *pgURL, JSON: *asJSON,
		Out: stdout, Progress: progressWriter(*asJSON, stdout, stderr)}
	if *cpuProfile != "" {
		opts.BeforeCreate, opts.AfterCreate = cpuProfileHooks(*cpuProfile, stderr)
	}
	if _, err := bench.RunBackfill(context.Background(), opts); err != nil {
		fmt.Fprintln(stderr, "runnel: bench:", err)
		return 1
	}
	return 0
}
