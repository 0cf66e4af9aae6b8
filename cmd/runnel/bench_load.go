package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"

	"github.com/runneldb/runnel/internal/bench"
)

// benchLoad runs `runnel bench load`: bulk loading (COPY text, CSV and
// binary, multi-row INSERT, INSERT ... SELECT) into empty tables, Runnel
// against PostgreSQL on the same rows.
func benchLoad(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rows := fs.Int64("rows", 1_000_000, "orders to load (customers: rows/10)")
	rounds := fs.Int("rounds", 3, "loads per format on each system (the best counts)")
	formats := fs.String("formats", "text,binary", "comma-separated load paths: "+strings.Join(bench.LoadFormats, ","))
	seed := fs.Uint64("seed", 0, "data seed")
	pgURL := fs.String("pg-url", "", "PostgreSQL database to compare with (default: a throwaway cluster)")
	asJSON := fs.Bool("json", false, "one JSON object per format")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of Runnel's loads to this file (prefix; .FORMAT.ROUND appended)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := bench.LoadOptions{Rows: *rows, Rounds: *rounds, Formats: strings.Split(*formats, ","), Seed: *seed, PostgresURL: *pgURL,
		JSON: *asJSON, Out: stdout, Progress: progressWriter(*asJSON, stdout, stderr)}
	if *cpuProfile != "" {
		opts.BeforeLoad, opts.AfterLoad = cpuProfileHooks(*cpuProfile, stderr)
	}
	if _, err := bench.RunLoad(context.Background(), opts); err != nil {
		fmt.Fprintln(stderr, "runnel: bench:", err)
		return 1
	}
	return 0
}

// cpuProfileHooks returns hooks that profile the CPU between them, each
// measured step into prefix.NAME.ROUND.
func cpuProfileHooks(prefix string, stderr io.Writer) (before, after func(name string, round int)) {
	var f, tf *os.File
	before = func(name string, round int) {
		var err error
		if f, err = os.Create(fmt.Sprintf("%s.%s.%d", prefix, name, round)); err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if os.Getenv("RUNNEL_BENCH_TRACE") != "" {
			tf, _ = os.Create(fmt.Sprintf("%s.%s.%d.trace", prefix, name, round))
			trace.Start(tf)
		}
		if err != nil {
			fmt.Fprintln(stderr, "runnel: bench: cpu profile:", err)
		}
	}
	after = func(string, int) {
		if tf != nil {
			trace.Stop()
			tf.Close()
		}
		pprof.StopCPUProfile()
		if f != nil {
			f.Close()
		}
	}
	return before, after
}
