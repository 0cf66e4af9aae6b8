package metasrv

import (
	"context"
	"log/slog"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/compute"
	"github.com/runneldb/runnel/internal/meta"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"
)

// Planner plans a job's stored SQL definition again when the meta node
// rebuilds the job after a recovery. The frontend implements it
// (frontend.Frontend). A cluster's meta node would store the plan it was
// given at CREATE instead, once plans have a serialized form.
type Planner interface {
	PlanView(rel *catalog.Relation) (*streamplan.Node, error)
	PlanSink(rel *catalog.Relation, spec *sink.Spec) (*streamplan.Node, error)
}

// Compute is the meta → compute seam for actors (the barrier loop's is
// meta.Actors): build a job's actors from its plan at an epoch, connect
// and start them, stop and join them, forget the jobs a recovery tore
// down. compute.Node implements it in-process. Arguments are catalog
// structs, plans, actor ids and epochs; BuildView's outputs (channels)
// and the ViewJob handle are in-process shortcuts (internal/compute's
// doc says why).
type Compute interface {
	SpawnTable(ctx context.Context, rel *catalog.Relation, curr uint64) error
	BuildTable(ctx context.Context, rel *catalog.Relation, curr uint64) (compute.Pending, error)
	BuildView(rel *catalog.Relation, root *streamplan.Node, spec compute.JobSpec, curr uint64) (compute.ViewJob, map[stream.ActorID][]stream.Output, error)
	RebuildView(rel *catalog.Relation, root *streamplan.Node, spec compute.JobSpec, curr uint64) ([]compute.Pending, error)
	Start(ps []compute.Pending)
	Rebuilt()
	IsCurrentView(job compute.ViewJob, id catalog.ObjectID) bool
	PublishView(job compute.ViewJob, rel *catalog.Relation)
	HasView(id catalog.ObjectID) bool
	RelationActors(id catalog.ObjectID) []stream.ActorID
	StopActors(ctx context.Context, ids []stream.ActorID) error
	ForgetStopped(id catalog.ObjectID, ids []stream.ActorID)
	TearDown(in func(*catalog.Relation) bool)
	Actors() []stream.ActorInfo
	ActorDatabases() map[stream.ActorID]catalog.ObjectID
	// Write applies one statement's writes to a table (a sink into a
	// table delivers its epochs so).
	Write(ctx context.Context, rel *catalog.Relation, apply func(context.Context, *exec.TableWriter) error) (uint64, error)
}

var _ Compute = (*compute.Node)(nil)

// Config configures a meta service.
type Config struct {
	Log     *slog.Logger
	Catalog *catalog.Catalog
	Store   *storage.Engine
}

// Service is the meta node's DDL and job lifecycle.
type Service struct {
	log     *slog.Logger
	catalog *catalog.Catalog
	store   *storage.Engine
	// Attached by Attach, before the first rebuild.
	epochs  *meta.BarrierLoop
	compute Compute
	fe      Planner

	jobs   jobs
	params sysParams
	sinks  sinkWorkers // see sink.go
	// failures: jobs the last rebuild could not start (statecatalog.go).
	failures jobFailures
}

// New returns a service over an open catalog and storage engine. Load
// its system parameters and reconcile the state catalog (LoadSystemParams,
// ReconcileState), then Attach the barrier loop, the compute node and the
// planner before the first Rebuild.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Service{log: cfg.Log, catalog: cfg.Catalog, store: cfg.Store,
		jobs: jobs{dropping: map[catalog.ObjectID]bool{}, creating: map[catalog.ObjectID]*creation{}}}
}

// Attach gives the service the barrier loop it injects mutations into,
// the compute node whose actors it builds and stops, and the planner it
// re-plans stored definitions with.
func (s *Service) Attach(epochs *meta.BarrierLoop, c Compute, p Planner) {
	s.epochs, s.compute, s.fe = epochs, c, p
}

