package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/promtest"
)

// TestPrometheusScrapes (issue 17 acceptance): Debian's Prometheus server
// scrapes a real Runnel's /metrics, its parser accepts the exposition
// (up == 1, no scrape error), and PromQL queries through its HTTP API
// return the expected series with the values Runnel reports.
func TestPrometheusScrapes(t *testing.T) {
	srv, base := startServer(t)
	conn := srv.Connect(t)
	workload(t, conn)
	// Recorded series are process-wide (other tests of this binary add to
	// them), so the expected values are Runnel's own exposition, read
	// before Prometheus starts: nothing runs a statement in between.
	direct := scrape(t, base)
	target := strings.TrimPrefix(base, "http://")
	prom := promtest.Start(t, fmt.Sprintf(`global:
  scrape_interval: 200ms
  scrape_timeout: 150ms
scrape_configs:
  - job_name: runnel
    static_configs:
      - targets: [%q]
`, target))

	// poll waits until query returns at least one sample.
	poll := func(query string) []promtest.Sample {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got, err := promtest.Query(prom, query)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > 0 || time.Now().After(deadline) {
				return got
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	up := poll(`up{job="runnel"}`)
	if len(up) != 1 || up[0].Float() != 1 || up[0].Metric["instance"] != target {
		t.Fatalf(`up{job="runnel"} = %+v; want one series of %s with value 1`, up, target)
	}
	// Every sample of the scrape was accepted.
	if s := poll(`scrape_samples_scraped{job="runnel"}`); len(s) != 1 || s[0].Float() < 100 {
		t.Fatalf("scrape_samples_scraped = %+v; want the whole exposition (hundreds of samples)", s)
	}
	if got := poll(`runnel_epochs_committed_total{job="runnel"} > 0`); len(got) != 1 {
		t.Fatalf("runnel_epochs_committed_total: %+v; want one series above 0", got)
	}
	// Labelled series and a histogram through PromQL functions.
	byKind := poll(`sum by (kind) (runnel_statement_duration_seconds_count{job="runnel"})`)
	kinds := map[string]float64{}
	for _, s := range byKind {
		kinds[s.Metric["kind"]] = s.Float()
	}
	for _, k := range []string{"INSERT", "CREATE MATERIALIZED VIEW", "FLUSH"} {
		want := value(direct, "runnel_statement_duration_seconds", map[string]string{"kind": k})
		if want < 1 || kinds[k] != want {
			t.Fatalf("%s statements through PromQL: %v; /metrics says %v", k, kinds[k], want)
		}
	}
	// The fragment series keep their job label: a label named "job"
	// collides with the scrape job's and Prometheus renames it to
	// exported_job, merging every streaming job's series under
	// the dashboard's sum by (streaming_job, fragment).
	if got := poll(`sum by (streaming_job) (runnel_fragment_actors{job="runnel", streaming_job="materialized view mv"})`); len(got) != 1 || !(got[0].Float() >= 1) {
		t.Fatalf("runnel_fragment_actors of materialized view mv through PromQL: %+v; want one series of at least 1 actor", got)
	}
	if got := poll(`histogram_quantile(0.99, sum by (le) (runnel_barrier_duration_seconds_bucket{phase="total"}))`); len(got) != 1 || !(got[0].Float() > 0) {
		t.Fatalf("p99 barrier latency through PromQL: %+v; want one positive value", got)
	}
	// A value Runnel computes at scrape time equals SQL's answer.
	var relations int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM rw_catalog.rw_tables`).Scan(&relations); err != nil {
		t.Fatal(err)
	}
	if got := poll(`runnel_relations{kind="table"}`); len(got) != 1 || got[0].Float() != float64(relations) {
		t.Fatalf(`runnel_relations{kind="table"} = %+v; want %d as rw_tables says`, got, relations)
	}
}
