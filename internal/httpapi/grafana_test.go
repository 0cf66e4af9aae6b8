package httpapi_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// seriesOnlyWith are series a server shows only when a connector of that
// kind runs (the test has none): they must at least be series the code
// defines.
var seriesOnlyWith = map[string]string{
	"runnel_source_rows_total":              "an external source (Kafka, postgres-cdc)",
	"runnel_source_bytes_total":             "an external source",
	"runnel_source_malformed_records_total": "an external source",
	"runnel_source_up":                      "an external source",
	"runnel_source_lag_messages":            "a Kafka source",
	"runnel_source_lag_bytes":               "a postgres-cdc source",
	"runnel_sink_delivery_seconds":          "a sink's second delivery in this process",
}

// Every metric the Grafana dashboard (grafana/runnel.json) queries is one
// a real server exports.
func TestGrafanaDashboardQueriesExist(t *testing.T) {
	raw, err := os.ReadFile("../../grafana/runnel.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana/runnel.json: %v", err)
	}
	name := regexp.MustCompile(`\brunnel_[a-z0-9_]+`)
	used := map[string]string{} // metric -> panel
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				used[m] = p.Title
			}
		}
	}
	if len(used) < 20 {
		t.Fatalf("the dashboard queries only %d metrics", len(used))
	}

	srv, base := startServer(t)
	conn := srv.Connect(t)
	workload(t, conn)
	fams := scrape(t, base)
	src, err := os.ReadFile("../obs/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	src2, err := os.ReadFile("../server/observe_metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for m, panel := range used {
		fam := m
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if f := strings.TrimSuffix(m, suf); f != m && fams[f] != nil {
				fam = f
			}
		}
		if fams[fam] != nil {
			continue
		}
		if why, ok := seriesOnlyWith[strings.TrimSuffix(fam, "_bucket")]; ok {
			if !strings.Contains(string(src)+string(src2), `"`+strings.TrimSuffix(fam, "_bucket")+`"`) {
				t.Errorf("%s (panel %q, shown with %s) is defined nowhere", fam, panel, why)
			}
			continue
		}
		missing = append(missing, m+" (panel "+panel+")")
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the dashboard queries metrics the server does not export:\n%s", strings.Join(missing, "\n"))
	}
}
