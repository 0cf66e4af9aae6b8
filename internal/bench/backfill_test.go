package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBackfillScaling measures CREATE MATERIALIZED VIEW over tables that
// already hold their rows (the backfill path), with the two views of
// `runnel bench ivm`, at each size in RUNNEL_BACKFILL_ROWS (a comma list
// of order counts; customers = orders / 10). Skipped unless that is set:
//
//	RUNNEL_BACKFILL_ROWS=200000,500000,1000000 go test ./internal/bench -run TestBackfillScaling -v -timeout 30m
//
// Each CREATE starts once the process's CPU use has dropped below 5 % (the
// load's and the previous view's compaction done); after it, the time and
// CPU until it is quiet again (the compaction the backfill left behind)
// are reported too.
//
// RUNNEL_BACKFILL_VIEWS=order_details (or customer_totals) runs one view;
// RUNNEL_BACKFILL_KEEP=1 keeps each view (as bench ivm does) and
// RUNNEL_BACKFILL_NOSETTLE=1 starts the next CREATE at once.
// RUNNEL_BACKFILL_CPUPROFILE=prefix writes one CPU profile per size and
// view (prefix-<rows>-<view>.pprof) covering only the CREATE statement;
// RUNNEL_BACKFILL_TRACE=prefix likewise an execution trace (go tool trace
// -pprof=sync|sched shows where the actors wait), and
// RUNNEL_BACKFILL_MEMPROFILE=prefix allocation profiles before and after
// (go tool pprof -sample_index=alloc_space -base before.pprof after.pprof).
func TestBackfillScaling(t *testing.T) {
	env := os.Getenv("RUNNEL_BACKFILL_ROWS")
	if env == "" {
		t.Skip("set RUNNEL_BACKFILL_ROWS (e.g. 200000,1000000) to run")
	}
	var sizes []int64
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("RUNNEL_BACKFILL_ROWS: bad size %q", f)
		}
		sizes = append(sizes, n)
	}
	profile := os.Getenv("RUNNEL_BACKFILL_CPUPROFILE")
	for _, rows := range sizes {
		runBackfillSize(t, rows, profile)
	}
}

func runBackfillSize(t *testing.T, rows int64, profile string) {
	ctx := context.Background()
	customers := max(rows/10, 1)
	e, err := startEmbedded(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	conn, err := e.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", firstLine(sql), err)
		}
	}
	for _, s := range strings.Split(ivmSchema, ";") {
		exec(s)
	}
	load0 := time.Now()
	exec(fmt.Sprintf(`INSERT INTO customers SELECT i, 'r' || (i %% 8)::varchar, 'customer-' || i::varchar FROM generate_series(0::bigint, %d::bigint) g(i)`, customers-1))
	const batch = 100_000
	for lo := int64(0); lo < rows; lo += batch {
		hi := min(lo+batch, rows) - 1
		// customer ids scattered over the customers, as in bench ivm.
		exec(fmt.Sprintf(`INSERT INTO orders SELECT i, (i * 2654435761) %% %d, i %% 1000 + 1, 'open' FROM generate_series(%d::bigint, %d::bigint) g(i)`, customers, lo, hi))
	}
	exec("FLUSH")
	t.Logf("rows %d: loaded in %.1fs", rows, time.Since(load0).Seconds())
	// Start each CREATE on a quiet engine: the compaction of the load (or
	// of the previous view) would otherwise count towards its CPU time.
	settle := func() (float64, float64) {
		start, cpu0 := time.Now(), processCPU()
		for prev := processCPU(); time.Since(start) < 5*time.Minute; {
			time.Sleep(time.Second)
			now := processCPU()
			if now-prev < 50*time.Millisecond {
				break
			}
			prev = now
		}
		return time.Since(start).Seconds(), (processCPU() - cpu0).Seconds()
	}
	secs, cpu := settle()
	t.Logf("rows %d: settled after the load in %.1fs, %.1f CPU s", rows, secs, cpu)
	for _, v := range ivmViews {
		if only := os.Getenv("RUNNEL_BACKFILL_VIEWS"); only != "" && !strings.Contains(only, v.name) {
			continue
		}
		if os.Getenv("RUNNEL_BACKFILL_NOSETTLE") == "" {
			settle() // the previous view's DROP
		}
		runtime.GC()
		if profile != "" {
			f, err := os.Create(fmt.Sprintf("%s-%d-%s.pprof", profile, rows, v.name))
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				t.Fatal(err)
			}
		}
		if tr := os.Getenv("RUNNEL_BACKFILL_TRACE"); tr != "" {
			f, err := os.Create(fmt.Sprintf("%s-%d-%s.trace", tr, rows, v.name))
			if err != nil {
				t.Fatal(err)
			}
			if err := trace.Start(f); err != nil {
				t.Fatal(err)
			}
			defer f.Close()
		}
		memProfile := func(suffix string) {
			if mp := os.Getenv("RUNNEL_BACKFILL_MEMPROFILE"); mp != "" {
				f, err := os.Create(fmt.Sprintf("%s-%d-%s-%s.pprof", mp, rows, v.name, suffix))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		memProfile("before")
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		start, cpu0 := time.Now(), processCPU()
		exec(fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", v.name, v.sql))
		secs, cpu = time.Since(start).Seconds(), (processCPU() - cpu0).Seconds()
		runtime.ReadMemStats(&ms1)
		if profile != "" {
			pprof.StopCPUProfile()
		}
		trace.Stop()
		memProfile("after")
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+v.name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		ssecs, scpu := settle()
		t.Logf("rows %d: CREATE MATERIALIZED VIEW %s in %.2fs (%.0f rows/s), %.1f CPU s, alloc %d MiB, %d GCs, view rows %d; then compaction settled in %.1fs, %.1f CPU s",
			rows, v.name, secs, float64(rows)/secs, cpu, (ms1.TotalAlloc-ms0.TotalAlloc)>>20, ms1.NumGC-ms0.NumGC, n, ssecs, scpu)
		if os.Getenv("RUNNEL_BACKFILL_KEEP") == "" {
			exec("DROP MATERIALIZED VIEW " + v.name)
		}
	}
}
