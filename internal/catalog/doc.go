// Package catalog holds Runnel's catalog: databases, schemas, relations
// (tables, views, materialized views, sources), users, and the state-table
// ids each relation owns. The durable copy lives in the metadata store; an
// in-memory snapshot serves lookups. Every change is one metadata
// transaction.
package catalog
