// Package bench runs Runnel's built-in benchmarks against an embedded
// server (a real server in this process on a loopback port, with its data
// in a temporary directory):
//
//   - `runnel bench nexmark` (nexmark.go): the standard streaming
//     benchmark, each query as a materialized view over the built-in
//     nexmark source, reporting events per second. Progress is the rows the
//     view's sources have emitted (server.SourceRows), drawn as a bar on a
//     terminal and as plain lines elsewhere (progress.go).
//   - `runnel bench ivm` (ivm.go): the latency from a single-row UPDATE to
//     reading its effect in a join view and an aggregation view, Runnel
//     (UPDATE + FLUSH) against PostgreSQL (UPDATE + REFRESH MATERIALIZED
//     VIEW) on the same rows, with a throwaway PostgreSQL cluster from
//     internal/testutil/pgtest. Every read is checked against the value
//     computed here.
//   - `runnel bench load` (load.go): bulk loading into empty tables
//     through COPY text, CSV and binary, multi-row INSERT and INSERT ...
//     SELECT, Runnel against PostgreSQL on the same rows, the tables
//     compared after the first round.
//
// The Nexmark correctness check (nexmark_pg_test.go) loads the events a
// source generates into PostgreSQL (nexmark_postgres.go, which also holds
// the one rewrite rule from TUMBLE/HOP to PostgreSQL SQL) and compares each
// query's view with PostgreSQL's answer as multisets.
//
// The package guards no invariant itself; it measures the server and, by
// checking every answer it reads, relies on I7 (after FLUSH a view reflects
// every acknowledged write).
package bench
