// Package server assembles one Runnel process: it opens the metadata store,
// the object store and the storage engine, loads the catalog, starts the
// barrier loop and the actors of every streaming job, and serves SQL
// sessions over the PostgreSQL wire protocol through internal/frontend.
//
// It is being split along roles (issue 16 step 0; docs/architecture.md,
// "Roles and seams"): the frontend (sessions, statement execution, system
// catalog relations) lives in internal/frontend and reaches this package
// only through frontend.Meta (implemented in-process by roles.go) and
// frontend.DML; the compute node (building, connecting and stopping
// actors, routing DML to them) lives in internal/compute. What remains
// here is the meta node's work — DDL execution, the job lifecycle, rebuild
// after recovery, the state catalog — driving the compute node through
// its methods and the barrier loop (internal/meta) through meta.Actors. A relation's
// catalog entry and its state tables' registration change in one
// metastore transaction, and a rebuilt job's state layout is checked
// against the one stored at its creation (statecatalog.go).
package server
