// Package metasrv is the meta node's DDL and streaming-job lifecycle
// (issue 16 step 0; internal/meta holds the barrier loop it drives). It
// creates tables, materialized views and sinks (state tables allocated,
// registered with the catalog entry in one metastore transaction,
// statecatalog.go; actors started on the compute node; a view published
// once its backfill's epoch is committed), drops them (actors stopped at a
// barrier and joined before their state is unregistered, I3), cancels
// creations (CANCEL JOBS), rebuilds every job after a recovery (tables
// first, then views in creation order, then sinks; a job that cannot be
// rebuilt fails alone, I6), keeps the system parameters, and owns the
// sinks' workers.
//
// Its seams:
//   - frontend → meta: the frontend's DDL arrives through frontend.Meta,
//     which internal/server implements in-process over Service (the
//     catalog writes that start no job go to internal/catalog directly).
//     Arguments are catalog structs and stream plans.
//   - meta → compute: Service builds, connects and stops actors through
//     the Compute interface (catalog structs, plans, actor ids; compute.Node
//     in-process), and the barrier loop injects barriers and collects them
//     through meta.Actors.
//     Not plain data yet: a new job's input channels travel in the
//     AddOutputs mutation of the barrier that connects it, and a creation
//     waits on a compute.ViewJob handle (see internal/compute's doc).
//   - meta → frontend: a rebuild re-plans a job's stored SQL definition
//     with the Planner (the frontend's binder and planner), because plans
//     have no serialized form yet; a cluster's meta node would store the
//     plan fragment it was given at CREATE.
//
// Ordering rules it keeps (each names its invariant where it is coded):
// a DROP marks the relation dropping before it stops the actors, and
// decides "nothing runs" under the barrier loop's graph lock, which every
// rebuild holds, so a rebuild never brings back a dropped job's actors
// over state being unregistered (I3); a creation is published under the
// graph lock too, so a recovery either replaced it first or sees it whole.
package metasrv
