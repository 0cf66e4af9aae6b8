// Package server assembles one Runnel process with every role (role all,
// `runnel serve`): it opens the metadata store, the object store and the
// storage engine, loads the catalog, creates the roles and wires their
// seams (roles.go), rebuilds every streaming job, starts the barrier loop,
// and serves SQL over the PostgreSQL wire protocol and the HTTP APIs.
//
// The roles live in their own packages (docs/architecture.md, "Roles and
// seams"): internal/frontend (sessions, statement execution, system
// catalog relations), internal/metasrv (DDL, job lifecycle, rebuild, state
// catalog) with internal/meta (barrier loop, recovery), and
// internal/compute (actors, DML routing). This package holds only the
// wiring, the HTTP observer that reads all of them (observe_*.go), and the
// accessors tests and benchmarks in other packages use (Internals,
// StateSize, WaitSources, SourceRows).
package server
