// Package obs holds Runnel's Prometheus metrics: the series every other
// package records into, and the registry the HTTP listener (package
// httpapi) serves at /metrics.
//
// # Design
//
// Two kinds of series, chosen per series by where the truth lives:
//
//   - Recorded series are counters and histograms that change when an
//     event happens (a barrier commits, a statement ends, a compaction
//     writes an SST). The code where the event happens calls one small
//     function of this package (ObserveBarrier, StatementDone,
//     StorageWrite, ...). Each is a few atomic adds on a pre-resolved
//     child (no label lookup, no lock, no allocation), so that hot paths
//     stay as fast as before (docs/benchmarks.md, "metrics overhead").
//   - Scraped series are gauges (and a few counters) computed from state
//     that already exists, read when /metrics is scraped: actor states,
//     SSTs per level, sink backlogs, source lag, cache bytes. The server
//     registers a Collector that reads them (server/metrics.go), as the
//     rw_catalog relations read them for SQL; nothing is kept twice.
//
// The recorded series are process-wide (one registry, Default): a process
// runs one server in production. Tests that run several servers in one
// process see their sums.
//
// # Naming
//
// Prometheus conventions: the runnel_ prefix, base units in the name
// (_seconds, _bytes), _total on counters, labels of bounded cardinality
// only (a phase, a level, a statement kind, a job and fragment — never an
// actor, a key or an error text). docs/operations.md lists every series.
//
// This package imports nothing of Runnel's, so that every layer (storage,
// metastore, stream, pgwire, meta) may record into it.
package obs
