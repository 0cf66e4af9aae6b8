// Package frontend is Runnel's frontend role: it serves SQL sessions over
// the PostgreSQL wire protocol (engine.go, session.go), binds and plans
// statements with internal/sql, runs SELECT through the batch executors
// over a committed storage snapshot (datasource.go), keeps transaction
// blocks (txn.go), answers the system catalog relations of pg_catalog,
// information_schema and rw_catalog (syscat*.go), DESCRIBE, SHOW CREATE,
// EXPLAIN and COPY, and turns DDL into requests to the meta node.
//
// It talks to the other roles only through two interfaces (frontend.go):
//
//   - Meta (frontend → meta): catalog reads (CatalogReader), DDL, the
//     streaming jobs' lifecycle (create, drop, cancel), epochs (FLUSH,
//     RECOVER, waiting for a write's epoch) and the state the system
//     catalog shows (actors, recoveries, failed jobs, sinks).
//   - DML (frontend → compute): a statement's writes, handed to the
//     owning table's actor so that they are committed by the epoch
//     mechanism (I7); a transaction block's writes to several tables are
//     applied in one epoch.
//
// Arguments and results are catalog structs, ids and plans, with three
// exceptions that a cluster would have to replace (and why they are not
// yet): CatalogReader.Relations takes a filter function (a frontend of a
// cluster reads a local replica of the catalog, so the filter stays
// local); a materialized view's plan (streamplan.Node) holds bound
// expressions, which have no serialized form yet; and DML carries a
// function applied to the table actor's writer, because a statement
// reads the table's latest state inside the actor (UPDATE, ON CONFLICT)
// — a cluster would ship rows or write sets (exec.WriteSetEntry is
// already plain data).
//
// In the other direction the meta node uses the frontend's planner
// (PlanView, PlanSink) to re-plan a job's stored SQL definition when it
// rebuilds the job after a recovery, and table actors read the oldest
// open transaction snapshot (TxHorizon) to detect write conflicts.
//
// Batch reads go straight to the storage engine's committed snapshots;
// the frontend never touches actors.
package frontend
