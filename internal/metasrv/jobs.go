package metasrv

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/compute"

	"github.com/runneldb/runnel/internal/storage"
)

// jobs tracks the lifecycle of streaming jobs on the meta side; their
// running actors are the compute node's.
type jobs struct {
	mu sync.Mutex
	// dropping: relations whose DROP is in progress (never rebuilt).
	dropping map[catalog.ObjectID]bool
	// creating: materialized views whose CREATE is running, which CANCEL
	// JOBS can cancel.
	creating map[catalog.ObjectID]*creation
}

// Rebuild recreates every job's actors at epoch curr after recovery
// (meta.Rebuilder). Actors have all been joined by then (I3).
func (s *Service) Rebuild(ctx context.Context, curr uint64) error {
	return s.rebuild(ctx, curr, func(*catalog.Relation) bool { return true })
}

// RebuildGroup recreates the jobs of one database after its recovery
// (meta.GroupRebuilder); the other databases' jobs keep running.
func (s *Service) RebuildGroup(ctx context.Context, group uint64, curr uint64) error {
	return s.rebuild(ctx, curr, inDatabase(group))
}

// TearDownGroup forgets the running jobs of one database after its actors
// were joined (meta.GroupRebuilder): DML to its tables fails with 55000
// until RebuildGroup, and creations in progress end as interrupted.
func (s *Service) TearDownGroup(group uint64) {
	s.tearDown(inDatabase(group))
}

// GroupTables lists the state tables of one database's relations
// (meta.GroupRebuilder), including views still being created.
func (s *Service) GroupTables(group uint64) []storage.TableID {
	var out []storage.TableID
	for _, rel := range s.catalog.Relations(inDatabase(group)) {
		out = append(out, relationStateTables(rel)...)
	}
	return out
}

// tableGroup maps a state table to its database (the storage engine's
// spill grouping, so that one database's uncommitted data can be
// discarded alone).
func (s *Service) tableGroup(t storage.TableID) uint64 {
	for _, rel := range s.catalog.Relations(nil) {
		if slices.Contains(relationStateTables(rel), t) {
			return uint64(rel.DatabaseID)
		}
	}
	return 0
}

func inDatabase(group uint64) func(*catalog.Relation) bool {
	return func(r *catalog.Relation) bool { return uint64(r.DatabaseID) == group }
}

// relationStateTables lists a relation's state tables.
func relationStateTables(rel *catalog.Relation) []storage.TableID {
	var out []storage.TableID
	for _, id := range rel.OwnedStateTables() {
		out = append(out, storage.TableID(id))
	}
	return out
}

// tearDown forgets the running jobs of the relations in scope, closing
// their replaced channels.
func (s *Service) tearDown(in func(*catalog.Relation) bool) {
	s.compute.TearDown(in)
}

