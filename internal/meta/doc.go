// Package meta is Runnel's control plane: the barrier loop that advances
// epochs and commits them, recovery, and DDL that changes the stream graph.
//
// The barrier loop owns the epoch. Every barrier_interval (or at once for
// FLUSH and DDL) it injects barrier {Prev: curr, Curr: next} into the
// compute node's source actors, waits until every actor has collected it,
// then commits epoch Prev in the storage engine (one version delta for all
// tables, I7) and wakes the FLUSH waiters whose writes it covers.
//
// Recovery (I3) is always: stop and join every actor and clear write
// buffers, then purge dropped state, then rebuild actors from the catalog at
// the last committed epoch.
package meta
