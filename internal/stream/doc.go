// Package stream is Runnel's streaming runtime: actors (goroutines) running
// chains of executors, connected by channels, through which change chunks
// and barriers flow.
//
// Epochs and barriers. Meta injects a barrier {Prev, Curr} into every
// source actor. Everything an executor writes to its state tables before
// the barrier belongs to epoch Prev; when an actor has passed the barrier
// it has handed its Prev writes to the storage engine (Ingest) and reports
// the barrier as collected. When every actor has collected the barrier,
// meta commits epoch Prev in one version delta (storage.Engine.Commit):
// one consistent point for every table and view (I7).
//
// Failures. An actor turns an executor error or a panic into an actor
// failure reported to the LocalBarrierManager; it never takes the process
// down (I6). Aborting an actor cancels its context; executors check the
// context in every data-dependent loop (I5).
//
// Actor states (rw_catalog.rw_actors). An actor shows what it is doing
// now and since when: executors report at the points where they block
// (ReportState, Receive, the dispatchers' sends: waiting for input,
// waiting for barrier alignment, blocked on output) and where they work
// (writing state at a barrier, applying DML, backfilling); the actor
// reports processing each time it pulls its chain. A report that does not
// change the state costs a pointer comparison, so the hot path is free.
//
// This package imports storage (state tables) and types/expr; it never
// imports meta, sql or pgwire.
package stream
