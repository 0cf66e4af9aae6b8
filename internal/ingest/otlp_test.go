package ingest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// TestOTLPMetrics: the OpenTelemetry Go SDK's OTLP/HTTP exporter (a real
// client, protobuf) writes a counter, a gauge and a histogram to
// /v1/otlp/v1/metrics; each metric becomes a table named as Prometheus
// names it (dots as underscores), resource and point attributes become tag
// columns, a histogram becomes _bucket (cumulative, le), _sum and _count,
// and the export succeeds only once the rows are committed (a SELECT right
// after it sees them). A body that is not OTLP is refused with 400.
func TestOTLPMetrics(t *testing.T) {
	e := start(t)
	u, err := url.Parse(e.http.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(u.Host), otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithURLPath("/v1/otlp/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	res := resource.NewSchemaless(attribute.String("service.name", "checkout"))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "http.server.duration"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: []float64{0.1, 1}}})))
	meter := mp.Meter("test")
	requests, _ := meter.Int64Counter("http.server.requests")
	requests.Add(ctx, 3, metric.WithAttributes(attribute.String("route", "/cart")))
	requests.Add(ctx, 2, metric.WithAttributes(attribute.String("route", "/pay")))
	temp, _ := meter.Float64Gauge("room.temperature")
	temp.Record(ctx, 21.5)
	dur, _ := meter.Float64Histogram("http.server.duration")
	for _, v := range []float64{0.05, 0.5, 0.7, 3} {
		dur.Record(ctx, v)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(ctx, &rm); err != nil {
		t.Fatalf("export: %v", err)
	}

	for _, tc := range []struct{ sql, want string }{
		{"SELECT service_name, route, greptime_value FROM http_server_requests ORDER BY route", "[checkout|/cart|3 checkout|/pay|2]"},
		{"SELECT service_name, greptime_value FROM room_temperature", "[checkout|21.5]"},
		{"SELECT le, greptime_value FROM http_server_duration_bucket ORDER BY greptime_value", "[0.1|1 1|3 +Inf|4]"},
		{"SELECT greptime_value FROM http_server_duration_sum", "[4.25]"},
		{"SELECT greptime_value FROM http_server_duration_count", "[4]"},
	} {
		if got := e.query(t, tc.sql); got != tc.want {
			t.Errorf("%s = %s; want %s", tc.sql, got, tc.want)
		}
	}
	// The time index holds the points' times.
	var ts time.Time
	if err := e.conn.QueryRow(ctx, "SELECT greptime_timestamp FROM room_temperature").Scan(&ts); err != nil || time.Since(ts) > time.Hour || time.Since(ts) < 0 {
		t.Fatalf("greptime_timestamp = %v, %v; want the export's time", ts, err)
	}

	if code, msg := e.post(t, "/v1/otlp/v1/metrics", "", []byte("\xff\xff not protobuf")); code != 400 || !strings.Contains(msg, "otlp") {
		t.Fatalf("garbage body: %d %s; want 400", code, msg)
	}
}
