// Package pgcdc is the postgres-cdc connector: it feeds a Runnel table with
// a PostgreSQL table's rows and changes through logical replication
// (jackc/pglogrepl, the pgoutput plugin).
//
// One CDC table reads one replication slot (its slot.name option, pinned
// by DDL; a CREATE SOURCE ... postgres-cdc only holds connection options
// and its slot.name is the prefix of its tables' slots). Its life:
//
//  1. Snapshot. The table is added to the publication (created when
//     missing and publication.create.enable), then the slot is created
//     with an exported snapshot and the table is read with SELECT in a
//     REPEATABLE READ transaction that imports that snapshot: the rows and
//     the slot's consistent point describe the same instant, so every
//     later change is in the stream and no earlier one. The first change
//     is a truncate; a snapshot interrupted by a recovery (its state is
//     still PhaseSnapshot) starts over with a new slot and replaces what
//     the first one stored.
//  2. Streaming from the consistent point (or the committed LSN).
//     Inserts and updates are upserts by primary key, deletes delete by
//     key, so a transaction cut by a barrier and replayed after a restart
//     changes nothing twice. An update's unchanged TOAST columns keep the
//     value of the row it replaces (connector.Batch.Unchanged); under
//     REPLICA IDENTITY FULL the old tuple supplies them.
//
// I8: State (phase, LSN, slot) is committed with the rows it covers; the
// LSN is sent to PostgreSQL (standby status update) only from
// Reader.Committed, which the executor calls after that epoch committed.
// Between transactions a keepalive's WAL position advances the state, so
// an idle table's slot follows the server's WAL instead of pinning it.
//
// Bad input (I9): values that do not parse as their column's type are
// NULL and counted; a key that does not parse skips the row; pgoutput
// messages are size-checked before decoding. An unreachable upstream is
// retried with backoff (100 ms doubling to 10 s) and shown in Status and,
// through the framework, rw_catalog.rw_source_stats. Columns map by
// name: a column added upstream is applied when the Runnel table declares
// it (a non-key column may be declared before it exists upstream: NULL
// until then, read as NULL by the snapshot); otherwise it is reported
// naming the table and column (a warning, Status.Notices and the notices
// column of rw_catalog.rw_source_stats) and the other columns go on.
//
// DROP TABLE drops the table's slot (DropSlot) after its actor stopped.
package pgcdc
