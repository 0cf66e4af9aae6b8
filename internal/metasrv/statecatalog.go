package metasrv

// Catalog and state are one truth (issue 13 items 6 and 7).
//
// A relation's catalog entry and the registration of its state tables in
// the storage version change in one metastore transaction: CREATE writes
// the entry inside the delta that registers the tables, DROP deletes it
// inside the delta that unregisters them (after its actors stopped, I3).
// A crash at any step leaves either both or neither. Data directories
// written before that (or by a bug) are reconciled when the server opens:
// a registered table no relation owns is unregistered through the
// version, so compaction drops its data and GC deletes the objects that
// held it (I1: nothing is deleted directly); a relation whose tables are
// missing is refused by the rebuild and reported (rw_failed_jobs, SHOW
// JOBS, and every read of it names it and the cause).
//
// A materialized view's or sink's state layout (per state table: owning
// executor, types, key) is stored with its catalog entry at creation. A
// rebuild re-plans the definition and compares: a different layout fails
// that job with an error naming it — the stored tables are never bound
// by position to a plan that would misread them. A job stored without a
// layout (created by an older version) gets the planned one recorded.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/streamplan"
)

// crashPointEnv names the crash point at which a test wants the process
// SIGKILLed (internal/crashtest/ddl_test.go). Read once at start.
const crashPointEnv = "RUNNEL_TEST_CRASH_POINT"

var crashPointName = os.Getenv(crashPointEnv)

// crashPoint kills the process with SIGKILL when RUNNEL_TEST_CRASH_POINT
// names the point, alone or as point@relation for the relation the
// statement concerns: a test hook for the crash-point campaign over DDL.
// Unset, it is one string comparison.
func crashPoint(point, relation string) {
	if crashPointName == "" || crashPointName != point && crashPointName != point+"@"+relation {
		return
	}
	fmt.Fprintf(os.Stderr, "runnel: test crash point %s reached: SIGKILL\n", crashPointName)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal ends the process
}

// kindSlug is a relation kind as crash point names spell it.
func kindSlug(k catalog.RelationKind) string { return strings.ReplaceAll(k.String(), " ", "-") }

// createWithState stores rel (its state-table ids allocated) and
// registers tids in one metastore transaction (item 6).
func (s *Service) createWithState(ctx context.Context, rel *catalog.Relation, tids []storage.TableID) error {
	crashPoint("create-"+kindSlug(rel.Kind)+"/before-commit", rel.Name)
	ch := s.catalog.CreateRelationChange(rel)
	err := s.store.RegisterTablesWith(ctx, tids, func(tx *metastore.Tx) error { return ch.Write(ctx, tx) })
	if err := ch.Done(ctx, err); err != nil {
		return fmt.Errorf("create %s %s: %w", rel.Kind, rel.Name, err)
	}
	crashPoint("create-"+kindSlug(rel.Kind)+"/after-commit", rel.Name)
	return nil
}

// dropWithState removes rel from the catalog and unregisters its state
// tables in one metastore transaction (item 6). The caller has stopped
// and joined every actor that could touch them (I3).
func (s *Service) dropWithState(ctx context.Context, rel *catalog.Relation) error {
	crashPoint("drop-"+kindSlug(rel.Kind)+"/before-commit", rel.Name)
	ch := s.catalog.DropRelationChange(rel)
	err := s.store.UnregisterTablesWith(ctx, relationStateTables(rel), func(tx *metastore.Tx) error { return ch.Write(ctx, tx) })
	if err := ch.Done(ctx, err); err != nil {
		return fmt.Errorf("drop %s %s: %w", rel.Kind, rel.Name, err)
	}
	s.failures.clear(rel.ID)
	crashPoint("drop-"+kindSlug(rel.Kind)+"/after-commit", rel.Name)
	return nil
}

