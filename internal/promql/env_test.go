package promql_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/runneldb/runnel/internal/ingest"
	"github.com/runneldb/runnel/internal/promql"
	"github.com/runneldb/runnel/internal/testutil/promtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// runnel is a Runnel server with the ingest and PromQL APIs on a real
// HTTP listener (as --http-listen mounts them).
type runnel struct {
	srv  *servertest.Server
	http *httptest.Server
}

func startRunnel(t testing.TB) *runnel {
	t.Helper()
	srv := servertest.Start(t)
	mux := http.NewServeMux()
	ingest.Register(mux, srv.Server.IngestWriter())
	promql.New(srv.Server.PromSource(), promql.Options{}).Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &runnel{srv: srv, http: hs}
}

// api is the Prometheus API root of the server (Grafana's data source URL).
func (r *runnel) api() string { return r.http.URL + promql.Prefix }

// sample set: series (label pairs, __name__ first) and their samples.
type promSeries struct {
	labels  [][2]string
	samples []prompb.Sample
}

// remoteWrite writes series to Runnel with Prometheus remote write, in
// batches of at most batch samples.
func (r *runnel) remoteWrite(t testing.TB, series []promSeries, batch int) {
	t.Helper()
	var req prompb.WriteRequest
	n := 0
	flush := func() {
		if len(req.Timeseries) == 0 {
			return
		}
		raw, err := req.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(r.http.URL+"/v1/prometheus/write", "application/x-protobuf", bytes.NewReader(snappy.Encode(nil, raw)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("remote write: %s: %s", resp.Status, b)
		}
		req, n = prompb.WriteRequest{}, 0
	}
	for _, s := range series {
		for lo := 0; lo < len(s.samples); lo += batch {
			hi := min(lo+batch, len(s.samples))
			ts := prompb.TimeSeries{Samples: s.samples[lo:hi]}
			for _, l := range s.labels {
				ts.Labels = append(ts.Labels, prompb.Label{Name: l[0], Value: l[1]})
			}
			req.Timeseries = append(req.Timeseries, ts)
			if n += hi - lo; n >= batch {
				flush()
			}
		}
	}
	flush()
}

// openMetrics renders series as OpenMetrics text for promtool: one
// family after the other (families must not interleave), each series'
// samples in time order.
func openMetrics(series []promSeries) []byte {
	var b bytes.Buffer
	byName := map[string][]promSeries{}
	var names []string
	for _, s := range series {
		n := s.labels[0][1]
		if byName[n] == nil {
			names = append(names, n)
		}
		byName[n] = append(byName[n], s)
	}
	for _, n := range names {
		for _, s := range byName[n] {
			var lb strings.Builder
			for i, l := range s.labels[1:] {
				if i > 0 {
					lb.WriteByte(',')
				}
				fmt.Fprintf(&lb, "%s=%q", l[0], l[1])
			}
			for _, x := range s.samples {
				fmt.Fprintf(&b, "%s{%s} %s %d.%03d\n", n, lb.String(), promql.FormatValue(x.Value), x.Timestamp/1000, x.Timestamp%1000)
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.Bytes()
}

// promtool returns the path of promtool (Debian's prometheus package),
// or skips (fails in CI).
func promtool(t testing.TB) string {
	promtest.Binary(t)
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not installed: run scripts/install-deps.sh")
		}
		t.Skip("promtool not installed (scripts/install-deps.sh installs Debian's prometheus package)")
	}
	return p
}

// startPrometheus runs a Prometheus server over the blocks promtool
// makes from series (nil: an empty database) with the given extra
// configuration and flags, and returns its URL once ready.
func startPrometheus(t testing.TB, series []promSeries, config string, flags ...string) string {
	t.Helper()
	tool := promtool(t)
	var data string
	if series != nil {
		dir := t.TempDir()
		data = filepath.Join(dir, "data")
		om := filepath.Join(dir, "input.om")
		if err := os.WriteFile(om, openMetrics(series), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(tool, "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
			t.Fatalf("promtool: %v\n%s", err, out)
		}
	}
	return promtest.StartWith(t, promtest.Options{Config: "global:\n  scrape_interval: 1m\n" + config, DataDir: data,
		Flags: append([]string{"--storage.tsdb.retention.time=100y"}, flags...)})
}

// apiResponse is the Prometheus API's JSON envelope.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// call GETs (or POSTs as a form) base+path with params and decodes the
// envelope; it fails the test on a transport error only.
func call(t testing.TB, method, base, path string, params url.Values) (int, apiResponse) {
	t.Helper()
	var resp *http.Response
	var err error
	if method == "POST" {
		resp, err = http.PostForm(base+path, params)
	} else {
		resp, err = http.Get(base + path + "?" + params.Encode())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r apiResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s %s: not JSON (%s): %s", method, path, resp.Status, b)
	}
	return resp.StatusCode, r
}

// testData is a seeded sample set: counters with resets, gauges and
// histogram buckets. Sample times are base + i*15s plus a jitter of 1 to
// 999 ms, so that no sample falls on a whole second: query times and
// range boundaries (whole seconds) never meet a sample, where Prometheus
// 2 (closed ranges) and 3 (left-open ranges) differ.
func testData(seed uint64, base time.Time, points int) []promSeries {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var out []promSeries
	t0 := base.UnixMilli()
	at := func(i int) int64 { return t0 + int64(i)*15000 + 1 + rng.Int64N(999) }
	for _, job := range []string{"api", "web"} {
		for _, inst := range []string{"a", "b", "c"} {
			for _, code := range []string{"200", "500"} {
				s := promSeries{labels: [][2]string{{"__name__", "http_requests_total"}, {"code", code}, {"instance", inst}, {"job", job}}}
				v := 0.0
				for i := range points {
					if rng.IntN(200) == 0 {
						v = 0 // a counter reset
					}
					v += float64(rng.IntN(20))
					s.samples = append(s.samples, prompb.Sample{Timestamp: at(i), Value: v})
				}
				out = append(out, s)
			}
		}
	}
	for _, host := range []string{"h1", "h2", "h3", "h4"} {
		s := promSeries{labels: [][2]string{{"__name__", "cpu_temp"}, {"host", host}}}
		v := 50.0
		for i := range points {
			if rng.IntN(40) == 0 {
				continue // a gap
			}
			v += rng.Float64()*4 - 2
			s.samples = append(s.samples, prompb.Sample{Timestamp: at(i), Value: float64(int(v*100)) / 100})
		}
		out = append(out, s)
	}
	les := []string{"0.1", "0.5", "1", "+Inf"}
	for _, job := range []string{"api", "web"} {
		counts := make([]float64, len(les))
		series := make([]promSeries, len(les))
		for j, le := range les {
			series[j].labels = [][2]string{{"__name__", "req_duration_bucket"}, {"job", job}, {"le", le}}
		}
		for i := range points {
			ts := at(i)
			c := 0.0
			for j := range les {
				c += float64(rng.IntN(10))
				counts[j] += c
				series[j].samples = append(series[j].samples, prompb.Sample{Timestamp: ts, Value: counts[j]})
			}
		}
		out = append(out, series...)
	}
	return out
}

func sortedCopy(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
