package promql_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/prometheus/prompb"

	"github.com/runneldb/runnel/internal/promql"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Grafana's Prometheus data source, pointed at http://host/v1/prometheus,
// makes these calls: the health check (an instant query of 1+1 by POST
// and buildinfo), the metric browser (labels, __name__ values, series
// with match[], a label's values under match[]), and panels (query_range
// by POST with a step, start and end aligned to it). Each answer has the
// shape Grafana parses. A line-protocol table with two fields shows the
// __field__ mapping.
func TestGrafanaDataSource(t *testing.T) {
	rn := startRunnel(t)
	now := time.Now().Truncate(time.Minute)
	t0 := now.Add(-10 * time.Minute)
	var lines strings.Builder
	for i := range 60 {
		ts := t0.Add(time.Duration(i) * 10 * time.Second).UnixNano()
		fmt.Fprintf(&lines, "cpu,host=a usage_user=%d,usage_system=%d %d\n", i, 2*i, ts)
		fmt.Fprintf(&lines, "cpu,host=b usage_user=%d,usage_system=%d %d\n", 10+i, 20+i, ts)
	}
	resp, err := http.Post(rn.http.URL+"/v1/influxdb/write", "text/plain", strings.NewReader(lines.String()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("line protocol write: %s", resp.Status)
	}
	var up []prompb.Sample
	for i := range 60 {
		up = append(up, prompb.Sample{Timestamp: t0.Add(time.Duration(i) * 10 * time.Second).UnixMilli(), Value: 1})
	}
	rn.remoteWrite(t, []promSeries{{labels: [][2]string{{"__name__", "up"}, {"instance", "localhost:9090"}, {"job", "prometheus"}}, samples: up}}, 1000)

	api := rn.api()
	start, end := unix(now.Add(-1*time.Hour)), unix(now)
	ok := func(method, path string, p url.Values) json.RawMessage {
		t.Helper()
		code, r := call(t, method, api, path, p)
		if code != 200 || r.Status != "success" {
			t.Fatalf("%s %s %v: %d %s %s", method, path, p, code, r.ErrorType, r.Error)
		}
		return r.Data
	}
	// Health check.
	if got := string(ok("POST", "/api/v1/query", url.Values{"query": {"1+1"}, "time": {end}})); got != `{"resultType":"scalar","result":[`+end+`,"2"]}` {
		t.Errorf("1+1 = %s", got)
	}
	var bi map[string]string
	json.Unmarshal(ok("GET", "/api/v1/status/buildinfo", nil), &bi)
	if bi["version"] == "" {
		t.Errorf("buildinfo has no version: %v", bi)
	}
	// Metric browser.
	strs := func(d json.RawMessage) []string {
		var s []string
		if err := json.Unmarshal(d, &s); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		return s
	}
	if got := strs(ok("GET", "/api/v1/labels", url.Values{"start": {start}, "end": {end}})); !slices.Equal(got, []string{"__field__", "__name__", "host", "instance", "job"}) {
		t.Errorf("labels = %v", got)
	}
	if got := strs(ok("GET", "/api/v1/label/__name__/values", url.Values{"start": {start}, "end": {end}})); !slices.Equal(got, []string{"cpu", "up"}) {
		t.Errorf("__name__ values = %v", got)
	}
	if got := strs(ok("GET", "/api/v1/label/host/values", url.Values{"match[]": {`cpu{__field__="usage_user"}`}, "start": {start}, "end": {end}})); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("host values = %v", got)
	}
	if got := strs(ok("POST", "/api/v1/label/__field__/values", url.Values{"match[]": {`cpu`}})); !slices.Equal(got, []string{"usage_system", "usage_user"}) {
		t.Errorf("__field__ values = %v", got)
	}
	var series []map[string]string
	json.Unmarshal(ok("GET", "/api/v1/series", url.Values{"match[]": {`cpu{host="a"}`, `up`}, "start": {start}, "end": {end}}), &series)
	if got := fmt.Sprint(series); got != "[map[__field__:usage_system __name__:cpu host:a] map[__field__:usage_user __name__:cpu host:a] map[__name__:up instance:localhost:9090 job:prometheus]]" {
		t.Errorf("series = %s", got)
	}
	// A panel: query_range by POST, step 30 s, start and end aligned.
	var m struct {
		ResultType string
		Result     []struct {
			Metric map[string]string
			Values [][2]any
		}
	}
	json.Unmarshal(ok("POST", "/api/v1/query_range", url.Values{
		"query": {`sum by (host) (rate(cpu{__field__="usage_user"}[1m]))`},
		"start": {unix(t0.Add(2 * time.Minute))}, "end": {unix(t0.Add(9 * time.Minute))}, "step": {"30"},
	}), &m)
	if m.ResultType != "matrix" || len(m.Result) != 2 || m.Result[0].Metric["host"] != "a" || len(m.Result[0].Values) != 15 {
		t.Fatalf("panel query = %+v", m)
	}
	for _, r := range m.Result {
		for _, v := range r.Values {
			// 1 per 10 s: 0.1/s, as a string; times as numbers.
			if _, isNum := v[0].(float64); !isNum || v[1] != "0.1" {
				t.Fatalf("point %v of %v: want [time, \"0.1\"]", v, r.Metric)
			}
		}
	}
	// __field__ picks value columns; without it each field is a series.
	json.Unmarshal(ok("GET", "/api/v1/query", url.Values{"query": {`cpu{host="b", __field__=~"usage_s.*"}`}, "time": {unix(t0.Add(5 * time.Minute))}}), &m)
	if len(m.Result) != 1 || m.Result[0].Metric["__field__"] != "usage_system" {
		t.Errorf("__field__ matcher: %+v", m)
	}
	var vec struct {
		Result []struct{ Value [2]any }
	}
	json.Unmarshal(ok("GET", "/api/v1/query", url.Values{"query": {`count(cpu)`}, "time": {unix(t0.Add(5 * time.Minute))}}), &vec)
	if len(vec.Result) != 1 || vec.Result[0].Value[1] != "4" {
		t.Errorf("count(cpu) = %+v, want 4 (2 hosts x 2 fields)", vec)
	}
	// Errors have Prometheus' shape and status.
	for _, c := range []struct {
		path   string
		p      url.Values
		status int
		typ    string
	}{
		{"/api/v1/query", url.Values{"query": {"sum("}}, 400, "bad_data"},
		{"/api/v1/query_range", url.Values{"query": {"up"}, "start": {start}, "end": {end}, "step": {"0"}}, 400, "bad_data"},
		{"/api/v1/query_range", url.Values{"query": {"up"}, "start": {start}, "end": {end}, "step": {"0.1"}}, 400, "bad_data"},
		{"/api/v1/query", url.Values{"query": {"up"}, "time": {"yesterday"}}, 400, "bad_data"},
		{"/api/v1/series", url.Values{}, 400, "bad_data"},
		{"/api/v1/query", url.Values{"query": {"up"}, "db": {"nosuchschema"}}, 422, "execution"},
	} {
		code, r := call(t, "GET", api, c.path, c.p)
		if code != c.status || r.Status != "error" || r.ErrorType != c.typ || r.Error == "" {
			t.Errorf("%s %v: %d %+v, want %d %s", c.path, c.p, code, r, c.status, c.typ)
		}
	}
}

