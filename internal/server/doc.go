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
//
// cluster.go puts the process in the cluster tables (internal/cluster):
// it registers the node, takes the meta leadership by force (a process
// with every role claims the cluster) and installs the term check as the
// metastore's fence before the storage engine opens, so every catalog and
// version commit is fenced (I1/I2); when the leadership is lost it steps
// down (stops serving, Serve returns ErrSteppedDown). metanode.go runs
// the meta role alone (`runnel serve --role meta`).
package server
