package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of the LSM's shape and the engine's in-memory state,
// for metrics and the dashboard. Taking it costs one read lock and a walk
// over the current version's SST list (no I/O).
type Stats struct {
	VersionID      uint64
	CommittedEpoch uint64
	SafeEpoch      uint64
	Tables         int
	// Levels: L0..L6, then the window level (Levels[WindowLevel]).
	Levels [numSlots]LevelStats
	// WriteBufferBytes is ingested-but-uncommitted data held in memory.
	WriteBufferBytes int64
	// PinnedVersions counts older versions readers still pin (they hold
	// their SSTs back from GC); Snapshots the open batch-read snapshots.
	PinnedVersions, Snapshots int
	Compactions               []CompactionInfo
}

// LevelStats describes one level of the current version.
type LevelStats struct {
	SSTs  int
	Bytes uint64
	// Inline counts the level's SSTs kept in the metastore (small
	// commits, until compaction moves them to the object store).
	Inline  int
	Entries uint64
}

// CompactionInfo describes a running compaction job.
type CompactionInfo struct {
	ID          uint64
	OutputLevel int
	Inputs      int
	Started     time.Time
}

// Stats snapshots the engine (see Stats).
func (e *Engine) Stats() Stats {
	e.mu.RLock()
	v := e.cur
	st := Stats{
		VersionID: v.ID, CommittedEpoch: v.CommittedEpoch, SafeEpoch: v.SafeEpoch, Tables: len(v.Tables),
		WriteBufferBytes: e.bufBytes, PinnedVersions: len(e.live), Snapshots: len(e.snaps),
	}
	for l := range v.Levels {
		for _, f := range v.Levels[l] {
			ls := &st.Levels[l]
			ls.SSTs++
			ls.Bytes += f.Size
			ls.Entries += f.NumEntries
			if f.Inline {
				ls.Inline++
			}
		}
	}
	e.mu.RUnlock()
	for _, j := range e.Compactions() {
		st.Compactions = append(st.Compactions, CompactionInfo{ID: j.ID, OutputLevel: j.Level, Inputs: len(j.Inputs), Started: j.started})
	}
	return st
}

// ReadStats counts the table scans (Iter, Snapshot.Iter) since Open and
// the committed SSTs they selected to read (Opened; a sorted level's files
// are opened lazily as the scan reaches them) and skipped: Pruned counts
// files of a scan's key range left unread because their time range
// (SSTMeta.Times) is outside the scan's ReadOptions.Time.
type ReadStats struct {
	Scans, Opened, Pruned uint64
}

type readCounters struct{ scans, opened, pruned atomic.Uint64 }

// ReadStats returns the scan counters (see ReadStats).
func (e *Engine) ReadStats() ReadStats {
	return ReadStats{Scans: e.reads.scans.Load(), Opened: e.reads.opened.Load(), Pruned: e.reads.pruned.Load()}
}

// DeletionQueueLen counts the objects waiting on the durable deletion
// queue for GC (one metastore query).
func (e *Engine) DeletionQueueLen(ctx context.Context) (int, error) {
	var n int64
	if err := e.meta.QueryRow(ctx, `SELECT count(*) FROM storage_deletion_queue`).Scan(&n); err != nil {
		return 0, fmt.Errorf("storage: count deletion queue: %w", err)
	}
	return int(n), nil
}
