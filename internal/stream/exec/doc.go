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
// holds anything the state tables do not).
package exec
