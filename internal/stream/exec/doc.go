// Package exec holds the streaming executors: the table executor (DML
// source + materialize), and the operators of materialized views.
//
// Every executor keeps its state in state tables (package state), commits
// them when it passes a barrier, and checks its context in every loop whose
// length depends on data (I5). Input that contradicts state is an error
// naming the table and key (I6), never a panic.
//
// Operators that would otherwise read storage per row (the aggregation's
// group states, the join's rows per key) keep write-through caches of
// their state tables across epochs. Every cache of the process is charged,
// in approximate bytes, to one CacheBudget (cache.go; the server's
// streaming cache bytes, 256 MiB by default) and evicts least recently
// used entries to stay within it; an evicted entry is reloaded from its
// state table, which always holds the same content (I7: a cache never
// holds anything the state tables do not). Materialize caches the view
// rows it read or rewrote the same way.
//
// A new job's executors know that their state tables started empty
// (SetFresh, set by the plan when it backfills). Materialize and HashJoin
// then keep a key filter (keyfilter.go: a growable Bloom filter) of the
// keys they wrote, and a read that the filter proves would find nothing —
// Materialize's existence check of each backfilled row, the join's first
// probe of a key — is skipped. The answer is the same as the read's, so
// the consistency checks (I6) keep their strength.
//
// While a new job backfills, its aggregations do not flush at barriers
// (BackfillGate, backfill.go): nothing reads a creating job's state before
// the epoch that publishes it, so each group is written and emitted once
// when the backfill ends instead of once per barrier (I7 holds at that
// epoch; a recovery during creation drops the job).
//
// Bulk inserts (tablebulk.go: COPY, multi-row INSERT, INSERT ... SELECT of
// 64 rows or more) reach the table's actor already encoded and sorted
// (BatchEncoder); TableWriter.InsertBatch proves their keys new with range
// seeks and the batch goes to the engine as one run of the actor's epoch
// (state.Table.IngestSorted) — uncommitted data like a barrier's
// hand-over, so I7 (all or nothing) and I1 (spilled SSTs owned by their
// upload job) hold as for any epoch's writes.
package exec