// Close stops the sinks' workers (process shutdown, after the actors).
func (s *Service) Close() { s.stopSinkWorkers() }

// LoadSystemParams reads the system parameters from the catalog.
func (s *Service) LoadSystemParams(ctx context.Context) error { return s.loadSystemParams(ctx) }

// ReconcileState checks the catalog against the storage version at start
// (statecatalog.go).
func (s *Service) ReconcileState(ctx context.Context) error { return s.reconcileState(ctx) }

// TableGroup maps a state table to its database (storage spill groups).
func (s *Service) TableGroup(t storage.TableID) uint64 { return s.tableGroup(t) }

// IsDropping reports whether a DROP of the relation is in progress.
func (s *Service) IsDropping(id catalog.ObjectID) bool { return s.isDropping(id) }

// StrictConsistency is streaming_strict_consistency, which jobs built
// from now on get (I6).
func (s *Service) StrictConsistency() bool { return s.strictConsistency() }

// The DDL of the frontend (frontend.Meta, through the server's adapter).

// CreateTable allocates a table's state tables, registers them with its
// catalog entry and starts its actor.
func (s *Service) CreateTable(ctx context.Context, rel *catalog.Relation, stateTables int) error {
	return s.createTable(ctx, rel, stateTables)
}

// CreateMaterializedView creates, backfills and publishes a view.
func (s *Service) CreateMaterializedView(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column) error {
	return s.createMaterializedView(ctx, rel, columns, root)
}

// CreateSink checks a sink's target and creates its job.
func (s *Service) CreateSink(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column, spec *sink.Spec) error {
	return s.createSink(ctx, rel, root, columns, spec)
}

// DropRelation drops rel after everything that depends on it.
func (s *Service) DropRelation(ctx context.Context, rel *catalog.Relation) error {
	return s.dropCascade(ctx, rel)
}

// DropSink drops a sink's job and worker.
func (s *Service) DropSink(ctx context.Context, rel *catalog.Relation) error {
	return s.dropView(ctx, rel)
}

// ReplaceTableColumns gives table old the columns of updated.
func (s *Service) ReplaceTableColumns(ctx context.Context, old, updated *catalog.Relation) error {
	return s.replaceTableColumns(ctx, old, updated)
}

// CreatingJob returns the view being created with job id id.
func (s *Service) CreatingJob(id catalog.ObjectID) (*catalog.Relation, bool) {
	return s.creatingJob(id)
}

// CancelJob cancels a creation and waits for its CREATE to return.
func (s *Service) CancelJob(ctx context.Context, id catalog.ObjectID) error {
	return s.cancelJob(ctx, id)
}

// JobFailure is why the last rebuild could not start relation id's job.
func (s *Service) JobFailure(id catalog.ObjectID) error { return s.failures.get(id) }

// JobFailure is a job the last rebuild could not start.
type JobFailure struct {
	Rel *catalog.Relation
	Err error
}

// JobFailures lists a database's failed jobs, by relation id.
func (s *Service) JobFailures(db catalog.ObjectID) []JobFailure {
	var out []JobFailure
	for _, j := range s.failures.list(db) {
		out = append(out, JobFailure{Rel: j.rel, Err: j.err})
	}
	return out
}

// SinkStatus is a sink's delivery progress and state.
func (s *Service) SinkStatus(id catalog.ObjectID) (sink.Status, string) { return s.sinkStatus(id) }

// SystemParam returns a system parameter's current value.
func (s *Service) SystemParam(name string) string { return s.systemParam(name) }

// SetSystemParam stores a system parameter's new (checked) value.
func (s *Service) SetSystemParam(ctx context.Context, name, value string, reset bool, by string) error {
	return s.setSystemParam(ctx, name, value, reset, by)
}

// Actors lists the compute node's running actors and their databases.
func (s *Service) Actors() ([]stream.ActorInfo, map[stream.ActorID]catalog.ObjectID) {
	return s.compute.Actors(), s.compute.ActorDatabases()
}
