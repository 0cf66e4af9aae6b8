package server

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/stream/state"
)

// jobs tracks the running actors of every streaming job (tables now;
// materialized views next).
type jobs struct {
	mu     sync.Mutex
	tables map[catalog.ObjectID]*tableJob
	views  map[catalog.ObjectID]*viewJob
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
}

// tableStateSchema is the state-table schema of a table's rows.
func tableStateSchema(rel *catalog.Relation) state.Schema {
	s := state.Schema{
		Name:           fmt.Sprintf("table %s (state table %d)", rel.Name, rel.StateTable),
		PK:             rel.PK,
		DistKey:        rel.DistKey,
		ConstraintName: rel.Name + "_pkey",
	}
	for _, c := range rel.Columns {
		s.Types = append(s.Types, c.Type)
		s.ColumnNames = append(s.ColumnNames, c.Name)
	}
	return s
}

// spawnTable starts the actor of a table at epoch curr. The caller holds
// the barrier loop's graph lock.
func (s *Server) spawnTable(rel *catalog.Relation, curr uint64) *tableJob {
	j, a := s.newTableJob(rel, curr)
	s.actors.Spawn(a, j.barriers)
	return j
}

// newTableJob builds and registers a table's actor without starting it.
func (s *Server) newTableJob(rel *catalog.Relation, curr uint64) (*tableJob, *stream.Actor) {
	id := s.actors.NewActorID()
	st := state.New(storage.TableID(rel.StateTable), tableStateSchema(rel), s.store, curr)
	j := &tableJob{
		rel:        rel,
		actor:      id,
		dml:        make(chan *exec.DMLRequest),
		barriers:   make(chan *stream.Barrier, 16),
		replaced:   make(chan struct{}),
		dispatcher: &stream.BroadcastDispatcher{Upstream: id},
	}
	ex := exec.NewTableExecutor(rel.Name, st, id, j.barriers, j.dml)
	a := &stream.Actor{ID: id, Job: "table " + rel.Name, Root: ex, Dispatch: j.dispatcher}
	s.jobs.mu.Lock()
	s.jobs.tables[rel.ID] = j
	s.jobs.mu.Unlock()
	return j, a
}

// Rebuild recreates every job's actors at epoch curr after recovery
// (meta.Rebuilder). Actors have all been joined by then (I3). Tables come
// first, then views in creation order (a view's upstreams are older than
// it). A view that was still being created is dropped: its backfill
// cannot resume.
func (s *Server) Rebuild(ctx context.Context, curr uint64) error {
	s.jobs.mu.Lock()
	for _, j := range s.jobs.tables {
		close(j.replaced)
	}
	for _, v := range s.jobs.views {
		close(v.replaced)
	}
	s.jobs.tables = map[catalog.ObjectID]*tableJob{}
	s.jobs.views = map[catalog.ObjectID]*viewJob{}
	s.jobs.mu.Unlock()
	// Nothing starts until every job is wired: a table actor running before
	// its views are connected would apply DML whose changes no view sees.
	type pending struct {
		actor    *stream.Actor
		barriers chan *stream.Barrier
	}
	var start []pending
	for _, rel := range s.catalog.Relations(func(r *catalog.Relation) bool { return r.Kind == catalog.KindTable }) {
		j, a := s.newTableJob(rel, curr)
		start = append(start, pending{a, j.barriers})
	}
	for _, rel := range s.catalog.Relations(func(r *catalog.Relation) bool { return r.Kind == catalog.KindMaterializedView }) {
		if rel.Creating {
			s.log.Warn("dropping materialized view whose creation was interrupted", "view", rel.Name)
			if err := s.purgeRelation(ctx, rel); err != nil {
				s.log.Error("drop interrupted materialized view", "view", rel.Name, "err", err)
			}
			continue
		}
		job, err := s.rebuildView(ctx, rel, curr)
		if err != nil {
			// One broken view must not stop the others (I6); it stays
			// unavailable until dropped.
			s.log.Error("cannot rebuild materialized view", "view", rel.Name, "err", err)
			continue
		}
		for _, a := range job.Actors {
			start = append(start, pending{a, job.SourceBarriers[a.ID]})
		}
	}
	for _, p := range start {
		s.actors.Spawn(p.actor, p.barriers)
	}
	return nil
}

// purgeRelation removes a relation whose actors are not running from the
// catalog and unregisters its state tables.
func (s *Server) purgeRelation(ctx context.Context, rel *catalog.Relation) error {
	if err := s.catalog.DropObject(ctx, rel.ID); err != nil {
		return err
	}
	var tids []storage.TableID
	for _, id := range rel.StateTables {
		tids = append(tids, storage.TableID(id))
	}
	if len(tids) == 0 && rel.StateTable != 0 {
		tids = append(tids, storage.TableID(rel.StateTable))
	}
	if len(tids) == 0 {
		return nil
	}
	return s.store.UnregisterTables(ctx, tids...)
}

// parallelism is the number of actors of a hash-distributed fragment.
func (s *Server) parallelism() int {
	if s.cfg.Parallelism > 0 {
		return s.cfg.Parallelism
	}
	return runtime.NumCPU()
}

// tableJobFor returns the running job of a table.
func (s *Server) tableJobFor(rel *catalog.Relation) (*tableJob, error) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	j := s.jobs.tables[rel.ID]
	if j == nil {
		return nil, sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "table %q is not available (recovering)", rel.Name)
	}
	return j, nil
}

// write sends one statement's writes to the table's actor and waits until
// they are applied (visible to later statements on the table, committed
// with the current epoch). It returns the epoch the writes belong to.
func (s *Server) write(ctx context.Context, rel *catalog.Relation, apply func(ctx context.Context, w *exec.TableWriter) error) (uint64, error) {
	for {
		j, err := s.tableJobFor(rel)
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
		return req.Epoch, err
	}
}