// TestRemoteReadByPrometheus: a Prometheus server with an empty database
// and Runnel as its remote_read endpoint answers queries over samples it
// only has through Runnel, exactly as Runnel's own API answers them.
func TestRemoteReadByPrometheus(t *testing.T) {
	promtool(t)
	rn := startRunnel(t)
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	data := testData(7, base, 240)
	rn.remoteWrite(t, data, 5000)
	prom := startPrometheus(t, nil, fmt.Sprintf("remote_read:\n  - url: %s/v1/prometheus/read\n    read_recent: true\n", rn.http.URL))
	start, end := base.Add(11*time.Minute), base.Add(55*time.Minute)
	for _, q := range []string{
		`http_requests_total{job="api"}`,
		`sum by (job) (rate(http_requests_total[5m]))`,
		`avg_over_time(cpu_temp{host=~"h1|h3"}[10m])`,
		`histogram_quantile(0.9, sum by (le) (rate(req_duration_bucket[5m])))`,
	} {
		compareQuery(t, prom, rn.api(), "GET", "/api/v1/query_range", url.Values{"query": {q}, "start": {unix(start)}, "end": {unix(end)}, "step": {"60"}})
	}
	// The read reached Runnel: Prometheus' answer is not empty.
	_, r := call(t, "GET", prom, "/api/v1/query", url.Values{"query": {`count(cpu_temp)`}, "time": {unix(base.Add(30 * time.Minute))}})
	if !strings.Contains(string(r.Data), `"4"`) {
		t.Errorf("count(cpu_temp) through remote read = %s, want 4", r.Data)
	}
}

