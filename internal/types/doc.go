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
//
// This package imports nothing from Runnel: every other layer imports it.
package types
