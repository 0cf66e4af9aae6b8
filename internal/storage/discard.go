package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrMixedSpill is returned by DiscardUncommittedTables when uncommitted
// data of the tables to discard was spilled into SSTs together with data of
// tables that are kept: the spill cannot be split, so the caller must fall
// back to discarding everything (a full recovery).
var ErrMixedSpill = errors.New("storage: uncommitted data of the tables was spilled together with other tables")

// SetTableGroup installs the function that assigns tables to isolation
// groups (databases). Spills never mix groups, so that one group's
// uncommitted data can be discarded without touching another's
// (DiscardUncommittedTables). Without it every table is in group 0.
func (e *Engine) SetTableGroup(group func(TableID) uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tableGroup = group
}

func (e *Engine) groupOf(t TableID) uint64 {
	if e.tableGroup == nil {
		return 0
	}
	return e.tableGroup(t)
}

// DiscardUncommittedTables drops the ingested-but-uncommitted data of the
// given tables only (the reset of one database's jobs; the other tables'
// epochs carry on and commit). Spilled SSTs holding only those tables leave
// the buffer with their upload jobs aborted (their objects go to the
// deletion queue, I1); if a spilled SST also holds other tables nothing is
// changed and ErrMixedSpill is returned.
func (e *Engine) DiscardUncommittedTables(ids []TableID) error {
	if len(ids) == 0 {
		return nil
	}
	drop := map[TableID]bool{}
	for _, id := range ids {
		drop[id] = true
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.mu.Lock()
	// A job's SSTs go together: find the jobs with any SST of a dropped
	// table, and check that none of their SSTs holds a kept table.
	jobs := map[uint64]bool{}
	for _, it := range e.buf {
		if it.sst != nil && slices.ContainsFunc(it.sst.Tables, func(t TableID) bool { return drop[t] }) {
			jobs[it.job] = true
		}
	}
	for _, it := range e.buf {
		if it.sst != nil && jobs[it.job] && slices.ContainsFunc(it.sst.Tables, func(t TableID) bool { return !drop[t] }) {
			e.mu.Unlock()
			return fmt.Errorf("%w (spill job %d)", ErrMixedSpill, it.job)
		}
	}
	nb := make([]*bufItem, 0, len(e.buf))
	for _, it := range e.buf {
		switch {
		case it.run != nil && drop[it.table]:
			e.bufBytes -= it.run.bytes
		case it.sst != nil && jobs[it.job]:
		default:
			nb = append(nb, it)
		}
	}
	e.buf = nb
	e.mu.Unlock()
	for j := range jobs {
		if err := e.abortJob(context.Background(), j, nil); err != nil {
			e.log.Warn("storage: abort of spilled upload deferred", "job", j, "err", err)
		}
	}
	return nil
}
