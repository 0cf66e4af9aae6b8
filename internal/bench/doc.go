// Package bench runs Runnel's built-in benchmarks against an embedded
// server: `runnel bench nexmark` (the standard streaming benchmark, each
// query as a materialized view over the built-in nexmark source) and, in
// later work, `runnel bench ivm` (incremental maintenance against
// PostgreSQL's REFRESH).
package bench
