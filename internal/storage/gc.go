package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/obs"
)

// RunGC is the fast path: it deletes queued objects that no pinned version
// references, retries deferred job aborts, and purges finished job records
// older than the grace period. It returns the number of objects deleted.
func (e *Engine) RunGC(ctx context.Context) (deleted int, err error) {
	start := time.Now()
	var queued int
	defer func() {
		// One event per cycle that did something (obs.EventGC); an idle
		// cycle, every GCInterval, logs at debug level only.
		level := slog.LevelDebug
		if deleted > 0 {
			level = slog.LevelInfo
		}
		attrs := []slog.Attr{slog.Int("deleted", deleted), slog.Int("queued", queued), obs.Seconds("duration_seconds", time.Since(start))}
		if err != nil {
			level = slog.LevelWarn
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		obs.Event(e.log, level, obs.EventGC, attrs...)
	}()
	e.mu.RLock()
	if e.closed || e.needReload || e.diverged.Load() != nil {
		// I2: with an unresolved ambiguous write, nothing is deletable.
		// I1: nor when the metastore diverged (its version and queue
		// are not what this engine's objects were written against).
		e.mu.RUnlock()
		return 0, nil
	}
	var orphans []uint64
	for id := range e.orphanJobs {
		orphans = append(orphans, id)
	}
	e.mu.RUnlock()
	for _, id := range orphans {
		if err := e.abortJob(ctx, id, nil); err != nil {
			return 0, err
		}
	}
	queue, err := loadDeletionQueue(ctx, e.meta)
	if err != nil {
		return 0, err
	}
	queued = len(queue)
	// I1: read after the queue, so that every pin of a queued object is
	// seen (backup.go says why).
	backupPins, err := loadBackupPins(ctx, e.meta)
	if err != nil {
		return 0, err
	}
	// Protected: everything the current or any pinned version references,
	// and every object a backup in progress copies.
	e.mu.RLock()
	protected := e.cur.objects()
	for id := range backupPins {
		protected[id] = struct{}{}
	}
	for v := range e.live {
		for id := range v.objects() {
			protected[id] = struct{}{}
		}
	}
	e.mu.RUnlock()
	var ids []uint64
	for id := range queue {
		if _, ok := protected[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	// The objects go first, then their rows in one transaction (one
	// metastore write per GC pass, not one per object: each is a
	// synchronous commit a concurrent FLUSH would wait behind). A crash
	// in between leaves rows whose deletes are simply repeated. An inline
	// SST's bytes go with its row (the store has no object of that id).
	var gone []uint64
	var delErr error
	for _, id := range ids {
		e.tc.evict(id)
		if err := e.store.Delete(ctx, objectKey(id)); err != nil {
			delErr = fmt.Errorf("storage: gc delete %s: %w", objectKey(id), err)
			break
		}
		gone = append(gone, id)
	}
	if len(gone) > 0 {
		if err := e.metaTx(ctx, "dequeue", func(tx *metastore.Tx) error {
			for _, id := range gone {
				if _, err := tx.Exec(ctx, `DELETE FROM storage_inline_objects WHERE id = $1`, int64(id)); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `DELETE FROM storage_deletion_queue WHERE object_id = $1`, int64(id)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return 0, err
		}
	}
	deleted = len(gone)
	obs.GCDeleted(deleted)
	if delErr != nil {
		return deleted, delErr
	}
	cutoff := e.opts.Clock().Add(-e.opts.GCGrace).UnixMilli()
	if err := e.metaTx(ctx, "purge-jobs", func(tx *metastore.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM storage_jobs WHERE state IN ('committed', 'aborted') AND updated_ms < $1`, cutoff)
		return err
	}); err != nil {
		return deleted, err
	}
	return deleted, nil
}

func (e *Engine) gcLoop() {
	defer e.bg.Done()
	t := time.NewTicker(e.opts.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			err := e.survive("gc pass", func() error {
				_, err := e.RunGC(context.Background())
				return err
			})
			if err != nil {
				e.log.Warn("storage: gc", "err", err)
			}
		}
	}
}

// ObjectClass is the owner of an object (I1).
type ObjectClass string

const (
	ClassReferenced ObjectClass = "referenced"
	ClassJobOwned   ObjectClass = "job-owned"
	ClassQueued     ObjectClass = "queued"
	ClassUnowned    ObjectClass = "unowned"
)

// CheckReport classifies every object in the store.
type CheckReport struct {
	Objects map[string]ObjectClass
	// Missing lists referenced objects that are not in the store.
	Missing []string
	// Expired lists unowned objects older than the grace period (what
	// FullGC deletes).
	Expired []string
	Counts  map[ObjectClass]int
	Version uint64
	// Foreign lists objects under sst/ whose names are not SST object names.
	Foreign []string
	// UnownedInline lists inline SSTs that neither the version nor the
	// deletion queue names. An inline SST is written in the transaction
	// that references it, so one is never legitimately unowned, however
	// young.
	UnownedInline []string
}

// Violations lists what breaks I1 even while a server runs: referenced
// objects that are missing, unowned objects older than the grace period
// (Expired) and unowned inline SSTs. An unowned object younger than the
// grace period is not one: a running server's upload may be listed before
// the check reads the job record that owns it.
func (r CheckReport) Violations() []string {
	var out []string
	for _, k := range r.Missing {
		out = append(out, "missing: "+k)
	}
	for _, k := range r.Expired {
		out = append(out, "unowned, older than the grace period: "+k)
	}
	for _, k := range r.UnownedInline {
		out = append(out, "unowned inline SST: "+k)
	}
	return out
}

// Young counts the unowned objects still within the grace period.
func (r CheckReport) Young() int {
	return r.Counts[ClassUnowned] - len(r.Expired) - len(r.UnownedInline)
}

// Summary is "objects: N referenced, N job-owned, N queued, N unowned, N missing".
func (r CheckReport) Summary() string {
	return fmt.Sprintf("objects: %d referenced, %d job-owned, %d queued, %d unowned, %d missing",
		r.Counts[ClassReferenced], r.Counts[ClassJobOwned], r.Counts[ClassQueued], r.Counts[ClassUnowned], len(r.Missing))
}

// OK: every referenced object exists and every object has an owner.
func (r CheckReport) OK() bool { return len(r.Missing) == 0 && r.Counts[ClassUnowned] == 0 }

// classify reads in the order I1 requires: job records, then the version,
// then the deletion queue, then the listing, then the id watermark (an
// object created after the listing started is newer than anything we could
// misjudge).
func classify(ctx context.Context, store objstore.Store, meta *metastore.DB, grace time.Duration, now time.Time) (*CheckReport, map[string]uint64, error) {
	jobs, err := loadJobs(ctx, meta)
	if err != nil {
		return nil, nil, err
	}
	owned := map[uint64]bool{}
	for _, j := range jobs {
		if j.live() {
			for _, o := range j.Outputs {
				owned[o] = true
			}
		}
	}
	v, err := readVersion(ctx, meta)
	if err != nil {
		return nil, nil, err
	}
	refs := v.objects()
	// The queue before the listing: an object deleted by the fast path
	// after this read is not listed either.
	queue, err := loadDeletionQueue(ctx, meta)
	if err != nil {
		return nil, nil, err
	}
	list, err := store.List(ctx, sstKeyPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("storage: list %s: %w", sstKeyPrefix, err)
	}
	watermark, err := readCounter(ctx, meta, "next_object_id")
	if err != nil {
		return nil, nil, err
	}
	r := &CheckReport{Objects: map[string]ObjectClass{}, Counts: map[ObjectClass]int{}, Version: v.ID}
	ids := map[string]uint64{}
	seen := map[uint64]bool{}
	for _, o := range list {
		id, ok := parseObjectKey(o.Key)
		if !ok {
			r.Foreign = append(r.Foreign, o.Key)
			continue
		}
		seen[id] = true
		ids[o.Key] = id
		var c ObjectClass
		_, isRef := refs[id]
		_, isQueued := queue[id]
		switch {
		case isRef:
			c = ClassReferenced
		case owned[id]:
			c = ClassJobOwned
		case isQueued:
			c = ClassQueued
		default:
			c = ClassUnowned
			if id < watermark && o.ModTime.Before(now.Add(-grace)) {
				r.Expired = append(r.Expired, o.Key)
			}
		}
		r.Objects[o.Key] = c
		r.Counts[c]++
	}
	inlineRefs := v.inlineObjects()
	for id := range refs {
		if _, ok := inlineRefs[id]; !seen[id] && !ok {
			r.Missing = append(r.Missing, objectKey(id))
		}
	}
	if err := classifyInline(ctx, meta, r); err != nil {
		return nil, nil, err
	}
	slices.Sort(r.Missing)
	return r, ids, nil
}

// readVersion loads the committed version in one snapshot: its
// checkpoint, deltas and head counter are several statements, which a
// concurrent commit must not straddle (a running server's, for ctl).
func readVersion(ctx context.Context, meta *metastore.DB) (*Version, error) {
	var v *Version
	err := meta.SnapshotTx(ctx, 10, func(tx *metastore.Tx) error {
		var err error
		v, err = loadVersion(ctx, tx)
		return err
	})
	return v, err
}

// inlineSuffix marks inline SSTs in a CheckReport's Objects.
const inlineSuffix = " (inline)"

// classifyInline classifies the inline SSTs (metastore rows) against the
// version and deletion queue read in the same transaction: a commit adds
// a row with the delta that references it, and GC removes it with its
// queue entry, so one snapshot classifies them exactly. A referenced
// inline SST without its row is missing.
func classifyInline(ctx context.Context, meta *metastore.DB, r *CheckReport) error {
	// One attempt: fn fills r, and a read-only snapshot never conflicts.
	return meta.SnapshotTx(ctx, 1, func(tx *metastore.Tx) error {
		v, err := loadVersion(ctx, tx)
		if err != nil {
			return err
		}
		queue, err := loadDeletionQueue(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id FROM storage_inline_objects`)
		if err != nil {
			return err
		}
		defer rows.Close()
		have := map[uint64]bool{}
		refs := v.objects()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			have[uint64(id)] = true
			c := ClassUnowned
			if _, ok := refs[uint64(id)]; ok {
				c = ClassReferenced
			} else if _, ok := queue[uint64(id)]; ok {
				c = ClassQueued
			}
			if c == ClassUnowned {
				r.UnownedInline = append(r.UnownedInline, objectKey(uint64(id))+inlineSuffix)
			}
			r.Objects[objectKey(uint64(id))+inlineSuffix] = c
			r.Counts[c]++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for id := range v.inlineObjects() {
			if !have[id] {
				r.Missing = append(r.Missing, objectKey(id)+inlineSuffix)
			}
		}
		return nil
	})
}

// Check classifies every object as referenced / job-owned / queued /
// unowned and verifies that every referenced object exists.
func Check(ctx context.Context, store objstore.Store, meta *metastore.DB, grace time.Duration) (CheckReport, error) {
	if err := migrate(ctx, meta); err != nil {
		return CheckReport{}, err
	}
	r, _, err := classify(ctx, store, meta, grace, time.Now())
	if err != nil {
		return CheckReport{}, err
	}
	return *r, nil
}

// FullGC is the full-listing backstop: it deletes objects that are in none
// of the owned classes and older than grace. Queued objects are left to
// the engine's fast path, which knows which versions are pinned.
func FullGC(ctx context.Context, store objstore.Store, meta *metastore.DB, grace time.Duration) (int, error) {
	if err := migrate(ctx, meta); err != nil {
		return 0, err
	}
	return fullGC(ctx, store, meta, grace, time.Now())
}

func fullGC(ctx context.Context, store objstore.Store, meta *metastore.DB, grace time.Duration, now time.Time) (int, error) {
	r, _, err := classify(ctx, store, meta, grace, now)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range r.Expired {
		if err := store.Delete(ctx, k); err != nil {
			return n, fmt.Errorf("storage: full gc delete %s: %w", k, err)
		}
		obs.GCDeleted(1)
		n++
	}
	return n, nil
}

// FullGC runs the full-listing pass with the engine's clock and grace.
func (e *Engine) FullGC(ctx context.Context) (int, error) {
	return fullGC(ctx, e.store, e.meta, e.opts.GCGrace, e.opts.Clock())
}

// DescribeVersion renders the committed version: levels, SSTs, sizes and
// tables.
func DescribeVersion(ctx context.Context, meta *metastore.DB) (string, error) {
	if err := migrate(ctx, meta); err != nil {
		return "", err
	}
	v, err := readVersion(ctx, meta)
	if err != nil {
		return "", err
	}
	return v.String(), nil
}

// String renders the version for operators.
func (v *Version) String() string {
	var b strings.Builder
	ts := make([]TableID, 0, len(v.Tables))
	for t := range v.Tables {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	fmt.Fprintf(&b, "version %d: committed epoch %d, safe epoch %d\n", v.ID, v.CommittedEpoch, v.SafeEpoch)
	fmt.Fprintf(&b, "tables: %v\n", ts)
	for l := range v.Levels {
		var size, n uint64
		for _, f := range v.Levels[l] {
			size += f.Size
			n += f.NumEntries
		}
		if len(v.Levels[l]) == 0 {
			continue
		}
		name := fmt.Sprintf("L%d", l)
		if l == WindowLevel {
			name = "LW (time windows)"
		}
		fmt.Fprintf(&b, "%s: %d ssts, %d bytes, %d entries\n", name, len(v.Levels[l]), size, n)
		for _, f := range v.Levels[l] {
			fmt.Fprintf(&b, "  %s  %d bytes  %d entries  epochs [%d, %d]  tables %v  [%v .. %v]",
				objectKey(f.ID), f.Size, f.NumEntries, f.MinEpoch, f.MaxEpoch, f.Tables, formattedKey(f.Smallest), formattedKey(f.Largest))
			if r := windowTable(f); l == WindowLevel && r != nil {
				fmt.Fprintf(&b, "  times [%s, %s]", time.UnixMicro(r.Min).UTC().Format(time.RFC3339), time.UnixMicro(r.Max).UTC().Format(time.RFC3339))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var _ = errors.New

// RegisteredTables lists the tables of the committed version, whose id
// it returns too, with the time each was registered (the zero time for a
// table registered before registration times were recorded: its age is
// unknown, so it counts as old). ctl storage check compares them with the
// catalog's owners.
func RegisteredTables(ctx context.Context, meta *metastore.DB) (map[TableID]time.Time, uint64, error) {
	if err := migrate(ctx, meta); err != nil {
		return nil, 0, err
	}
	out := map[TableID]time.Time{}
	var version uint64
	err := meta.SnapshotTx(ctx, 10, func(tx *metastore.Tx) error {
		clear(out)
		v, err := loadVersion(ctx, tx)
		if err != nil {
			return err
		}
		version = v.ID
		for t := range v.Tables {
			out[t] = time.Time{}
		}
		rows, err := tx.Query(ctx, `SELECT table_id, registered_ms FROM storage_table_registrations`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, ms int64
			if err := rows.Scan(&id, &ms); err != nil {
				return err
			}
			if _, ok := out[TableID(id)]; ok {
				out[TableID(id)] = time.UnixMilli(ms)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("storage: registered tables: %w", err)
	}
	return out, version, nil
}
