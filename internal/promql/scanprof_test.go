package promql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// TestScanProf (off by default: RUNNEL_SCANPROF=1) loads the samples of
// TestRateBench into Runnel alone (no peer), waits until compaction is
// idle, logs the storage levels, then runs the two whole-range queries
// RUNNEL_BENCH_ROUNDS times each, logging for each its wall time, the
// process CPU time it took (getrusage) and the SSTs its scan opened.
// RUNNEL_SCANPROF_OUT=<file> writes a CPU profile of the query phase only;
// RUNNEL_SCANPROF_WINDOW sets the table's time_window (e.g. 1000d: one
// window); RUNNEL_SCANPROF_FORCE=1 compacts fully first. A profiling aid
// for docs/benchmarks.md; the ratio to Prometheus is TestRateBench's.
func TestScanProf(t *testing.T) {
	if os.Getenv("RUNNEL_SCANPROF") == "" {
		t.Skip("RUNNEL_SCANPROF=1 runs it (docs/benchmarks.md)")
	}
	nSeries := envInt("RUNNEL_PROMQL_BENCH_SERIES", 1000)
	hours := envInt("RUNNEL_PROMQL_BENCH_HOURS", 24)
	rounds := envInt("RUNNEL_BENCH_ROUNDS", 3)
	steps := hours * 360
	end := time.Now().Truncate(time.Minute)
	start := end.Add(-time.Duration(hours) * time.Hour)
	rn := startRunnel(t)
	hintsS := "append_mode=true"
	if w := os.Getenv("RUNNEL_SCANPROF_WINDOW"); w != "" {
		hintsS += ",time_window=" + w
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, nSeries)
	var load time.Duration
	for lo := 0; lo < steps; lo += 50 {
		hi := min(lo+50, steps)
		var req prompb.WriteRequest
		for s := range nSeries {
			ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "bench_counter"},
				{Name: "instance", Value: fmt.Sprintf("host-%04d", s)}, {Name: "job", Value: fmt.Sprintf("job-%d", s%10)}}}
			for i := lo; i < hi; i++ {
				vals[s] += float64(rng.IntN(100))
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: start.Add(time.Duration(i)*10*time.Second + 1500*time.Millisecond).UnixMilli(), Value: vals[s]})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		raw, err := req.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		load += post(t, rn.http.URL+"/v1/prometheus/write", snappy.Encode(nil, raw), hintsS)
	}
	st := rn.srv.Server.Internals().Store
	t.Logf("loaded in %v", load)
	begin := time.Now()
	for !st.CompactionIdle() && time.Since(begin) < 5*time.Minute {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("compaction idle after %v (idle=%v)", time.Since(begin), st.CompactionIdle())
	if os.Getenv("RUNNEL_SCANPROF_FORCE") != "" {
		for {
			ok, err := st.Compact(context.Background(), true)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
		}
	}
	stats := st.Stats()
	for l, ls := range stats.Levels {
		if ls.SSTs > 0 {
			t.Logf("level %d: %d SSTs, %d bytes, %d entries", l, ls.SSTs, ls.Bytes, ls.Entries)
		}
	}
	if f := os.Getenv("RUNNEL_SCANPROF_OUT"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	for _, q := range []string{`rate(bench_counter[5m])`, `sum(rate(bench_counter[5m]))`} {
		p := url.Values{"query": {q}, "start": {unix(start)}, "end": {unix(end)}, "step": {"60"}}
		best := time.Duration(1 << 62)
		for range rounds {
			rs0 := st.ReadStats()
			c0 := cpuTime()
			d, _ := timeGet(t, rn.api()+"/api/v1/query_range", p)
			c1 := cpuTime()
			rs1 := st.ReadStats()
			best = min(best, d)
			t.Logf("%s: %v cpu %v (scans %d opened %d)", q, d, c1-c0, rs1.Scans-rs0.Scans, rs1.Opened-rs0.Opened)
		}
		t.Logf("%s best %v", q, best)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
