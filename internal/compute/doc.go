// Package compute is Runnel's compute role: it runs the streaming actors
// of this process. It builds a table's actor (with its connector feed, if
// any) and the actors of a materialized view's or sink's plan
// (streamplan.Instantiate), connects new actors to their running
// upstreams, joins actors that a barrier stopped, forgets the jobs a
// recovery tore down, and routes DML to table actors (Write, and WriteAll
// for a transaction block's writes to several tables in one epoch, I7).
//
// The meta node (internal/metasrv) drives it through the metasrv.Compute
// interface, which Node implements — SpawnTable, BuildTable, BuildView,
// RebuildView, Start, RelationActors, StopActors, ForgetStopped,
// TearDown, Rebuilt —
// and its barrier loop (internal/meta) injects and collects barriers
// through Barriers (meta.Actors). The frontend writes through Node as a
// frontend.DML.
//
// Arguments are catalog structs, plans and actor ids, with these
// in-process shortcuts (not yet plain data, and why):
//   - BuildView returns the new actors' input channels for the barrier
//     that connects them (stream.Output holds a Go channel): exchanges
//     between actors are channels until there is a network exchange.
//   - ViewJob is a handle the creating meta node waits on (backfill done,
//     job replaced by a recovery); a cluster would report both.
//   - JobSpec.SinkLog is the sink's worker, which the meta node owns.
//   - Config.TxHorizon and Config.Dropping are callbacks into the
//     frontend (oldest open transaction snapshot) and the meta node (a
//     DROP in progress).
//
// Invariants: actors are joined before their job is forgotten (I3,
// ForgetStopped and TearDown close the job's replaced channel only for
// actors already stopped); a write handed to an actor is applied or lost
// with its epoch, and a write whose actor a recovery replaced is retried
// on the rebuilt one (I7).
package compute
