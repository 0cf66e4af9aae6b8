package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// startServer starts a real server with its HTTP listener on a free port.
func startServer(t *testing.T) (*servertest.Server, string) {
	t.Helper()
	srv := servertest.Start(t, servertest.WithConfig(func(c *server.Config) { c.HTTPListen = "127.0.0.1:0" }))
	addr := srv.Server.HTTPAddr()
	if addr == "" {
		t.Fatal("HTTPAddr is empty with HTTPListen set")
	}
	return srv, "http://" + addr
}

// workload gives a server something to show: a table, a RECOVER, a view
// over the table, a sink from the view, rows before and after the view, a
// FLUSH and a statement that fails (42P01).
func workload(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	for _, q := range []string{
		"CREATE TABLE t (k INT PRIMARY KEY, v INT)",
		"RECOVER",
		"INSERT INTO t SELECT i, i % 7 FROM generate_series(1, 1000) g(i)",
		"CREATE MATERIALIZED VIEW mv AS SELECT v, count(*) AS n FROM t GROUP BY v",
		"CREATE SINK sk FROM mv WITH (connector = 'blackhole', type = 'upsert', primary_key = 'v')",
		"INSERT INTO t SELECT i, i % 7 FROM generate_series(1001, 1500) g(i)",
		"FLUSH",
	} {
		servertest.Exec(t, conn, q)
	}
	if _, err := conn.Exec(t.Context(), "SELECT * FROM no_such_table"); err == nil {
		t.Fatal("a query of a missing table succeeded")
	}
}