// reconcileState runs when the server opens, before any actor: state
// tables registered in the version that no catalog relation owns are
// unregistered through a version delta (compaction then drops their
// data and GC the objects, I1; nothing can touch them, I3). With
// createWithState and dropWithState none arise; this repairs data
// directories written before them.
func (s *Service) reconcileState(ctx context.Context) error {
	owned := map[storage.TableID]bool{}
	for _, rel := range s.catalog.Relations(nil) {
		for _, t := range relationStateTables(rel) {
			owned[t] = true
		}
	}
	var orphans []storage.TableID
	for _, t := range s.store.Tables() {
		if !owned[t] {
			orphans = append(orphans, t)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	s.log.Warn("unregistering state tables that no catalog object owns", "tables", orphans)
	if err := s.store.UnregisterTables(ctx, orphans...); err != nil {
		return fmt.Errorf("unregister state tables no catalog object owns %v: %w", orphans, err)
	}
	return nil
}

// missingState fails a relation some of whose state tables are not in
// the storage version (item 6: refused with a clear error, never run
// over tables whose reads fail with "dropped").
func (s *Service) missingState(rel *catalog.Relation) error {
	have := s.store.Tables()
	var missing []storage.TableID
	for _, t := range relationStateTables(rel) {
		if _, ok := slices.BinarySearch(have, t); !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return sqlerr.Errorf(sqlerr.DataCorrupted, "%s %s cannot start: its state tables %v are missing from storage; drop it and create it again", rel.Kind, rel.Name, missing)
}

// LayoutHook, when set, may change a rebuild's planned state layout
// before it is compared with the stored one (tests perturb a state
// table's schema as a planner change would).
var LayoutHook atomic.Pointer[func(rel *catalog.Relation, l *catalog.StateLayout)]

// checkStateLayout compares the layout a rebuild planned for rel (its
// state tables assigned) with the one stored at creation (item 7). A job
// stored without one gets it recorded.
func (s *Service) checkStateLayout(ctx context.Context, rel *catalog.Relation, root *streamplan.Node) error {
	if err := s.missingState(rel); err != nil {
		return err
	}
	planned := streamplan.StateLayout(root)
	if h := LayoutHook.Load(); h != nil {
		(*h)(rel, planned)
		planned.Fingerprint = streamplan.LayoutFingerprint(planned.Tables)
	}
	if rel.StateLayout == nil {
		cur, ok := s.catalog.Relation(rel.ID)
		if !ok {
			return nil
		}
		upd := *cur
		upd.StateLayout = planned
		if err := s.catalog.UpdateRelation(ctx, &upd); err != nil {
			return fmt.Errorf("record the state layout of %s %s: %w", rel.Kind, rel.Name, err)
		}
		s.log.Info("recorded the state layout of a job created before layouts were stored", "job", rel.Kind.String()+" "+rel.Name, "fingerprint", planned.Fingerprint)
		return nil
	}
	if diff := streamplan.LayoutDiff(rel.StateLayout, planned); diff != "" {
		return sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "%s %s cannot start: this version plans its state differently from the version that created it (%s); its stored state is not read. Drop it and create it again",
			rel.Kind, rel.Name, diff)
	}
	return nil
}

// jobFailures are the jobs the last rebuild could not start, with why.
// Reads of such a relation fail with that error; rw_failed_jobs and SHOW
// JOBS list them. DROP works and clears the entry.
type jobFailures struct {
	mu sync.Mutex
	m  map[catalog.ObjectID]jobFailure
}

type jobFailure struct {
	rel *catalog.Relation
	err error
}

func (f *jobFailures) set(rel *catalog.Relation, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[catalog.ObjectID]jobFailure{}
	}
	f.m[rel.ID] = jobFailure{rel: rel, err: err}
}

func (f *jobFailures) clear(id catalog.ObjectID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, id)
}

func (f *jobFailures) get(id catalog.ObjectID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j, ok := f.m[id]; ok {
		return j.err
	}
	return nil
}

func (f *jobFailures) list(db catalog.ObjectID) []jobFailure {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []jobFailure
	for _, j := range f.m {
		if j.rel.DatabaseID == db {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b jobFailure) int { return int(a.rel.ID) - int(b.rel.ID) })
	return out
}
