package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/stream/exec"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/streamplan"
	"github.com/runneldb/runnel/internal/tsdb"
)

// jobs tracks the running actors of every streaming job (tables now;
// materialized views next).
type jobs struct {
	mu     sync.Mutex
	tables map[catalog.ObjectID]*tableJob
	views  map[catalog.ObjectID]*viewJob
	// dropping: relations whose DROP is in progress (never rebuilt).
	dropping map[catalog.ObjectID]bool
	// creating: materialized views whose CREATE is running, which CANCEL
	// JOBS can cancel.
	creating map[catalog.ObjectID]*creation
	// rebuilt is closed (and replaced) after every rebuild: writes waiting
	// for a recovering table retry then.
	rebuilt chan struct{}
}

// tableJob is a table's actor and the channel its DML goes through.
type tableJob struct {
	rel        *catalog.Relation
	actor      stream.ActorID
	dml        chan *exec.DMLRequest
	barriers   chan *stream.Barrier
	dispatcher *stream.BroadcastDispatcher
	// replaced is closed when recovery replaces this job's actor.
	replaced chan struct{}
	// ingest is the connector feed of a table with a connector.
	ingest *exec.TableIngest
}

// spawnTable starts the actor of a table at epoch curr. The caller holds
// the barrier loop's graph lock.
func (s *Server) spawnTable(ctx context.Context, rel *catalog.Relation, curr uint64) error {
	j, a, err := s.newTableJob(ctx, rel, curr)
	if err != nil {
		return err
	}
	s.actors.Spawn(a, j.barriers)
	return nil
}

// newTableJob builds and registers a table's actor without starting it. A
// table with a connector also reads it (exec.TableIngest), resuming at the
// split positions in its second state table.
func (s *Server) newTableJob(ctx context.Context, rel *catalog.Relation, curr uint64) (*tableJob, *stream.Actor, error) {
	id := s.actors.NewActorID()
	// A time-series table's TTL hides and drops its expired rows in
	// storage (tsdb.Retention; nil clears).
	s.store.SetRetention(storage.TableID(rel.StateTable), tsdb.Retention(rel))
	st := state.New(storage.TableID(rel.StateTable), streamplan.TableStateSchema(rel), s.store, curr)
	j := &tableJob{
		rel:        rel,
		actor:      id,
		dml:        make(chan *exec.DMLRequest),
		barriers:   make(chan *stream.Barrier, 16),
		replaced:   make(chan struct{}),
		dispatcher: &stream.BroadcastDispatcher{Upstream: id},
	}
	ex := exec.NewTableExecutor(rel.Name, st, id, j.barriers, j.dml)
	// Transactions conflict with writes after their snapshot (txn.go).
	ex.SetTxHorizon(func() uint64 { return s.fe.TxHorizon() })
	if err := s.tableWatermark(ex, rel); err != nil { // see watermark.go
		return nil, nil, err
	}
	if rel.Options["connector"] != "" {
		ti, err := s.openTableIngest(ctx, rel, curr)
		if err != nil {
			return nil, nil, err
		}
		ex.SetIngest(ti)
		j.ingest = ti
	}
	a := &stream.Actor{ID: id, Job: "table " + rel.Name, Group: uint64(rel.DatabaseID), Root: ex, Dispatch: j.dispatcher}
	s.jobs.mu.Lock()
	s.jobs.tables[rel.ID] = j
	s.jobs.mu.Unlock()
	return j, a, nil
}

// openTableIngest opens the connector of a table with one.
func (s *Server) openTableIngest(ctx context.Context, rel *catalog.Relation, curr uint64) (*exec.TableIngest, error) {
	if len(rel.StateTables) < 2 {
		return nil, fmt.Errorf("table %s: its connector has no position state table", rel.Name)
	}
	hidden := len(rel.PK) == 1 && rel.Columns[rel.PK[0]].Hidden
	if connector.IsExternal(rel.Options) {
		ext, err := connector.OpenExternal(streamplan.ExternalSpec(rel, s.log))
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", rel.Name, err)
		}
		positions := state.New(storage.TableID(rel.StateTables[1]), exec.ExternalStateSchema("table "+rel.Name), s.store, curr)
		return exec.NewExternalTableIngest(ctx, rel.Name, ext, positions, hidden, exec.CommittedEpochOf(s.store), s.log)
	}
	src, err := connector.Open(streamplan.ConnectorColumns(rel), rel.Options)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", rel.Name, err)
	}
	positions := state.New(storage.TableID(rel.StateTables[1]), exec.SourceStateSchema("table "+rel.Name), s.store, curr)
	return exec.NewTableIngest(ctx, rel.Name, src, positions, hidden)
}

