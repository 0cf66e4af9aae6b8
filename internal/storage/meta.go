package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
)

// storageMigrations is the storage engine's metastore schema
// (docs/storage-format.md), applied through metastore.DB.Migrate under the
// component name "storage". Never edit an applied step; add one.
var storageMigrations = []metastore.Migration{{
	Version: 1,
	Name:    "storage version, jobs, deletion queue, id counters",
	SQL: `CREATE TABLE storage_counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
CREATE TABLE storage_deltas (id BIGINT PRIMARY KEY, data {{BLOB}} NOT NULL);
CREATE TABLE storage_checkpoints (id BIGINT PRIMARY KEY, data {{BLOB}} NOT NULL);
CREATE TABLE storage_jobs (id BIGINT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL,
	inputs {{BLOB}} NOT NULL, outputs {{BLOB}} NOT NULL, created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL);
CREATE TABLE storage_deletion_queue (object_id BIGINT PRIMARY KEY, queued_ms BIGINT NOT NULL);
INSERT INTO storage_counters (name, value) VALUES ('next_object_id', 1);
INSERT INTO storage_counters (name, value) VALUES ('version_id', 0)`,
}, {
	Version: 2,
	Name:    "inline SSTs of small commits",
	SQL:     `CREATE TABLE storage_inline_objects (id BIGINT PRIMARY KEY, data {{BLOB}} NOT NULL)`,
}, {
	Version: 3,
	Name:    "registration time of state tables",
	// A row per registered table, written with the delta that registers
	// it: ctl storage check calls a table no catalog object owns a
	// violation only once it is older than --grace. Tables registered
	// before this step have no row and count as old.
	SQL: `CREATE TABLE storage_table_registrations (table_id BIGINT PRIMARY KEY, registered_ms BIGINT NOT NULL)`,
}, {
	Version: 4,
	Name:    "objects pinned by backups",
	// A row per object a backup in progress copies (backup.go): GC's
	// fast path leaves them queued until the backup releases them.
	SQL: `CREATE TABLE storage_backup_pins (backup_id TEXT NOT NULL, object_id BIGINT NOT NULL, created_ms BIGINT NOT NULL, PRIMARY KEY (backup_id, object_id))`,
}, {
	Version: 5,
	Name:    "compaction tasks claimed by compactor nodes",
	// A row per compaction planned for a compactor process
	// (compactor.go), next to its job record.
	SQL: compactionTaskMigration,
}}

// migrate creates or upgrades the storage tables.
func migrate(ctx context.Context, db *metastore.DB) error {
	if err := db.Migrate(ctx, "storage", storageMigrations); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// Job kinds and states. A job record is durable before the first object it
// names is written (I1(b)); its state moves Planned -> Running -> Committing
// -> Committed | Aborted. Upload jobs start Running.
const (
	jobKindUpload     = "upload"
	jobKindCompaction = "compaction"

	JobPlanned    = "planned"
	JobRunning    = "running"
	JobCommitting = "committing"
	JobCommitted  = "committed"
	JobAborted    = "aborted"
)

// jobRecord is a row of storage_jobs.
type jobRecord struct {
	ID      uint64
	Kind    string
	State   string
	Inputs  []LevelFile
	Outputs []uint64
	Created int64 // unix ms
	Updated int64
	// reserved, for a spare upload job whose first output is being
	// reserved in the store (Engine.reserveSpare), closes when that ends.
	reserved chan struct{}
}

func (j *jobRecord) live() bool { return j.State != JobCommitted && j.State != JobAborted }

func encodeIDs(ids []uint64) []byte {
	e := &encoder{}
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.uvarint(id)
	}
	return e.b
}

func decodeIDs(b []byte) ([]uint64, error) {
	d := &decoder{b: b}
	n := d.count()
	ids := make([]uint64, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		ids = append(ids, d.uvarint())
	}
	return ids, d.err
}

func encodeLevelFiles(fs []LevelFile) []byte {
	e := &encoder{}
	e.uvarint(uint64(len(fs)))
	for _, f := range fs {
		e.uvarint(uint64(f.Level))
		e.uvarint(f.ID)
	}
	return e.b
}

