package storage

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
)

// Backup pins (issue 17 item 5). A backup copies the SSTs of one committed
// version to another store while the server may keep compacting; a
// compaction that commits meanwhile moves some of those SSTs to the
// deletion queue, and the GC fast path would delete them mid-copy. A pin
// is a durable row per object in storage_backup_pins, written in the same
// metastore transaction that reads the version it pins.
//
// Why GC sees every pin it must honour (I1, the "pinned by a reader" owner
// extended across processes): PinVersion first writes the version_id
// counter row (a no-op UPDATE), which every delta's transaction also
// writes, so the pin commits before any delta that removes one of its
// objects from the version. An object is queued only by such a delta, and
// RunGC reads the queue before the pins: a queued object whose pin
// matters was pinned before GC read the pins. Pinned objects therefore
// stay either referenced or queued, both owned classes, and Check needs no
// class of its own for them.

// PinnedVersion is the committed version a backup pinned.
type PinnedVersion struct {
	ID             uint64
	CommittedEpoch uint64
	// Objects are the keys of the version's SSTs in the object store
	// (inline SSTs live in the metastore rows the backup copies instead).
	Objects []string
}

// MigrateMetastore creates or upgrades the storage tables (for tools that
// open a metastore without an Engine).
func MigrateMetastore(ctx context.Context, db *metastore.DB) error { return migrate(ctx, db) }

// Migrations returns the storage component's schema steps (restore applies
// those a backup was taken at before loading its rows).
func Migrations() []metastore.Migration { return slices.Clone(storageMigrations) }

// PinVersion pins, under backupID, every object of the committed version
// and returns it. Call it inside the transaction that also reads whatever
// else must be consistent with the version (a backup's metastore dump); on
// PostgreSQL that transaction must be REPEATABLE READ, so that a delta
// committed after its snapshot fails the transaction (serialization
// failure, retried) instead of going unseen.
func PinVersion(ctx context.Context, tx *metastore.Tx, backupID string, now time.Time) (PinnedVersion, error) {
	// The lock every delta takes (see above).
	if _, err := tx.Exec(ctx, `UPDATE storage_counters SET value = value WHERE name = 'version_id'`); err != nil {
		return PinnedVersion{}, fmt.Errorf("storage: pin version: %w", err)
	}
	v, err := loadVersion(ctx, tx)
	if err != nil {
		return PinnedVersion{}, err
	}
	inline := v.inlineObjects()
	p := PinnedVersion{ID: v.ID, CommittedEpoch: v.CommittedEpoch}
	var ids []uint64
	for id := range v.objects() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, err := tx.Exec(ctx, `INSERT INTO storage_backup_pins (backup_id, object_id, created_ms) VALUES ($1, $2, $3)`,
			backupID, int64(id), now.UnixMilli()); err != nil {
			return PinnedVersion{}, fmt.Errorf("storage: pin object %d for backup %s: %w", id, backupID, err)
		}
		if _, ok := inline[id]; !ok {
			p.Objects = append(p.Objects, objectKey(id))
		}
	}
	return p, nil
}

// ReleasePin drops backupID's pins; GC may then delete the objects once
// nothing else owns them. Releasing a pin that does not exist is no error.
func ReleasePin(ctx context.Context, db *metastore.DB, backupID string) error {
	if err := migrate(ctx, db); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `DELETE FROM storage_backup_pins WHERE backup_id = $1`, backupID); err != nil {
		return fmt.Errorf("storage: release backup pin %s: %w", backupID, err)
	}
	return nil
}

// BackupPins lists the backups that pin objects, with how many each pins.
// A pin outlives its backup only if the backup was interrupted; `runnel
// ctl backup delete --id` with the data directory releases it.
func BackupPins(ctx context.Context, db *metastore.DB) (map[string]int, error) {
	if err := migrate(ctx, db); err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, `SELECT backup_id, COUNT(*) FROM storage_backup_pins GROUP BY backup_id`)
	if err != nil {
		return nil, fmt.Errorf("storage: list backup pins: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("storage: list backup pins: %w", err)
		}
		out[id] = int(n)
	}
	return out, rows.Err()
}

// loadBackupPins is the set of objects any backup pins.
func loadBackupPins(ctx context.Context, q querier) (map[uint64]struct{}, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT object_id FROM storage_backup_pins`)
	if err != nil {
		return nil, fmt.Errorf("storage: load backup pins: %w", err)
	}
	defer rows.Close()
	m := map[uint64]struct{}{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("storage: load backup pins: %w", err)
		}
		m[uint64(id)] = struct{}{}
	}
	return m, rows.Err()
}
