package promql_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestRateBench (off by default: RUNNEL_PROMQL_BENCH=1) times PromQL
// rate(...[5m]) over N series (RUNNEL_PROMQL_BENCH_SERIES, default 1000)
// x H hours (RUNNEL_PROMQL_BENCH_HOURS, default 24) at 10 s resolution in
// Runnel and in Debian's Prometheus server, both loaded with the same
// samples by remote write (in time order, 50 steps per request; Runnel's
// table in append mode, as a metrics store keeps it), sample times 1.5 s
// past each 10 s so that none falls on a range boundary (see
// TestPromQLDifferential), the
// queries alternating between the two, best of RUNNEL_BENCH_ROUNDS
// (default 3). Before timing, the instant answers of both are compared.
func TestRateBench(t *testing.T) {
	if os.Getenv("RUNNEL_PROMQL_BENCH") == "" {
		t.Skip("RUNNEL_PROMQL_BENCH=1 runs it (docs/benchmarks.md)")
	}
	nSeries := envInt("RUNNEL_PROMQL_BENCH_SERIES", 1000)
	hours := envInt("RUNNEL_PROMQL_BENCH_HOURS", 24)
	rounds := envInt("RUNNEL_BENCH_ROUNDS", 3)
	steps := hours * 360
	end := time.Now().Truncate(time.Minute)
	start := end.Add(-time.Duration(hours) * time.Hour)
	rn := startRunnel(t)
	prom := startPrometheus(t, nil, "", "--web.enable-remote-write-receiver")

	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, nSeries)
	var loadRunnel, loadProm time.Duration
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
		body := snappy.Encode(nil, raw)
		loadRunnel += post(t, rn.http.URL+"/v1/prometheus/write", body, "append_mode=true")
		loadProm += post(t, prom+"/api/v1/write", body, "")
	}
	samples := nSeries * steps
	t.Logf("loaded %d series x %d samples = %d samples: Runnel %v (%.0f samples/s), Prometheus %v (%.0f samples/s)",
		nSeries, steps, samples, loadRunnel.Round(time.Millisecond), float64(samples)/loadRunnel.Seconds(),
		loadProm.Round(time.Millisecond), float64(samples)/loadProm.Seconds())

	instant := url.Values{"query": {`sum by (job) (rate(bench_counter[5m]))`}, "time": {unix(end.Add(-30 * time.Minute))}}
	compareQuery(t, prom, rn.api(), "GET", "/api/v1/query", instant)
	for _, q := range []struct {
		name, path string
		p          url.Values
	}{
		{"rate(bench_counter[5m]), range over the whole time, step 60 s", "/api/v1/query_range",
			url.Values{"query": {`rate(bench_counter[5m])`}, "start": {unix(start)}, "end": {unix(end)}, "step": {"60"}}},
		{"sum(rate(bench_counter[5m])), range over the whole time, step 60 s", "/api/v1/query_range",
			url.Values{"query": {`sum(rate(bench_counter[5m]))`}, "start": {unix(start)}, "end": {unix(end)}, "step": {"60"}}},
		{"rate(bench_counter[5m]), instant", "/api/v1/query",
			url.Values{"query": {`rate(bench_counter[5m])`}, "time": {unix(end.Add(-time.Minute))}}},
	} {
		bestR, bestP := time.Duration(1<<62), time.Duration(1<<62)
		var sizeR, sizeP int
		for range rounds {
			d, n := timeGet(t, rn.api()+q.path, q.p)
			bestR, sizeR = min(bestR, d), n
			d, n = timeGet(t, prom+q.path, q.p)
			bestP, sizeP = min(bestP, d), n
		}
		t.Logf("%s: Runnel %v (%d bytes), Prometheus %v (%d bytes), ratio %.2f", q.name,
			bestR.Round(time.Millisecond), sizeR, bestP.Round(time.Millisecond), sizeP, bestR.Seconds()/bestP.Seconds())
	}
}

// post sends a remote-write body; hints (GreptimeDB's x-greptime-hints)
// choose the layout of a table Runnel creates.
func post(t *testing.T, u string, body []byte, hints string) time.Duration {
	t.Helper()
	begin := time.Now()
	req, err := http.NewRequest("POST", u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if hints != "" {
		req.Header.Set("x-greptime-hints", hints)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s: %s", u, resp.Status, b)
	}
	return time.Since(begin)
}

func timeGet(t *testing.T, u string, p url.Values) (time.Duration, int) {
	t.Helper()
	begin := time.Now()
	resp, err := http.Get(u + "?" + p.Encode())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %.300s", u, resp.Status, b)
	}
	return time.Since(begin), len(b)
}
