// Package sinktest tests sinks end to end: a real Runnel server (in
// process, or a subprocess for kill -9) with CREATE SINK delivering to a
// throwaway PostgreSQL cluster (internal/testutil/pgtest), compared with
// the view the sink reads after seeded random DML, across RECOVER,
// restarts, crashes and the target going down.
package sinktest