// fakeSource records the scans a query makes.
type fakeSource struct {
	tables []*promql.Table
	rows   map[string][]types.Row
	scans  []string
}

func (f *fakeSource) Open(context.Context, string) (promql.Reader, error) { return f, nil }
func (f *fakeSource) Tables() []*promql.Table                             { return f.tables }
func (f *fakeSource) Close()                                              {}
func (f *fakeSource) Scan(_ context.Context, t *promql.Table, lo, hi int64, _, _ []int) (promql.Rows, error) {
	f.scans = append(f.scans, fmt.Sprintf("%s [%d, %d]", t.Name, lo, hi))
	return &fakeRows{rows: f.rows[t.Name]}, nil
}

type fakeRows struct{ rows []types.Row }

func (r *fakeRows) Next(context.Context) (types.Row, bool, error) {
	if len(r.rows) == 0 {
		return nil, false, nil
	}
	row := r.rows[0]
	r.rows = r.rows[1:]
	return row, true, nil
}
func (r *fakeRows) Close() {}

// A select scans only the tables its __name__ matchers pick, with the
// query's time range (lookback or range included) pushed down in µs; a
// scan returning rows outside the range (SST pruning is coarse) or of
// other series does not change the answer.
func TestScanPushdown(t *testing.T) {
	tbl := func(name string) *promql.Table {
		return &promql.Table{Name: name, Time: 1, Tags: []promql.Column{{Name: "host", Index: 0}}, Fields: []promql.Column{{Name: "v", Index: 2}}}
	}
	row := func(host string, sec int64, v float64) types.Row {
		return types.Row{types.DVarchar(host), types.DTimestamptz(sec * 1e6), types.DFloat64(v)}
	}
	src := &fakeSource{tables: []*promql.Table{tbl("m1"), tbl("m2")}, rows: map[string][]types.Row{
		"m1": {row("a", 100, 1), row("a", 1000, 2), row("a", 1100, 3), row("b", 1090, 7), row("a", 5000, 9)},
	}}
	mux := http.NewServeMux()
	promql.New(src, promql.Options{}).Register(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	_, r := call(t, "GET", hs.URL+promql.Prefix, "/api/v1/query", url.Values{"query": {`max_over_time(m1{host="a"}[5m])`}, "time": {"1200"}})
	if want := `{"resultType":"vector","result":[{"metric":{"host":"a"},"value":[1200,"3"]}]}`; string(r.Data) != want {
		t.Errorf("answer %s, want %s", r.Data, want)
	}
	// (900 s, 1200 s]: Prometheus 3's ranges are left-open.
	if want := []string{"m1 [900001000, 1200000999]"}; !slices.Equal(src.scans, want) {
		t.Errorf("scans %v, want %v", src.scans, want)
	}
}

// EvalTQL answers as a table: a column per label met, then time and
// value, by series then time; bad arguments and PromQL carry SQLSTATEs.
func TestEvalTQL(t *testing.T) {
	tbl := &promql.Table{Name: "m", Time: 1, Tags: []promql.Column{{Name: "host", Index: 0}}, Fields: []promql.Column{{Name: "v", Index: 2}}}
	row := func(host string, sec int64, v float64) types.Row {
		return types.Row{types.DVarchar(host), types.DTimestamptz(sec * 1e6), types.DFloat64(v)}
	}
	src := &fakeSource{tables: []*promql.Table{tbl}, rows: map[string][]types.Row{
		"m": {row("a", 10, 1), row("a", 20, 2), row("b", 10, 5), row("b", 20, 6)},
	}}
	res, err := promql.EvalTQL(context.Background(), src, "public", "10", "20", "10s", `m * 2`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Labels, res.Rows); got != "[host] [{[a] 10000 2} {[a] 20000 4} {[b] 10000 10} {[b] 20000 12}]" {
		t.Errorf("TQL = %s", got)
	}
	for _, c := range []struct{ start, end, step, q, code string }{
		{"x", "20", "10", "m", sqlerr.InvalidParameterValue},
		{"10", "20", "0", "m", sqlerr.InvalidParameterValue},
		{"20", "10", "5", "m", sqlerr.InvalidParameterValue},
		{"10", "20", "10", "sum(", sqlerr.SyntaxError},
	} {
		if _, err := promql.EvalTQL(context.Background(), src, "public", c.start, c.end, c.step, c.q); sqlerr.Code(err) != c.code {
			t.Errorf("%+v: got %v, want %s", c, err, c.code)
		}
	}
}

// TQL EVAL through pgwire answers what the HTTP API answers for the same
// expression: a text column per label, ts and value, a row per point.
func TestTQLOverPgwire(t *testing.T) {
	rn := startRunnel(t)
	base := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	rn.remoteWrite(t, testData(3, base, 120), 5000)
	conn := rn.srv.Connect(t)
	// The HTTP ingest writes to database dev, which the test connects to.
	q := `sum by (job) (rate(http_requests_total[5m]))`
	start, end := base.Add(10*time.Minute), base.Add(20*time.Minute)
	rows, err := conn.Query(context.Background(), fmt.Sprintf("TQL EVAL (%s, '%s', '2m') %s", unix(start), end.Format(time.RFC3339), q))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, f := range rows.FieldDescriptions() {
		cols = append(cols, f.Name)
	}
	var got []string
	for rows.Next() {
		var job string
		var ts time.Time
		var v float64
		if err := rows.Scan(&job, &ts, &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %d %s", job, ts.UnixMilli(), promql.FormatValue(v)))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cols) != "[job ts value]" {
		t.Errorf("columns %v, want [job ts value]", cols)
	}
	_, r := call(t, "GET", rn.api(), "/api/v1/query_range", url.Values{"query": {q}, "start": {unix(start)}, "end": {unix(end)}, "step": {"120"}})
	var m struct {
		Result []struct {
			Metric map[string]string
			Values [][2]any
		}
	}
	json.Unmarshal(r.Data, &m)
	var want []string
	for _, s := range m.Result {
		for _, p := range s.Values {
			want = append(want, fmt.Sprintf("%s %d %s", s.Metric["job"], int64(p[0].(float64)*1000), p[1]))
		}
	}
	if !slices.Equal(got, want) || len(want) != 12 {
		t.Errorf("TQL rows:\n%v\nAPI points:\n%v", got, want)
	}
	// Errors carry SQLSTATEs.
	for _, c := range []struct{ sql, code string }{
		{"TQL EVAL (0, 10, '0s') up", sqlerr.InvalidParameterValue},
		{"TQL EVAL (0, 10, '5s') sum(", sqlerr.SyntaxError},
		{"TQL EVAL (0, 10) up", sqlerr.SyntaxError},
	} {
		_, err := conn.Exec(context.Background(), c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: %v, want %s", c.sql, err, c.code)
		}
	}
}
