// Package promql is PromQL over Runnel's time-series tables (issue 18
// items 4 and 5): the Prometheus HTTP API at GreptimeDB's paths, and
// Prometheus remote read, so that Grafana's Prometheus data source and a
// Prometheus server read Runnel as they read Prometheus.
//
//   - GET or POST (form) /v1/prometheus/api/v1/query, query_range,
//     series, labels, label/<name>/values; status/buildinfo, metadata and
//     query_exemplars answer what Grafana's data source asks at setup.
//     Answers are Prometheus' JSON. The db parameter (or the
//     x-greptime-db-name header) names the schema of Runnel's dev database
//     (GreptimeDB's database), default public — where the HTTP ingest
//     writes.
//   - POST /v1/prometheus/read: remote read 1.0, SAMPLES responses
//     (snappy-compressed protobuf).
//
// Expressions are evaluated by Prometheus' own engine
// (github.com/prometheus/prometheus/promql); this package gives it a
// storage.Queryable over a Source, the small interface the server
// implements to list a schema's time-series tables and scan one.
//
// # Mapping (GreptimeDB's)
//
// A time-series table is a metric: its name is __name__, each tag column
// is a label (a NULL or empty tag is no label), and each numeric field
// column gives a series per tag set. In a table with several fields (a
// line-protocol measurement) the series carry the pseudo-label
// __field__ naming their column, and matchers on it (=, !=, =~, !~) pick
// columns: cpu{__field__="usage_user"}. Samples are floats; times are
// the time index truncated to milliseconds. A table with duplicate times
// in a series (append mode) gives the last row read.
//
// # Reads
//
// Each query (or API call) pins one Reader: one storage snapshot, so all
// its selects see the same committed epoch. A select picks tables by
// the __name__ matchers, fields by the __field__ matchers, and scans each
// table with the select's time range pushed down to storage (only SSTs
// whose time range meets it are read, storage.ReadOptions.Time); the
// label matchers are applied to each row's tag columns as it is read,
// before a sample is kept. Rows past a table's TTL are never returned
// (the storage read hides them). Without matchers, label names and
// __name__/__field__ values come from the catalog, without reading rows.
//
// This package guards no storage invariant and writes nothing. I9: a
// request cannot end the process — bodies and answers are bounded
// (remote-read requests 8 MiB, MaxReadSamples; queries by the engine's
// MaxSamples and timeout), inputs are parsed or refused with 400.
package promql