// Rebuild recreates every job's actors at epoch curr after recovery
// (meta.Rebuilder). Actors have all been joined by then (I3).
func (s *Server) Rebuild(ctx context.Context, curr uint64) error {
	return s.rebuild(ctx, curr, func(*catalog.Relation) bool { return true })
}

// RebuildGroup recreates the jobs of one database after its recovery
// (meta.GroupRebuilder); the other databases' jobs keep running.
func (s *Server) RebuildGroup(ctx context.Context, group uint64, curr uint64) error {
	return s.rebuild(ctx, curr, inDatabase(group))
}

// TearDownGroup forgets the running jobs of one database after its actors
// were joined (meta.GroupRebuilder): DML to its tables fails with 55000
// until RebuildGroup, and creations in progress end as interrupted.
func (s *Server) TearDownGroup(group uint64) {
	s.tearDown(inDatabase(group))
}

// GroupTables lists the state tables of one database's relations
// (meta.GroupRebuilder), including views still being created.
func (s *Server) GroupTables(group uint64) []storage.TableID {
	var out []storage.TableID
	for _, rel := range s.catalog.Relations(inDatabase(group)) {
		out = append(out, relationStateTables(rel)...)
	}
	return out
}

// tableGroup maps a state table to its database (the storage engine's
// spill grouping, so that one database's uncommitted data can be
// discarded alone).
func (s *Server) tableGroup(t storage.TableID) uint64 {
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
func (s *Server) tearDown(in func(*catalog.Relation) bool) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for id, j := range s.jobs.tables {
		if in(j.rel) {
			close(j.replaced)
			delete(s.jobs.tables, id)
		}
	}
	for id, v := range s.jobs.views {
		if in(v.rel) {
			close(v.replaced)
			delete(s.jobs.views, id)
		}
	}
}

