package compute

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"
)

// Config configures a compute node.
type Config struct {
	Store *storage.Engine
	Log   *slog.Logger
	// Parallelism is the number of actors per hash-distributed fragment
	// (0: the number of cores).
	Parallelism int
	// TxHorizon is the frontend's oldest open transaction snapshot: table
	// actors detect write conflicts with writes after it (nil: none).
	TxHorizon func() uint64
	// Dropping reports that the meta node is dropping a relation, so that
	// a write to a table whose actor is gone fails at once instead of
	// waiting for a rebuild (nil: never).
	Dropping func(catalog.ObjectID) bool
}

// Node runs the streaming actors of this process: it builds them from
// plans, connects them to their upstreams, stops them, and routes DML to
// table actors.
type Node struct {
	cfg    Config
	log    *slog.Logger
	store  *storage.Engine
	actors *stream.BarrierManager
	jobs   jobs
}

// jobs tracks the running actors of every streaming job.
type jobs struct {
	mu     sync.Mutex
	tables map[catalog.ObjectID]*tableJob
	views  map[catalog.ObjectID]*viewJob
	// rebuilt is closed (and replaced) after every rebuild: writes waiting
	// for a recovering table retry then.
	rebuilt chan struct{}
}

// New returns a compute node with no actors.
func New(cfg Config) *Node {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.TxHorizon == nil {
		cfg.TxHorizon = func() uint64 { return 0 }
	}
	if cfg.Dropping == nil {
		cfg.Dropping = func(catalog.ObjectID) bool { return false }
	}
	return &Node{cfg: cfg, log: cfg.Log, store: cfg.Store, actors: stream.NewBarrierManager(cfg.Log),
		jobs: jobs{tables: map[catalog.ObjectID]*tableJob{}, views: map[catalog.ObjectID]*viewJob{}, rebuilt: make(chan struct{})}}
}

// Barriers is the node's barrier manager: the meta node's barrier loop
// injects barriers into its source actors and collects them from all
// (meta.Actors).
func (s *Node) Barriers() *stream.BarrierManager { return s.actors }

// Pending is an actor built by a rebuild and not started yet: nothing
// starts until every job is wired (see Start).
type Pending struct {
	actor    *stream.Actor
	barriers chan *stream.Barrier
}

// SpawnTable builds and starts the actor of a table at epoch curr. The
// caller holds the barrier loop's graph lock.
func (s *Node) SpawnTable(ctx context.Context, rel *catalog.Relation, curr uint64) error {
	return s.spawnTable(ctx, rel, curr)
}

// BuildTable builds and registers a table's actor without starting it.
func (s *Node) BuildTable(ctx context.Context, rel *catalog.Relation, curr uint64) (Pending, error) {
	j, a, err := s.newTableJob(ctx, rel, curr)
	if err != nil {
		return Pending{}, err
	}
	return Pending{a, j.barriers}, nil
}

// Start starts actors built by a rebuild.
func (s *Node) Start(ps []Pending) {
	for _, p := range ps {
		s.actors.Spawn(p.actor, p.barriers)
	}
}

// Rebuilt tells writes waiting for a recovering table to look again.
func (s *Node) Rebuilt() {
	s.jobs.mu.Lock()
	close(s.jobs.rebuilt)
	s.jobs.rebuilt = make(chan struct{})
	s.jobs.mu.Unlock()
}

// JobSpec is what a view or sink job is instantiated with, besides its
// plan. SinkLog is the sink's worker (the in-process delivery of its log
// store; a cluster's compute node would run it itself).
type JobSpec struct {
	Name     string // "materialized view v", "sink s"
	Backfill bool   // a new job: backfill from the upstreams' snapshots
	Strict   bool   // streaming_strict_consistency (I6)
	SinkLog  exec.SinkLog
}

// ViewJob is a handle on a view's or sink's running actors, given to the
// meta node that created it: it waits on the backfills and publishes the
// job. In-process it is a pointer into the node; a cluster would report
// backfill progress and replacement by messages.
type ViewJob struct{ j *viewJob }

// Backfilled is closed once every backfill of the job is done.
func (v ViewJob) Backfills() []<-chan struct{} {
	var out []<-chan struct{}
	for _, bf := range v.j.backfills {
		out = append(out, bf.Done())
	}
	return out
}

// Replaced is closed when a recovery tears the job down.
func (v ViewJob) Replaced() <-chan struct{} { return v.j.replaced }

// BuildView instantiates a new job's actors at epoch curr, spawns them and
// registers the job. The returned outputs are to be connected to their
// upstream actors by the barrier that starts the job (an AddOutputs
// mutation): in-process they are Go channels; a cluster would connect
// exchanges by actor id instead.
func (s *Node) BuildView(rel *catalog.Relation, root *streamplan.Node, spec JobSpec, curr uint64) (ViewJob, map[stream.ActorID][]stream.Output, error) {
	job, err := streamplan.Instantiate(root, s.jobEnv(rel, spec, curr))
	if err != nil {
		return ViewJob{}, nil, err
	}
	return ViewJob{s.registerView(rel, job, true)}, job.Connect, nil
}

