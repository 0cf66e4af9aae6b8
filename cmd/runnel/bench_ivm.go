package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/runneldb/runnel/internal/bench"
)

// benchIVM runs `runnel bench ivm`: single-row update latency through a
// join view and an aggregation view, Runnel against PostgreSQL's REFRESH.
func benchIVM(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench ivm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rows := fs.Int64("rows", 1_000_000, "orders to load (customers: rows/10)")
	updates := fs.Int("updates", 20, "single-row updates measured per view")
	seed := fs.Uint64("seed", 0, "data and update seed")
	pgURL := fs.String("pg-url", "", "PostgreSQL database to compare with (default: a throwaway cluster)")
	asJSON := fs.Bool("json", false, "one JSON object per view")
	logLevel := fs.String("log-level", "", "write the embedded server's log to stderr at this level (debug, info, warn, error; default: no log)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var log *slog.Logger
	if *logLevel != "" {
		var lv slog.Level
		if err := lv.UnmarshalText([]byte(*logLevel)); err != nil {
			fmt.Fprintf(stderr, "runnel: bench ivm: --log-level %q: want debug, info, warn or error\n", *logLevel)
			return 2
		}
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	}
	_, err := bench.RunIVM(context.Background(), bench.IVMOptions{Rows: *rows, Updates: *updates, Seed: *seed, PostgresURL: *pgURL, JSON: *asJSON,
		Out: stdout, Progress: progressWriter(*asJSON, stdout, stderr), Log: log})
	if err != nil {
		fmt.Fprintln(stderr, "runnel: bench:", err)
		return 1
	}
	return 0
}

// progressWriter is where a benchmark draws progress: stdout for the text
// report; with --json stdout carries only JSON, so progress goes to stderr
// when that is a terminal and nowhere otherwise.
func progressWriter(asJSON bool, stdout, stderr io.Writer) io.Writer {
	if !asJSON {
		return stdout
	}
	if bench.IsTerminal(stderr) {
		return stderr
	}
	return nil
}
