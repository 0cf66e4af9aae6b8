// Package clienttest is the client matrix: the PostgreSQL drivers and tools
// people use, each pointed at a real Runnel server started by the test
// (in process, loopback port, temporary data directory).
//
// TestClients has one subtest per client — pgx (Go, with CopyFrom), lib/pq
// (Go), psql, psycopg2 + SQLAlchemy + pandas (Debian's /usr/bin/python3),
// pgjdbc (Debian's jar, a Java program compiled with javac in the test),
// node-postgres and postgres.js (npm, versions pinned by
// testdata/node/package-lock.json). Each does, through the driver's own API:
//
//  1. DDL: the items table (fixtures.go) with a column of every type
//     Runnel stores (bool, int2/4/8, float4/8, numeric, text, varchar,
//     bytea, date, time, timestamp, timestamptz, interval, jsonb, uuid);
//  2. DML with bound parameters of every type (row 1) and all NULLs
//     (row 2), read back and compared in the client's own types;
//  3. catalog reflection through the driver's metadata API (JDBC
//     DatabaseMetaData, SQLAlchemy inspect / autoload, pandas
//     read_sql_table, psql's \d commands);
//  4. a bulk load (CopyFrom, COPY through the driver, batches);
//  5. a duplicate key, which must report SQLSTATE 23505.
//
// After each client the Go test reads the items table itself and compares
// rows 1 and 2 with the expected text (checkItems), so a driver that
// silently wrote something else fails even if it read its own value back.
//
// A subtest skips, naming what is missing, only when its runtime is absent
// (psql, /usr/bin/python3 with the three modules, javac with pgjdbc, node
// with the npm modules); scripts/install-deps.sh installs all of them, so
// CI runs every client. The whole matrix takes well under a minute
// (startup of the JVM and Python dominates).
//
// This package guards no storage invariant; it checks I9 at the edge every
// client crosses first (no client's first-minute statements fail or end
// the session) and that errors carry PostgreSQL's SQLSTATEs.
package clienttest
