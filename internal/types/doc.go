// Package types defines Runnel's SQL data types, the in-memory value (Datum),
// rows and change chunks, and every encoding of a value: PostgreSQL text and
// binary wire formats, the memcomparable key encoding used for state-table
// keys, and the compact value encoding used for state-table values.
//
// Design:
//   - A Datum is a small tagged struct, not an interface, so that a Row
//     ([]Datum) is one allocation and integers never box.
//   - Kind is the physical representation; Type adds the PostgreSQL type
//     modifier (varchar(n), numeric(p,s)) and maps to a PostgreSQL OID.
//   - Streams carry Chunks of rows with change ops (insert, delete,
//     update-delete/update-insert pairs). Chunks are row-oriented: Runnel's
//     executors are mostly per-row hash/state work, where a row layout avoids
//     re-assembling rows for every state lookup.
//   - Text I/O (text.go, datetime.go, interval.go, jsonb.go) reproduces
//     PostgreSQL 15's input and output functions with default settings
//     (DateStyle ISO, MDY; IntervalStyle postgres; extra_float_digits 1;
//     bytea_output hex). pgdiff_test.go checks it value by value against a
//     real PostgreSQL; where Runnel deliberately differs it says so at the
//     code (e.g. timestamps end at 294247-01-01 because Datum counts from
//     1970 in an int64).
//   - binary.go is PostgreSQL's send/recv format, also checked against a
//     real server in both directions.
//   - keycodec.go (memcomparable keys) and valuecodec.go (state values) are
//     persisted formats: their byte layouts are drawn in those files and may
//     only change with a version bump. Key bytes order exactly like Compare;
//     SQL-equal values (1.5 = 1.50, -0 = 0, '1 mon' = '30 days') share a key,
//     so DecodeKey gives back a canonical value, not necessarily the one
//     encoded — use the value encoding (AppendValueRow, AppendValue) to keep a
//     value exactly.
//   - hash.go fixes the distribution hash (Vnode); it is persisted through
//     state-table keys and pinned by golden tests.
//   - User-facing errors are *sqlerr.Error with PostgreSQL's SQLSTATE and
//     message text; corrupt persisted bytes give errors wrapping
//     ErrKeyCorrupt / ErrValueCorrupt. No input makes this package panic.
//
// Invariants guarded: I7 in part — a value written to state must read back
// as the same value (round-trip and truncation tests), and the key order
// must be the SQL order, or state tables silently return wrong rows.
//
// This package imports nothing from Runnel except internal/sqlerr (which
// imports nothing): every other layer imports it.
package types