// scrape fetches /metrics and parses it as Prometheus text.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value sums the series of family name whose labels include want (a
// counter's or gauge's value, a histogram's count).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	sum := 0.0
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// The key series exist, parse, and move when work happens: DML, a view,
// a failed statement, a recovery.
func TestMetricsMoveWithWork(t *testing.T) {
	srv, base := startServer(t)
	before := scrape(t, base)
	for _, name := range []string{
		"runnel_barrier_duration_seconds", "runnel_epochs_committed_total", "runnel_barrier_epochs_behind",
		"runnel_committed_epoch_age_seconds", "runnel_storage_ssts", "runnel_storage_sst_bytes",
		"runnel_storage_deletion_queue_objects", "runnel_streaming_cache_limit_bytes", "runnel_pgwire_sessions",
		"runnel_metastore_transaction_seconds", "go_goroutines",
	} {
		if before[name] == nil {
			t.Errorf("series %s missing from /metrics", name)
		}
	}

	conn := srv.Connect(t)
	servertest.Exec(t, conn, "CREATE TABLE t (k INT PRIMARY KEY, v INT)")
	servertest.Exec(t, conn, "INSERT INTO t SELECT i, i % 7 FROM generate_series(1, 500) g(i)")
	servertest.Exec(t, conn, "CREATE MATERIALIZED VIEW mv AS SELECT v, count(*) AS n FROM t GROUP BY v")
	servertest.Exec(t, conn, "INSERT INTO t SELECT i, i % 7 FROM generate_series(501, 1000) g(i)")
	servertest.Exec(t, conn, "FLUSH")
	if _, err := conn.Exec(t.Context(), "SELECT * FROM no_such_table"); err == nil {
		t.Fatal("a query of a missing table succeeded")
	}
	recoveriesBefore := value(before, "runnel_recoveries_total", map[string]string{"reason": "user", "scope": "all", "result": "ok"})
	servertest.Exec(t, conn, "RECOVER")
	servertest.Exec(t, conn, "FLUSH")

	after := scrape(t, base)
	grew := func(name string, labels map[string]string) {
		t.Helper()
		b, a := max(value(before, name, labels), 0), value(after, name, labels)
		if a <= b {
			t.Errorf("%s%v: %v before, %v after; want it to grow", name, labels, b, a)
		}
	}
	grew("runnel_epochs_committed_total", nil)
	grew("runnel_barrier_duration_seconds", map[string]string{"phase": "total"})
	grew("runnel_barrier_duration_seconds", map[string]string{"phase": "collect"})
	grew("runnel_statement_duration_seconds", map[string]string{"kind": "INSERT"})
	grew("runnel_statement_duration_seconds", map[string]string{"kind": "CREATE MATERIALIZED VIEW"})
	grew("runnel_statement_duration_seconds", map[string]string{"kind": "FLUSH"})
	grew("runnel_statement_errors_total", map[string]string{"sqlstate_class": "42"})
	grew("runnel_storage_write_bytes_total", map[string]string{"kind": "flush"})
	grew("runnel_metastore_transaction_seconds", nil)
	grew("runnel_recovery_phase_seconds", map[string]string{"phase": "rebuild"})
	grew("runnel_pgwire_sessions_opened_total", nil)
	if got := value(after, "runnel_recoveries_total", map[string]string{"reason": "user", "scope": "all", "result": "ok"}); got != max(recoveriesBefore, 0)+1 {
		t.Errorf("runnel_recoveries_total{reason=user}: %v after one RECOVER (%v before)", got, recoveriesBefore)
	}
	if got := value(after, "runnel_relations", map[string]string{"kind": "materialized_view"}); got != 1 {
		t.Errorf("runnel_relations{kind=materialized_view} = %v; want 1", got)
	}
	if got := value(after, "runnel_pgwire_sessions", nil); got < 1 {
		t.Errorf("runnel_pgwire_sessions = %v with a session open", got)
	}
	if got := value(after, "runnel_actors", nil); got < 2 {
		t.Errorf("runnel_actors = %v with a table and a view running", got)
	}
	if got := value(after, "runnel_storage_ssts", nil); got < 1 {
		t.Errorf("runnel_storage_ssts = %v after committed writes", got)
	}
	if got := value(after, "runnel_fragment_actors", map[string]string{"streaming_job": "materialized view mv"}); got < 1 {
		t.Errorf("runnel_fragment_actors{streaming_job=materialized view mv} = %v", got)
	}

	// The view's rows flow after the recovery too: its fragment counters
	// (reset with the rebuilt actors) move with new DML.
	rowsOut := func(fams map[string]*dto.MetricFamily) float64 {
		return value(fams, "runnel_fragment_rows_out_total", map[string]string{"streaming_job": "materialized view mv"})
	}
	mid := rowsOut(after)
	servertest.Exec(t, conn, "INSERT INTO t SELECT i, i % 7 FROM generate_series(1001, 1100) g(i)")
	servertest.Exec(t, conn, "FLUSH")
	// FLUSH returned: every actor passed the barrier after the rows, so
	// it counted them (before dispatching them).
	if got := rowsOut(scrape(t, base)); got <= mid {
		t.Fatalf("runnel_fragment_rows_out_total{streaming_job=materialized view mv} stayed at %v after an INSERT and FLUSH (was %v)", got, mid)
	}
}

// Every series name follows the conventions: runnel_ prefix (or the Go
// runtime's go_/process_), and counters end in _total.
func TestMetricNames(t *testing.T) {
	_, base := startServer(t)
	for name, f := range scrape(t, base) {
		if !(len(name) > 7 && name[:7] == "runnel_") && !(name[:3] == "go_") && !(len(name) > 8 && name[:8] == "process_") {
			t.Errorf("series %s lacks the runnel_ prefix", name)
		}
		if f.GetType() == dto.MetricType_COUNTER && name[len(name)-6:] != "_total" {
			t.Errorf("counter %s does not end in _total", name)
		}
		if f.GetHelp() == "" {
			t.Errorf("series %s has no help", name)
		}
	}
}

// /debug/pprof/ is served only when enabled (Config.Pprof, --pprof).
func TestPprofOffUnlessEnabled(t *testing.T) {
	_, base := startServer(t)
	if code := getStatus(t, base+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ without --pprof: %d; want 404", code)
	}
	srv := servertest.Start(t, servertest.WithConfig(func(c *server.Config) { c.HTTPListen, c.Pprof = "127.0.0.1:0", true }))
	if code := getStatus(t, "http://"+srv.Server.HTTPAddr()+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK {
		t.Errorf("GET /debug/pprof/goroutine with --pprof: %d; want 200", code)
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
