// Package backup takes, lists, restores and deletes backups of a Runnel
// data directory (issue 17 item 5; `runnel ctl backup`).
//
// A backup is one committed version of the storage engine with the
// metastore contents that go with it: the catalog, the version (deltas and
// checkpoint), inline SSTs, counters — and a copy of every SST object the
// version references. Restoring it into an empty data directory (or an
// empty PostgreSQL metastore and object-store prefix) gives exactly that
// committed epoch: every table and view as it was at the epoch, sources'
// positions included (they live in state tables, I8).
//
// Consistency while the server runs. Create reads every metastore table in
// one transaction (PostgreSQL: REPEATABLE READ; SQLite: one BEGIN
// IMMEDIATE), and in that transaction pins the version's objects
// (storage.PinVersion). The catalog and the version are always changed
// together (DDL writes its catalog change in the delta's transaction), so
// the snapshot is one DDL-consistent, committed point. The pin keeps GC
// from deleting an SST a compaction retires while the copy runs (I1: a
// pinned object stays queued, an owned class); Create releases it once the
// manifest is written, or when it fails. A crash in between leaves the pin,
// which `runnel ctl storage check` lists and `ctl backup delete --id` with
// the data directory releases.
//
// Layout in the backup store (a local directory or an s3:// URL, like
// --object-store):
//
//	<id>/manifest.json       written last: a backup without one is incomplete
//	<id>/metastore.json.gz   every metastore table's rows (typed values)
//	<id>/sst/<object>.sst    the copied SSTs, under their object keys
//
// The manifest carries a format number (refused when newer than this
// binary knows), the version id and committed epoch, the schema steps the
// metastore was at (component, version), and each object's size and
// SHA-256, which restore verifies.
//
// Restore refuses a target that holds data (a catalog object or a
// committed version) or SSTs the backup does not name. It copies the SSTs
// first, then applies the backup's schema steps with the same migrations
// the server runs (not the binary's newest: a backup of an older format is
// restored at its format, and the server's next start migrates it like any
// other older data directory), then writes every row in one metastore
// transaction. A crash anywhere before that transaction commits leaves a
// target restore accepts again. The restored deletion queue and job
// records name objects of the source store, which the target never held;
// the engine aborts the live jobs on open and GC's deletes of absent
// objects are no-ops, so every object in the target is referenced (I1).
// Backup pins are not restored.
package backup
