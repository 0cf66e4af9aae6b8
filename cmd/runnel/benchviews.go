package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/runneldb/runnel/internal/bench"
	"github.com/runneldb/runnel/internal/server"
)

// benchViewsMain runs `runnel bench views`: view-maintenance throughput
// and peak memory over N rows fed into tables (see bench.RunViews).
func benchViewsMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench views", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarios := fs.String("scenarios", "", "comma-separated scenarios: table, agg, join (default: all)")
	rows := fs.Int64("rows", 10_000_000, "rows fed into the table of each scenario")
	groups := fs.Int64("groups", 100_000, "distinct group keys of the aggregation")
	dimRows := fs.Int64("dim-rows", 100_000, "rows of the join's dimension table")
	batch := fs.Int64("batch", 100_000, "rows per INSERT statement")
	cacheMB := fs.Int64("streaming-cache-mb", 0, "streaming operator cache budget in MiB (default: the server's, 256)")
	blockMB := fs.Int64("block-cache-mb", 0, "storage block cache in MiB (default: the server's, 256)")
	bufferMB := fs.Int64("write-buffer-mb", 0, "storage write buffer in MiB (default: the server's, 256)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	stop, err := startCPUProfile(*cpuProfile)
	if err != nil {
		fmt.Fprintln(stderr, "runnel: bench:", err)
		return 1
	}
	defer stop()
	var sc []string
	if *scenarios != "" {
		sc = strings.Split(*scenarios, ",")
	}
	results, err := bench.RunViews(context.Background(), bench.ViewsOptions{
		Scenarios: sc, Rows: *rows, Groups: *groups, DimRows: *dimRows, Batch: *batch, JSON: *asJSON, Out: stdout, Progress: stderr,
		Config: server.Config{StreamingCacheBytes: *cacheMB << 20, BlockCacheBytes: *blockMB << 20, WriteBufferBytes: *bufferMB << 20},
	})
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