func decodeLevelFiles(b []byte) ([]LevelFile, error) {
	d := &decoder{b: b}
	n := d.count()
	fs := make([]LevelFile, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		fs = append(fs, LevelFile{Level: int(d.uvarint()), ID: d.uvarint()})
	}
	return fs, d.err
}

// querier is the common read surface of *metastore.DB and *metastore.Tx.
type querier interface {
	Query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRow(ctx context.Context, q string, args ...any) *sql.Row
}

// allocIDs reserves n consecutive object ids (durable, monotonic, never
// reused: I1) and returns the first.
func allocIDs(ctx context.Context, tx *metastore.Tx, n int) (uint64, error) {
	var next int64
	err := tx.QueryRow(ctx, `UPDATE storage_counters SET value = value + $1 WHERE name = 'next_object_id' RETURNING value`, n).Scan(&next)
	if err != nil {
		return 0, fmt.Errorf("storage: allocate %d object ids: %w", n, err)
	}
	return uint64(next) - uint64(n), nil
}

// createJob allocates a job id and nOutputs output ids (all greater than the
// job id) and writes the job record, in one transaction.
func createJob(ctx context.Context, tx *metastore.Tx, kind, state string, inputs []LevelFile, nOutputs int, now time.Time) (*jobRecord, error) {
	first, err := allocIDs(ctx, tx, 1+nOutputs)
	if err != nil {
		return nil, err
	}
	j := &jobRecord{ID: first, Kind: kind, State: state, Inputs: inputs, Created: now.UnixMilli(), Updated: now.UnixMilli()}
	for i := 0; i < nOutputs; i++ {
		j.Outputs = append(j.Outputs, first+1+uint64(i))
	}
	_, err = tx.Exec(ctx, `INSERT INTO storage_jobs (id, kind, state, inputs, outputs, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		int64(j.ID), kind, state, encodeLevelFiles(inputs), encodeIDs(j.Outputs), j.Created, j.Updated)
	if err != nil {
		return nil, fmt.Errorf("storage: write %s job %d: %w", kind, j.ID, err)
	}
	return j, nil
}

// addJobOutputs reserves more output ids for a live job.
func addJobOutputs(ctx context.Context, tx *metastore.Tx, j *jobRecord, n int, now time.Time) ([]uint64, error) {
	cur, err := loadJob(ctx, tx, j.ID)
	if err != nil {
		return nil, err
	}
	if cur == nil || !cur.live() {
		return nil, fmt.Errorf("storage: job %d is no longer live", j.ID)
	}
	first, err := allocIDs(ctx, tx, n)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for i := 0; i < n; i++ {
		ids = append(ids, first+uint64(i))
	}
	outs := append(append([]uint64(nil), cur.Outputs...), ids...)
	if _, err := tx.Exec(ctx, `UPDATE storage_jobs SET outputs = $1, updated_ms = $2 WHERE id = $3`, encodeIDs(outs), now.UnixMilli(), int64(j.ID)); err != nil {
		return nil, fmt.Errorf("storage: extend job %d: %w", j.ID, err)
	}
	return ids, nil
}

func setJobState(ctx context.Context, tx *metastore.Tx, id uint64, from []string, to string, now time.Time) error {
	j, err := loadJob(ctx, tx, id)
	if err != nil {
		return err
	}
	if j == nil {
		return fmt.Errorf("storage: job %d: record missing", id)
	}
	ok := false
	for _, f := range from {
		ok = ok || j.State == f
	}
	if !ok {
		return fmt.Errorf("storage: job %d: state %s, want one of %v to move to %s", id, j.State, from, to)
	}
	_, err = tx.Exec(ctx, `UPDATE storage_jobs SET state = $1, updated_ms = $2 WHERE id = $3`, to, now.UnixMilli(), int64(id))
	if err != nil {
		return fmt.Errorf("storage: job %d -> %s: %w", id, to, err)
	}
	return nil
}

func scanJob(sc interface{ Scan(...any) error }) (*jobRecord, error) {
	var (
		id, created, updated int64
		in, out              []byte
		j                    jobRecord
	)
	if err := sc.Scan(&id, &j.Kind, &j.State, &in, &out, &created, &updated); err != nil {
		return nil, err
	}
	j.ID, j.Created, j.Updated = uint64(id), created, updated
	var err error
	if j.Inputs, err = decodeLevelFiles(in); err != nil {
		return nil, fmt.Errorf("storage: job %d inputs: %w: %w", id, ErrCorrupt, err)
	}
	if j.Outputs, err = decodeIDs(out); err != nil {
		return nil, fmt.Errorf("storage: job %d outputs: %w: %w", id, ErrCorrupt, err)
	}
	return &j, nil
}

const jobCols = `id, kind, state, inputs, outputs, created_ms, updated_ms`

func loadJob(ctx context.Context, q querier, id uint64) (*jobRecord, error) {
	j, err := scanJob(q.QueryRow(ctx, `SELECT `+jobCols+` FROM storage_jobs WHERE id = $1`, int64(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: load job %d: %w", id, err)
	}
	return j, nil
}

func loadJobs(ctx context.Context, q querier) ([]*jobRecord, error) {
	rows, err := q.Query(ctx, `SELECT `+jobCols+` FROM storage_jobs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("storage: load jobs: %w", err)
	}
	defer rows.Close()
	var out []*jobRecord
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("storage: load jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// queueForDeletion puts object ids on the durable deletion queue.
func queueForDeletion(ctx context.Context, tx *metastore.Tx, ids []uint64, now time.Time) error {
	for _, id := range ids {
		if _, err := tx.Exec(ctx, `INSERT INTO storage_deletion_queue (object_id, queued_ms) VALUES ($1, $2) ON CONFLICT (object_id) DO NOTHING`, int64(id), now.UnixMilli()); err != nil {
			return fmt.Errorf("storage: queue %s for deletion: %w", objectKey(id), err)
		}
	}
	return nil
}

func loadDeletionQueue(ctx context.Context, q querier) (map[uint64]int64, error) {
	rows, err := q.Query(ctx, `SELECT object_id, queued_ms FROM storage_deletion_queue`)
	if err != nil {
		return nil, fmt.Errorf("storage: load deletion queue: %w", err)
	}
	defer rows.Close()
	m := map[uint64]int64{}
	for rows.Next() {
		var id, ms int64
		if err := rows.Scan(&id, &ms); err != nil {
			return nil, fmt.Errorf("storage: load deletion queue: %w", err)
		}
		m[uint64(id)] = ms
	}
	return m, rows.Err()
}

func readCounter(ctx context.Context, q querier, name string) (uint64, error) {
	var v int64
	if err := q.QueryRow(ctx, sqlReadCounter, name).Scan(&v); err != nil {
		return 0, fmt.Errorf("storage: read counter %s: %w", name, err)
	}
	return uint64(v), nil
}

// loadVersion reads the newest checkpoint and replays the deltas after it.
func loadVersion(ctx context.Context, q querier) (*Version, error) {
	v := newEmptyVersion()
	var (
		cpID int64
		data []byte
	)
	err := q.QueryRow(ctx, `SELECT id, data FROM storage_checkpoints ORDER BY id DESC LIMIT 1`).Scan(&cpID, &data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("storage: load version checkpoint: %w", err)
	default:
		if v, err = decodeCheckpoint(data); err != nil {
			return nil, fmt.Errorf("storage: version checkpoint %d: %w", cpID, err)
		}
	}
	rows, err := q.Query(ctx, `SELECT id, data FROM storage_deltas WHERE id > $1 ORDER BY id`, int64(v.ID))
	if err != nil {
		return nil, fmt.Errorf("storage: load version deltas: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id, &data); err != nil {
			return nil, fmt.Errorf("storage: load version deltas: %w", err)
		}
		d, err := decodeDelta(data)
		if err != nil {
			return nil, fmt.Errorf("storage: version delta %d: %w", id, err)
		}
		if v, err = v.apply(d); err != nil {
			return nil, fmt.Errorf("storage: replay: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: load version deltas: %w", err)
	}
	head, err := readCounter(ctx, q, "version_id")
	if err != nil {
		return nil, err
	}
	if head != v.ID {
		return nil, fmt.Errorf("storage: version head is %d but deltas end at %d: %w", head, v.ID, ErrCorrupt)
	}
	return v, nil
}