// rebuild recreates the jobs of the relations in scope at epoch curr.
// Tables come first, then views in creation order (a view's upstreams are
// older than it). A view that was still being created is dropped: its
// backfill cannot resume. Relations being dropped are skipped.
func (s *Service) rebuild(ctx context.Context, curr uint64, in func(*catalog.Relation) bool) error {
	s.tearDown(in)
	// Nothing starts until every job is wired: a table actor running before
	// its views are connected would apply DML whose changes no view sees.
	var start []compute.Pending
	rels := s.catalog.Relations(in)
	if h := RebuildSnapshotHook.Load(); h != nil {
		(*h)()
	}
	for _, rel := range rels {
		if rel.Kind != catalog.KindTable || s.droppedSince(rel) {
			continue
		}
		var p compute.Pending
		err := survive("rebuild of table "+rel.Name, func() (err error) {
			if err := s.missingState(rel); err != nil { // statecatalog.go
				return err
			}
			p, err = s.compute.BuildTable(ctx, rel, curr)
			return err
		})
		if err != nil {
			// The table stays unavailable (its writes wait, then fail
			// with 55000); the others go on (I6).
			s.log.Error("cannot rebuild table", "table", rel.Name, "err", err)
			s.failures.set(rel, err)
			continue
		}
		s.failures.clear(rel.ID)
		start = append(start, p)
	}
	for _, rel := range rels {
		// Indexes are views over one relation (streamplan.BuildIndex),
		// rebuilt after it (ids grow: a base is older than its index).
		if (rel.Kind != catalog.KindMaterializedView && rel.Kind != catalog.KindIndex) || s.droppedSince(rel) {
			continue
		}
		if rel.Creating {
			s.log.Warn("dropping materialized view whose creation was interrupted", "view", rel.Name)
			if err := s.purgeRelation(ctx, rel); err != nil {
				s.log.Error("drop interrupted materialized view", "view", rel.Name, "err", err)
			}
			continue
		}
		var job []compute.Pending
		err := survive("rebuild of materialized view "+rel.Name, func() (err error) {
			job, err = s.rebuildView(ctx, rel, curr)
			return err
		})
		if err != nil {
			// One broken view must not stop the others (I6); it stays
			// unavailable until dropped.
			s.log.Error("cannot rebuild materialized view", "view", rel.Name, "err", err)
			s.failures.set(rel, err)
			continue
		}
		s.failures.clear(rel.ID)
		start = append(start, job...)
	}
	// Sinks last: they read tables and views, nothing reads them (sink.go).
	for _, rel := range s.catalog.Relations(func(r *catalog.Relation) bool { return r.Kind == catalog.KindSink && in(r) }) {
		if s.isDropping(rel.ID) {
			continue
		}
		if rel.Creating {
			s.log.Warn("dropping sink whose creation was interrupted", "sink", rel.Name)
			s.stopSinkWorker(rel.ID) // I3: before its log store is purged
			if err := s.purgeRelation(ctx, rel); err != nil {
				s.log.Error("drop interrupted sink", "sink", rel.Name, "err", err)
			}
			continue
		}
		job, err := s.rebuildSink(ctx, rel, curr)
		if err != nil {
			s.log.Error("cannot rebuild sink", "sink", rel.Name, "err", err)
			s.failures.set(rel, err)
			continue
		}
		s.failures.clear(rel.ID)
		start = append(start, job...)
	}
	s.compute.Start(start)
	s.compute.Rebuilt()
	return nil
}

// survive runs fn and turns a panic in it into an error carrying the
// panic and its stack (I6: a bug met while planning one job's rebuild
// fails that job, not the recovery of every other one, nor the process).
func survive(what string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s panicked: %v\n%s", what, p, debug.Stack())
		}
	}()
	return fn()
}

// RebuildViewHook, when set, is called as a rebuild starts planning a
// materialized view (tests make it panic).
var RebuildViewHook atomic.Pointer[func(view string)]

// RebuildSnapshotHook, when set, is called by a rebuild right after it
// listed the relations it rebuilds; tests pause it there to run a DROP in
// the window between the list and the per-relation checks.
var RebuildSnapshotHook atomic.Pointer[func()]

// droppedSince reports whether rel, listed by a rebuild, must not be
// rebuilt: a DROP of it is in progress, or one completed after the list
// was taken. I3: a dropped relation's actors never come back over state
// tables that are (being) unregistered. A DROP keeps its mark until its
// catalog entry is gone, and decides that no actor of the relation runs
// only under the graph lock, which a rebuild holds throughout
// (stopJob), so one of the two checks here always sees it.
func (s *Service) droppedSince(rel *catalog.Relation) bool {
	if s.isDropping(rel.ID) {
		return true
	}
	_, ok := s.catalog.Relation(rel.ID)
	return !ok
}

// isDropping reports whether a DROP of the relation is in progress: a
// rebuild must not bring its actors back while the drop purges its state.
func (s *Service) isDropping(id catalog.ObjectID) bool {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	return s.jobs.dropping[id]
}

// markDropping registers a DROP in progress; the returned func ends it.
func (s *Service) markDropping(id catalog.ObjectID) func() {
	s.jobs.mu.Lock()
	s.jobs.dropping[id] = true
	s.jobs.mu.Unlock()
	return func() {
		s.jobs.mu.Lock()
		delete(s.jobs.dropping, id)
		s.jobs.mu.Unlock()
	}
}

// purgeRelation removes a relation whose actors are not running from the
// catalog and unregisters its state tables.
func (s *Service) purgeRelation(ctx context.Context, rel *catalog.Relation) error {
	return s.dropWithState(ctx, rel) // one transaction (statecatalog.go)
}
