// Package ingest is the HTTP ingest room (issue 18 item 3): GreptimeDB's
// write paths, so the tools that write to GreptimeDB write to Runnel.
//
//   - POST /v1/influxdb/write and /v1/influxdb/api/v2/write: InfluxDB line
//     protocol (parsed with influxdata/line-protocol/v2), `precision`
//     ns|us|ms|s (and v2's n, u), gzip request bodies; `db` (v1) or
//     `bucket`/`db` (v2) names the schema (GreptimeDB's database) in
//     Runnel's `dev` database, default `public`. A measurement is a table
//     with time index `ts`; tags are tag columns, fields value columns.
//   - POST /v1/prometheus/write: Prometheus remote write (snappy-compressed
//     protobuf, prometheus/prompb). A metric is a table with time index
//     `greptime_timestamp` and value `greptime_value` (DOUBLE PRECISION);
//     labels are tag columns.
//   - POST /v1/otlp/v1/metrics: OpenTelemetry OTLP/HTTP metrics (protobuf
//     or JSON, go.opentelemetry.io/collector/pdata), mapped as Prometheus
//     maps OTLP (otlp.go): tables like remote write's, named after the
//     metric with '.' as '_', resource and point attributes as tags, a
//     histogram as _bucket/_sum/_count; answered 200 with an empty
//     ExportMetricsServiceResponse once committed.
//
// The package parses and validates; it does no DDL or storage itself. It
// hands a whole request to a Writer (the server), which creates missing
// tables (time-series tables, internal/tsdb), adds new tag and field
// columns, writes the rows and returns only once they are committed (I7:
// acknowledged means durable — the same wait as a FLUSH of the epochs the
// rows went to). A request with a malformed line or a value of the wrong
// type is refused whole with 400 naming the line, before anything is
// written or created. Bodies are bounded (MaxBodyBytes, after
// decompression) and parsing never recurses: nothing a client sends can
// end the process (I9).
//
// Created tables are GreptimeDB's default, last write wins on (tags,
// time): a client retrying an unacknowledged request rewrites the same
// rows, so the retry is idempotent. The header `x-greptime-hints:
// append_mode=true, ttl=7d` (or `x-greptime-hint-append_mode: true`)
// chooses append mode and a TTL for tables the request creates.
package ingest