// RebuildView instantiates a job after recovery (its plan's state tables
// assigned and checked by the meta node), connects it to its running
// upstreams directly (no barrier is in flight during a rebuild) and
// registers it. The caller starts the returned actors once the whole
// graph is wired.
func (s *Node) RebuildView(rel *catalog.Relation, root *streamplan.Node, spec JobSpec, curr uint64) ([]Pending, error) {
	what := rel.Kind.String() + " " + rel.Name
	job, err := streamplan.Instantiate(root, s.jobEnv(rel, spec, curr))
	if err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", what, err)
	}
	// Check every upstream first: a half-connected job that never starts
	// would block its upstreams once their channels to it fill.
	for up := range job.Connect {
		if s.dispatcherOf(up) == nil {
			return nil, fmt.Errorf("rebuild %s: upstream actor %d is not running", what, up)
		}
	}
	for up, outs := range job.Connect {
		d := s.dispatcherOf(up)
		for _, o := range outs {
			d.AddOutput(o)
		}
	}
	s.registerView(rel, job, false)
	var out []Pending
	for _, a := range job.Actors {
		out = append(out, Pending{a, job.SourceBarriers[a.ID]})
	}
	return out, nil
}

// IsCurrentView reports whether job is still the running job of relation
// id (a recovery did not replace it). The meta node asks under the graph
// lock before it publishes the job.
func (s *Node) IsCurrentView(job ViewJob, id catalog.ObjectID) bool {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	return s.jobs.views[id] == job.j
}

// PublishView records rel (no longer Creating) as the relation of job.
func (s *Node) PublishView(job ViewJob, rel *catalog.Relation) {
	s.jobs.mu.Lock()
	job.j.rel = rel
	s.jobs.mu.Unlock()
}

// HasView reports whether a view or sink job of relation id runs.
func (s *Node) HasView(id catalog.ObjectID) bool {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	return s.jobs.views[id] != nil
}

// RelationActors lists the running actors of a relation's job.
func (s *Node) RelationActors(id catalog.ObjectID) []stream.ActorID {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	if j := s.jobs.tables[id]; j != nil {
		return []stream.ActorID{j.actor}
	}
	if vj := s.jobs.views[id]; vj != nil {
		return slices.Clone(vj.actors)
	}
	return nil
}

// StopActors joins actors that a Stop mutation stopped at a barrier.
func (s *Node) StopActors(ctx context.Context, ids []stream.ActorID) error {
	return s.actors.StopActors(ctx, ids)
}

// ForgetStopped forgets the job of relation id if ids (stopped and
// joined) are its actors.
func (s *Node) ForgetStopped(id catalog.ObjectID, ids []stream.ActorID) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	if j := s.jobs.tables[id]; j != nil && slices.Contains(ids, j.actor) {
		delete(s.jobs.tables, id)
		close(j.replaced)
	}
	if vj := s.jobs.views[id]; vj != nil && len(vj.actors) > 0 && slices.Contains(ids, vj.actors[0]) {
		delete(s.jobs.views, id)
		close(vj.replaced)
	}
}

// TearDown forgets the running jobs of the relations in scope (their
// actors were joined by a recovery, I3), closing their replaced channels.
func (s *Node) TearDown(in func(*catalog.Relation) bool) {
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

// Actors lists the running actors.
func (s *Node) Actors() []stream.ActorInfo { return s.actors.ActorsWithAwaitTrees() }

// ActorDatabases maps every running actor to its job's database.
func (s *Node) ActorDatabases() map[stream.ActorID]catalog.ObjectID { return s.actorDatabases() }

// JobActors lists the running actors of every job, by relation.
func (s *Node) JobActors() map[catalog.ObjectID][]stream.ActorID { return s.jobActors() }

// Write applies one statement's writes to rel's table actor (frontend.DML).
func (s *Node) Write(ctx context.Context, rel *catalog.Relation, apply func(context.Context, *exec.TableWriter) error) (uint64, error) {
	return s.write(ctx, rel, apply)
}

// WriteAll applies writes to several tables in one epoch (frontend.DML).
func (s *Node) WriteAll(ctx context.Context, rels []*catalog.Relation, applies []func(context.Context, *exec.TableWriter) error) (uint64, error) {
	parts := make([]txPart, len(rels))
	for i := range rels {
		parts[i] = txPart{rel: rels[i], apply: applies[i]}
	}
	return s.commitParts(ctx, parts)
}

// ErrCreationInterrupted is the error of a CREATE whose job a recovery
// tore down before it was published.
func ErrCreationInterrupted(rel *catalog.Relation) error {
	return sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "creation of materialized view %q was interrupted by a recovery; it was dropped, run CREATE again", rel.Name)
}
