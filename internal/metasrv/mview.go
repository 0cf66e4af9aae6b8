package metasrv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/compute"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"
)

// creation is a running CREATE MATERIALIZED VIEW: cancel aborts it (CANCEL
// JOBS), and done is closed once the statement has returned (the view
// published, or dropped with nothing of it left).
type creation struct {
	rel    *catalog.Relation
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// createMaterializedView registers the view's state tables, starts its
// actors connected to its upstreams at one barrier, waits for the backfill
// and for the epoch that completes it to commit, and only then makes the
// view visible.
func (s *Service) createMaterializedView(ctx context.Context, rel *catalog.Relation, columns []plan.Column, root *streamplan.Node) error {
	err := s.createJobState(ctx, rel, root, rel.Name, func() {
		rel.DistKey = streamplan.MaterializeSchema(root).DistKey
		if rel.Kind != catalog.KindIndex { // an index's columns are named after its base's
			rel.Columns = jobColumns(root, columns)
		}
	})
	if err != nil {
		return err
	}
	// The statement's context, which CANCEL JOBS can cancel too.
	ctx, cancel := context.WithCancelCause(ctx)
	c := &creation{rel: rel, cancel: cancel, done: make(chan struct{})}
	s.jobs.mu.Lock()
	s.jobs.creating[rel.ID] = c
	s.jobs.mu.Unlock()
	defer func() {
		cancel(nil)
		s.jobs.mu.Lock()
		delete(s.jobs.creating, rel.ID)
		s.jobs.mu.Unlock()
		close(c.done)
	}()
	cancelled := func() error {
		if cause := context.Cause(ctx); errors.Is(cause, errJobCancelled) {
			return sqlerr.Errorf(sqlerr.QueryCanceled, "CREATE %s %s was cancelled by CANCEL JOBS %d", strings.ToUpper(rel.Kind.String()), rel.Name, rel.ID)
		}
		return ctx.Err()
	}
	job, err := s.startView(ctx, rel, root, s.viewSpec(rel, true))
	if err != nil {
		s.dropView(context.Background(), rel)
		if ctx.Err() != nil {
			return cancelled()
		}
		return err
	}
	for _, bf := range job.Backfills() {
		select {
		case <-bf:
		case <-job.Replaced():
			s.purgeInterrupted(rel)
			return errCreationInterrupted(rel)
		case <-ctx.Done():
			// The creation was cancelled: nothing of the view may remain.
			s.dropView(context.Background(), rel)
			return cancelled()
		}
	}
	crashPoint("create-materialized-view/after-backfill", rel.Name)
	// The view is complete once the epoch holding the end of its backfill
	// is committed.
	if err := s.epochs.Flush(ctx); err != nil {
		s.dropView(context.Background(), rel)
		if ctx.Err() != nil {
			return cancelled()
		}
		return err
	}
	return s.publishJob(ctx, rel, job, func() error {
		s.purgeInterrupted(rel)
		return errCreationInterrupted(rel)
	})
}

// createJobState assigns and allocates the state tables of a new
// streaming job (a view or a sink; stateName names them in errors),
// records them in rel (the first one is the job's own: the view's table,
// the sink's log store), lets set fill in the rest of rel, and writes the
// catalog entry, marked Creating, in the version delta that registers the
// tables (I1, I3: createWithState).
func (s *Service) createJobState(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, stateName string, set func()) error {
	n := 0
	if err := streamplan.AssignStateTables(root, stateName, func() (catalog.TableID, error) { n++; return 0, nil }); err != nil {
		return err
	}
	ids, err := s.catalog.AllocateTableIDs(ctx, n)
	if err != nil {
		return err
	}
	next := 0
	if err := streamplan.AssignStateTables(root, stateName, func() (catalog.TableID, error) { next++; return ids[next-1], nil }); err != nil {
		return err
	}
	rel.PK = root.Key
	rel.StateTable = root.StateTables[0]
	rel.StateTables = ids
	rel.Creating = true
	if set != nil {
		set()
	}
	tids := make([]storage.TableID, len(ids))
	for i, id := range ids {
		tids[i] = storage.TableID(id)
	}
	rel.StateLayout = streamplan.StateLayout(root) // checked by every rebuild (statecatalog.go)
	return s.createWithState(ctx, rel, tids)
}

// jobColumns names a new job's columns: the visible ones after the
// query's output columns, the hidden ones (stream key parts) _name_i.
func jobColumns(root *streamplan.Node, out []plan.Column) []catalog.Column {
	var cols []catalog.Column
	visible := 0
	for i, c := range root.Schema {
		col := catalog.Column{Type: c.Type, Hidden: c.Hidden}
		if !c.Hidden && visible < len(out) {
			col.Name = out[visible].Name
			visible++
		} else {
			col.Hidden = true
			col.Name = fmt.Sprintf("_%s_%d", c.Name, i)
		}
		cols = append(cols, col)
	}
	return cols
}

// publishJob makes a created job visible once its backfill's last epoch
// is committed: under the graph lock, so a recovery (which drops jobs
// still being created) cannot interleave — either it replaced the job
// before this point (interrupted reports that) or the job is published
// whole.
func (s *Service) publishJob(ctx context.Context, rel *catalog.Relation, job compute.ViewJob, interrupted func() error) error {
	done := *rel
	done.Creating = false
	return s.epochs.WithGraphLock(func(uint64) error {
		if !s.compute.IsCurrentView(job, rel.ID) {
			return interrupted()
		}
		// Publishing is not cut short by a late cancellation: CANCEL
		// JOBS then finds the job made and says so.
		if err := s.catalog.UpdateRelation(context.WithoutCancel(ctx), &done); err != nil {
			return err
		}
		s.compute.PublishView(job, &done)
		return nil
	})
}

// purgeInterrupted removes a view whose creation a recovery interrupted:
// the recovery joined its actors (I3), so its catalog entry and state
// tables can go now, and CREATE can be retried at once. The rebuild
// purges such views too; whichever comes second finds nothing to do.
func (s *Service) purgeInterrupted(rel *catalog.Relation) {
	defer s.markDropping(rel.ID)()
	if _, ok := s.catalog.Relation(rel.ID); !ok {
		return
	}
	if s.compute.HasView(rel.ID) {
		return // rebuilt meanwhile (cannot happen for a Creating view); leave it to DROP
	}
	if err := s.purgeRelation(context.Background(), rel); err != nil && !errors.Is(err, catalog.ErrNotFound) {
		s.log.Error("purge materialized view whose creation was interrupted", "view", rel.Name, "err", err)
	}
}

func errCreationInterrupted(rel *catalog.Relation) error { return compute.ErrCreationInterrupted(rel) }

// viewSpec is what a view's job is instantiated with (backfill: a new
// view reads its upstreams' snapshots first).
func (s *Service) viewSpec(rel *catalog.Relation, backfill bool) compute.JobSpec {
	return compute.JobSpec{Name: rel.Kind.String() + " " + rel.Name, Backfill: backfill, Strict: s.strictConsistency()}
}

// startView instantiates a new view's actors and connects them to their
// upstreams with one barrier (they take part in every barrier from that
// one on).
func (s *Service) startView(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, spec compute.JobSpec) (compute.ViewJob, error) {
	var vj compute.ViewJob
	mut := &stream.Mutation{}
	err := s.epochs.InjectMutation(ctx, mut, func(curr uint64) error {
		job, connect, err := s.compute.BuildView(rel, root, spec, curr)
		if err != nil {
			return err
		}
		mut.AddOutputs = connect
		vj = job
		return nil
	})
	return vj, err
}

// rebuildView recreates a view's actors after recovery from its stored
// definition and state tables, connecting them directly (no barrier is in
// flight during a rebuild). The caller starts the returned actors once the
// whole graph is wired.
func (s *Service) rebuildView(ctx context.Context, rel *catalog.Relation, curr uint64) ([]compute.Pending, error) {
	if h := RebuildViewHook.Load(); h != nil {
		(*h)(rel.Name)
	}
	root, err := s.fe.PlanView(rel)
	if err != nil {
		return nil, fmt.Errorf("rebuild %s %s: %w", rel.Kind, rel.Name, err)
	}
	return s.rebuildJob(rel, root, rel.Name, s.viewSpec(rel, false), curr)
}

// rebuildJob gives a re-planned job (a view's or a sink's) the state
// tables it was created with, checks their layout, and has the compute
// node instantiate it, connect it to its running upstreams and register
// it.
func (s *Service) rebuildJob(rel *catalog.Relation, root *streamplan.Node, label string, spec compute.JobSpec, curr uint64) ([]compute.Pending, error) {
	what := rel.Kind.String() + " " + rel.Name
	next := 0
	err := streamplan.AssignStateTables(root, label, func() (catalog.TableID, error) {
		if next >= len(rel.StateTables) {
			return 0, fmt.Errorf("rebuild %s: its plan needs more state tables than it has (%d)", what, len(rel.StateTables))
		}
		next++
		return rel.StateTables[next-1], nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.checkStateLayout(context.Background(), rel, root); err != nil { // statecatalog.go
		return nil, err
	}
	return s.compute.RebuildView(rel, root, spec, curr)
}

// dropView stops a view's (or a sink's) actors at a barrier, joins them,
// stops a sink's worker, and only then removes it from the catalog and
// unregisters its state tables (I3: a sink's worker reads its log). It
// works while the view's database is recovering or crash-looping: once
// the drop is registered no rebuild brings the view back, and actors torn
// down by a recovery were joined by it.
func (s *Service) dropView(ctx context.Context, rel *catalog.Relation) error {
	defer s.markDropping(rel.ID)()
	if err := s.stopJob(ctx, rel); err != nil {
		return fmt.Errorf("drop %s %s: %w", rel.Kind, rel.Name, err)
	}
	exec.ForgetJobErrors(uint64(rel.DatabaseID), rel.Kind.String()+" "+rel.Name) // a new job of the same name starts at zero
	s.stopSinkWorker(rel.ID)                                                     // sink.go; no-op for a view
	// The catalog entry and the state tables go in one transaction (statecatalog.go).
	return s.dropWithState(ctx, rel)
}

// dropStopTimeout bounds how long a DROP waits for its actors to stop at
// a barrier before aborting them with a recovery of their database.
var dropStopTimeout = 5 * time.Second

// DropAwaitsRebuildHook, when set, is called by a DROP that found no
// running actor of the relation, just before it waits for a rebuild in
// progress (the graph lock) to confirm it.
var DropAwaitsRebuildHook atomic.Pointer[func(id catalog.ObjectID)]

// stopJob stops and joins the running actors of a relation being dropped
// (the compute node lists them) and forgets its
// job. A recovery that replaces the job meanwhile joins the old actors and
// rebuilds nothing for it (the relation is marked dropping), so the loop
// ends once no job runs.
func (s *Service) stopJob(ctx context.Context, rel *catalog.Relation) error {
	for {
		ids := s.compute.RelationActors(rel.ID)
		if len(ids) == 0 {
			// I3: a rebuild in progress may have listed the relation
			// before it was marked dropping and spawn its actors after
			// this check. Rebuilds run under the graph lock, so decide
			// "nothing runs" under it: a rebuild either finished (and its
			// actors are seen here, to be stopped) or starts after the
			// mark (and skips the relation, droppedSince).
			if h := DropAwaitsRebuildHook.Load(); h != nil {
				(*h)(rel.ID)
			}
			running := false
			_ = s.epochs.WithGraphLock(func(uint64) error {
				running = len(s.compute.RelationActors(rel.ID)) > 0
				return nil
			})
			if !running {
				return nil
			}
			continue
		}
		stop := map[stream.ActorID]bool{}
		for _, a := range ids {
			stop[a] = true
		}
		// Stop at a barrier; if the actors do not pass one in time (stuck,
		// or deep in a long computation), abort them by recovering their
		// database, which joins them and rebuilds everything else (I5).
		sctx, cancel := context.WithTimeout(ctx, dropStopTimeout)
		err := s.epochs.InjectMutation(sctx, &stream.Mutation{Stop: stop}, nil)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			s.log.Warn("actors of a relation being dropped did not stop at a barrier; recovering its database", "relation", rel.Name, "after", dropStopTimeout)
			err = s.epochs.RecoverGroup(ctx, uint64(rel.DatabaseID), fmt.Sprintf("DROP of %s: its actors did not stop within %v", rel.Name, dropStopTimeout))
			if err == nil {
				continue // the reset joined them; nothing rebuilds a relation being dropped
			}
		}
		if err != nil {
			return fmt.Errorf("stop actors: %w", err)
		}
		if err := s.compute.StopActors(ctx, ids); err != nil {
			return fmt.Errorf("join actors: %w", err)
		}
		s.compute.ForgetStopped(rel.ID, ids)
	}
}

// errJobCancelled is the cause CANCEL JOBS gives a creation's context.
var errJobCancelled = errors.New("cancelled by CANCEL JOBS")

// JobCancelledHook, when set, is called by CANCEL JOBS right after it
// cancelled a creation; tests use it to let a backfill they hold go on
// only once the cancellation is certain.
var JobCancelledHook atomic.Pointer[func(id uint64)]

// creatingJob returns the materialized view being created whose job id
// (its relation id) is id.
func (s *Service) creatingJob(id catalog.ObjectID) (*catalog.Relation, bool) {
	s.jobs.mu.Lock()
	c := s.jobs.creating[id]
	s.jobs.mu.Unlock()
	if c == nil {
		return nil, false
	}
	return c.rel, true
}

// cancelJob cancels a creation (CANCEL JOBS) and returns once its CREATE
// has returned and dropped everything of the view (or published it, if
// it finished first).
func (s *Service) cancelJob(ctx context.Context, id catalog.ObjectID) error {
	s.jobs.mu.Lock()
	c := s.jobs.creating[id]
	s.jobs.mu.Unlock()
	if c == nil {
		return nil // returned meanwhile
	}
	c.cancel(errJobCancelled)
	if h := JobCancelledHook.Load(); h != nil {
		(*h)(uint64(id))
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
