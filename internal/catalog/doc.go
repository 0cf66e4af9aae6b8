// Package catalog holds Runnel's catalog: databases, schemas, relations
// (tables, views, materialized views, sources), users, and the state-table
// ids each relation owns. The durable copy lives in the metadata store; an
// in-memory snapshot serves lookups. Every change is one metadata
// transaction. A relation with state tables is created and dropped by a
// Change written inside the storage engine's transaction that registers
// or unregisters those tables, so catalog and storage version change
// together (change.go; I1, I3). StateTableOwners reads the stored catalog
// for ctl storage check. The catalog's tables are the metastore schema
// component "catalog" (catalogMigrations: versioned steps, so that
// upgrades and restores know its format).
package catalog
