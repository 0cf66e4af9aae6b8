package compute

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"

	"github.com/runneldb/runnel/internal/sql/binder"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/tsdb"
)

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
func (s *Node) spawnTable(ctx context.Context, rel *catalog.Relation, curr uint64) error {
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
func (s *Node) newTableJob(ctx context.Context, rel *catalog.Relation, curr uint64) (*tableJob, *stream.Actor, error) {
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
	ex.SetTxHorizon(func() uint64 { return s.cfg.TxHorizon() })
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
func (s *Node) openTableIngest(ctx context.Context, rel *catalog.Relation, curr uint64) (*exec.TableIngest, error) {
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

// parallelism is the number of actors of a hash-distributed fragment.
func (s *Node) parallelism() int {
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
func (s *Node) tableJobFor(ctx context.Context, rel *catalog.Relation) (*tableJob, error) {
	var deadline <-chan time.Time
	for {
		s.jobs.mu.Lock()
		j := s.jobs.tables[rel.ID]
		rebuilt := s.jobs.rebuilt
		s.jobs.mu.Unlock()
		if j != nil {
			return j, nil
		}
		if s.cfg.Dropping(rel.ID) {
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
func (s *Node) write(ctx context.Context, rel *catalog.Relation, apply func(ctx context.Context, w *exec.TableWriter) error) (uint64, error) {
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
func (s *Node) tableWatermark(ex *exec.TableExecutor, rel *catalog.Relation) error {
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

// viewJob is a running materialized view.
type viewJob struct {
	rel         *catalog.Relation
	actors      []stream.ActorID
	outputs     []streamplan.UpstreamActor
	dispatchers map[stream.ActorID]*stream.BroadcastDispatcher
	backfills   []*exec.Backfill
	sources     []*exec.Source
	started     time.Time
	// replaced is closed when recovery tears the job down.
	replaced chan struct{}
}

// upstreamOf describes a relation that a new or rebuilt job reads.
func (s *Node) upstreamOf(id catalog.ObjectID) (*streamplan.Upstream, error) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	if t := s.jobs.tables[id]; t != nil {
		return &streamplan.Upstream{
			Rel:    t.rel,
			Actors: []streamplan.UpstreamActor{{ID: t.actor, Owns: func(uint16) bool { return true }}},
			State:  streamplan.TableStateSchema(t.rel),
		}, nil
	}
	if v := s.jobs.views[id]; v != nil {
		return &streamplan.Upstream{Rel: v.rel, Actors: v.outputs, State: streamplan.ViewStateSchema(v.rel)}, nil
	}
	return nil, sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "relation %d is not running", id)
}

// dispatcherOf returns the dispatcher of an upstream actor.
func (s *Node) dispatcherOf(actor stream.ActorID) *stream.BroadcastDispatcher {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for _, t := range s.jobs.tables {
		if t.actor == actor {
			return t.dispatcher
		}
	}
	for _, v := range s.jobs.views {
		if d := v.dispatchers[actor]; d != nil {
			return d
		}
	}
	return nil
}

// jobEnv is the environment a view or sink job is instantiated in.
func (s *Node) jobEnv(rel *catalog.Relation, spec JobSpec, curr uint64) *streamplan.Env {
	return &streamplan.Env{
		Name:        spec.Name,
		Store:       s.store,
		Actors:      s.actors,
		Parallelism: s.parallelism(),
		Epoch:       curr,
		Location:    time.UTC,
		Log:         s.log,
		Strict:      spec.Strict,
		Upstream:    s.upstreamOf,
		Backfill:    spec.Backfill,
		SinkLog:     spec.SinkLog,

		OverWindowCachePolicy: rel.Options["over_window_cache_policy"],
		Group:                 uint64(rel.DatabaseID),
	}
}

// registerView spawns an instantiated job's actors and records it.
func (s *Node) registerView(rel *catalog.Relation, job *streamplan.Job, spawn bool) *viewJob {
	vj := &viewJob{rel: rel, outputs: job.Outputs, dispatchers: job.Dispatcher, backfills: job.Backfills, sources: job.Sources,
		started: time.Now(), replaced: make(chan struct{})}
	for _, a := range job.Actors {
		vj.actors = append(vj.actors, a.ID)
		if spawn {
			s.actors.Spawn(a, job.SourceBarriers[a.ID])
		}
	}
	s.jobs.mu.Lock()
	s.jobs.views[rel.ID] = vj
	s.jobs.mu.Unlock()
	return vj
}

// WaitSources blocks until every connector source read by the named
// materialized view has emitted all its rows (bounded sources only).
func (s *Node) WaitSources(ctx context.Context, view string) error {
	s.jobs.mu.Lock()
	var vj *viewJob
	for _, v := range s.jobs.views {
		if v.rel.Name == view {
			vj = v
		}
	}
	s.jobs.mu.Unlock()
	if vj == nil {
		return sqlerr.Errorf(sqlerr.UndefinedTable, "materialized view %q is not running", view)
	}
	for _, src := range vj.sources {
		select {
		case <-src.Finished():
		case <-vj.replaced:
			return ErrCreationInterrupted(vj.rel)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
