// Package sink delivers a sink job's changes to an external system.
//
// A sink (CREATE SINK) is a streaming job whose plan ends in a Sink
// executor (internal/stream/exec) that appends every change to the sink's
// log store, a state table keyed by (epoch, writer, seq) that commits with
// the epoch like all state. This package holds the other half: the Worker,
// one goroutine per sink, that drains the log off the barrier path, and the
// Target interface the connectors implement (internal/sink/postgres,
// internal/sink/kafka, internal/sink/file,
// blackhole here).
//
// The worker's contract:
//
//  1. It reads the log only at the last committed epoch, so a target is
//     handed only what a committed epoch produced (I8: the outside world
//     is told only what is durable; a recovery never takes back anything
//     a target saw).
//  2. It delivers epochs in order, one Txn per epoch, the changes of an
//     epoch in (writer, seq) order. Every change of one target key is
//     written by one writer (the planner distributes the Sink by that
//     key), so per key the order is the stream's.
//  3. After an epoch is delivered, its log rows are truncated: the worker
//     reports them (Truncations) and the sink's writer 0 deletes them at
//     its next barrier; the deletes commit with that epoch. A recovery
//     that loses them makes the worker scan the log from its start again
//     (Log.Rebuilt), find the rows and report them again. Truncation is
//     the log's record of delivery progress: what is still in the log at a
//     committed epoch is either undelivered or about to be deleted.
//  4. Exactly once where the target allows it: a target that records the
//     last epoch it holds in the same transaction as the rows (postgres)
//     returns it from Open, and the worker skips the epochs it has; after
//     a crash it re-reads the log and delivers exactly the epochs the
//     target lacks (kafka with is_exactly_once keeps it as a consumer
//     group's transactional offset). A file target (s3, fs) overwrites an
//     epoch's file, named by the epoch, when it is delivered again. Other
//     targets get at least once: an epoch delivered but not yet truncated
//     when the process dies is delivered again. A target that keeps
//     epochs past their Commit (Buffered: a file sink with
//     rollover_seconds) has them stay in the log, and in the backlog,
//     until it reports them durable; their truncations are released
//     together, and after any failure the target is opened again and
//     handed every epoch after the last durable one.
//  5. A slow or unreachable target never holds a barrier up: the Sink
//     executor only appends to the log. Delivery failures are retried with
//     backoff (100 ms doubling to 10 s) and shown in rw_catalog.rw_sinks
//     with the backlog (rows and epochs pending). The backlog is bounded by
//     log_store.max_pending_rows: beyond it the Sink executor stops reading
//     its input after a barrier until the worker has drained below the
//     bound, which back-pressures the job's upstream (the bound trades a
//     stall for bounded log growth; it is 10 million rows by default).
//  6. I3: DROP SINK stops the job's actors and then the worker (Stop joins
//     its goroutine) before the log's state table is unregistered: nothing
//     reads or writes the log when it is purged.
//
// This package does not plan or run actors; internal/server wires a sink's
// job (planned by internal/streamplan) to its Worker.
package sink