// rebuild recreates the jobs of the relations in scope at epoch curr.
// Tables come first, then views in creation order (a view's upstreams are
// older than it). A view that was still being created is dropped: its
// backfill cannot resume. Relations being dropped are skipped.
func (s *Server) rebuild(ctx context.Context, curr uint64, in func(*catalog.Relation) bool) error {
	s.tearDown(in)
	// Nothing starts until every job is wired: a table actor running before
	// its views are connected would apply DML whose changes no view sees.
	type pending struct {
		actor    *stream.Actor
		barriers chan *stream.Barrier
	}
	var start []pending
	rels := s.catalog.Relations(in)
	if h := rebuildSnapshotHook.Load(); h != nil {
		(*h)()
	}
	for _, rel := range rels {
		if rel.Kind != catalog.KindTable || s.droppedSince(rel) {
			continue
		}
		var j *tableJob
		var a *stream.Actor
		err := survive("rebuild of table "+rel.Name, func() (err error) {
			if err := s.missingState(rel); err != nil { // statecatalog.go
				return err
			}
			j, a, err = s.newTableJob(ctx, rel, curr)
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
		start = append(start, pending{a, j.barriers})
	}
	for _, rel := range rels {
		if rel.Kind != catalog.KindMaterializedView || s.droppedSince(rel) {
			continue
		}
		if rel.Creating {
			s.log.Warn("dropping materialized view whose creation was interrupted", "view", rel.Name)
			if err := s.purgeRelation(ctx, rel); err != nil {
				s.log.Error("drop interrupted materialized view", "view", rel.Name, "err", err)
			}
			continue
		}
		var job *streamplan.Job
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
		for _, a := range job.Actors {
			start = append(start, pending{a, job.SourceBarriers[a.ID]})
		}
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
		for _, a := range job.Actors {
			start = append(start, pending{a, job.SourceBarriers[a.ID]})
		}
	}
	for _, p := range start {
		s.actors.Spawn(p.actor, p.barriers)
	}
	s.jobs.mu.Lock()
	close(s.jobs.rebuilt)
	s.jobs.rebuilt = make(chan struct{})
	s.jobs.mu.Unlock()
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

// rebuildViewHook, when set, is called as a rebuild starts planning a
// materialized view (tests make it panic).
var rebuildViewHook atomic.Pointer[func(view string)]

// rebuildSnapshotHook, when set, is called by a rebuild right after it
// listed the relations it rebuilds; tests pause it there to run a DROP in
// the window between the list and the per-relation checks.
var rebuildSnapshotHook atomic.Pointer[func()]

// droppedSince reports whether rel, listed by a rebuild, must not be
// rebuilt: a DROP of it is in progress, or one completed after the list
// was taken. I3: a dropped relation's actors never come back over state
// tables that are (being) unregistered. A DROP keeps its mark until its
// catalog entry is gone, and decides that no actor of the relation runs
// only under the graph lock, which a rebuild holds throughout
// (stopJob), so one of the two checks here always sees it.
func (s *Server) droppedSince(rel *catalog.Relation) bool {
	if s.isDropping(rel.ID) {
		return true
	}
	_, ok := s.catalog.Relation(rel.ID)
	return !ok
}

// isDropping reports whether a DROP of the relation is in progress: a
// rebuild must not bring its actors back while the drop purges its state.
func (s *Server) isDropping(id catalog.ObjectID) bool {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	return s.jobs.dropping[id]
}

// markDropping registers a DROP in progress; the returned func ends it.
func (s *Server) markDropping(id catalog.ObjectID) func() {
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
func (s *Server) purgeRelation(ctx context.Context, rel *catalog.Relation) error {
	return s.dropWithState(ctx, rel) // one transaction (statecatalog.go)
}

// parallelism is the number of actors of a hash-distributed fragment.
func (s *Server) parallelism() int {
	if s.cfg.Parallelism > 0 {
		return s.cfg.Parallelism
	}
	return runtime.NumCPU()
}

// recoveryWait bounds how long a write waits for its table to come back
// from a recovery before failing.
const recoveryWait = 10 * time.Second

// tableJobFor returns the running job of a table. While the table's
// database is recovering it waits (up to recoveryWait) for the rebuild.
func (s *Server) tableJobFor(ctx context.Context, rel *catalog.Relation) (*tableJob, error) {
	var deadline <-chan time.Time
	for {
		s.jobs.mu.Lock()
		j := s.jobs.tables[rel.ID]
		rebuilt, dropping := s.jobs.rebuilt, s.jobs.dropping[rel.ID]
		s.jobs.mu.Unlock()
		if j != nil {
			return j, nil
		}
		if dropping {
			return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "table %q is being dropped", rel.Name)
		}
		if deadline == nil {
			deadline = time.After(recoveryWait)
		}
		select {
		case <-rebuilt:
		case <-deadline:
			return nil, sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "table %q is not available: its database is recovering", rel.Name)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// write sends one statement's writes to the table's actor and waits until
// they are applied (visible to later statements on the table, committed
// with the current epoch). It returns the epoch the writes belong to.
func (s *Server) write(ctx context.Context, rel *catalog.Relation, apply func(ctx context.Context, w *exec.TableWriter) error) (uint64, error) {
	for {
		j, err := s.tableJobFor(ctx, rel)
		if err != nil {
			return 0, err
		}
		req := &exec.DMLRequest{Apply: apply, Done: make(chan error, 1)}
		select {
		case j.dml <- req:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-j.replaced:
			// The actor was replaced by recovery before taking the request.
			continue
		}
		// Once handed over, the statement is applied or lost with its
		// epoch; waiting even past ctx keeps the statement atomic.
		err = <-req.Done
		if err != nil && errors.Is(err, context.Canceled) && ctx.Err() == nil {
			// The actor was aborted (by a recovery or a DROP) while it
			// applied the statement, which therefore applied nothing:
			// retry on the rebuilt actor.
			select {
			case <-j.replaced:
				continue
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(recoveryWait):
				return 0, sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "table %q is not available: its database is recovering", rel.Name)
			}
		}
		return req.Epoch, err
	}
}

// tableWatermark makes a table's actor generate the watermarks of its
// WATERMARK FOR clause and drop late changes (exec.TableExecutor's
// SetWatermark); nothing when the table has none.
func (s *Server) tableWatermark(ex *exec.TableExecutor, rel *catalog.Relation) error {
	if rel.Watermark == nil {
		return nil
	}
	e, err := binder.BindWatermark(rel)
	if err != nil {
		return err
	}
	ex.SetWatermark(exec.NewWatermarkGen("table "+rel.Name, rel.Watermark.Column, e, s.log))
	return nil
}
