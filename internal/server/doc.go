// Package server assembles one Runnel process: it opens the metadata store,
// the object store and the storage engine, loads the catalog, starts the
// barrier loop and the actors of every streaming job, and serves SQL
// sessions over the PostgreSQL wire protocol.
//
// It is also where statements meet the system: the session layer binds a
// statement with internal/sql and then runs it — SELECT through the batch
// executors at the last committed epoch, DML through the owning table's
// actor (so that writes are committed by the epoch mechanism, I7), DDL
// through the catalog, the storage engine and the barrier loop. A
// relation's catalog entry and its state tables' registration change in
// one metastore transaction, and a rebuilt job's state layout is checked
// against the one stored at its creation (statecatalog.go).
package server
