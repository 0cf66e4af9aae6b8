package frontend

import (
	"context"
	"log/slog"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/meta"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"
)

// CatalogReader is the frontend's view of the catalog: lookups only.
// In-process it is the meta node's catalog itself; a frontend of a
// cluster would read a replica that the meta node keeps up to date (as
// RisingWave's frontends do). Changes go through Meta.
type CatalogReader interface {
	Version() uint64
	DatabaseByName(name string) (*catalog.Database, error)
	SchemaByName(dbID catalog.ObjectID, name string) (*catalog.Schema, error)
	UserByName(name string) (*catalog.User, error)
	RelationByName(schemaID catalog.ObjectID, name string) (*catalog.Relation, error)
	Relation(id catalog.ObjectID) (*catalog.Relation, bool)
	Databases() []*catalog.Database
	Schemas(dbID catalog.ObjectID) []*catalog.Schema
	Relations(filter func(*catalog.Relation) bool) []*catalog.Relation
	Users() []*catalog.User
	Dependents(id catalog.ObjectID) []*catalog.Relation
	Functions(filter func(*catalog.Function) bool) []*catalog.Function
}

// Meta is what the frontend asks of the meta node: catalog changes (DDL),
// the streaming jobs' lifecycle, the barrier loop's epochs, and the state
// the system catalog relations show. Arguments and results are catalog
// structs, ids and plans; the exceptions are noted on the methods.
type Meta interface {
	Catalog() CatalogReader

	// Catalog objects without streaming jobs.
	CreateDatabase(ctx context.Context, name, owner string) (*catalog.Database, error)
	CreateSchema(ctx context.Context, db catalog.ObjectID, name, owner string) (*catalog.Schema, error)
	CreateUser(ctx context.Context, u catalog.User) (*catalog.User, error)
	UpdateUser(ctx context.Context, u catalog.User) error
	// DropObject drops a database, schema, user or function (no state of
	// its own).
	DropObject(ctx context.Context, id catalog.ObjectID) error
	// CreateFunction stores a SQL function (replacing the one of the same
	// signature when replace).
	CreateFunction(ctx context.Context, fn *catalog.Function, replace bool) error
	// CreateRelation stores a view or a source (no state tables).
	CreateRelation(ctx context.Context, rel *catalog.Relation) error
	// UpdateRelation replaces a view's definition (CREATE OR REPLACE VIEW).
	UpdateRelation(ctx context.Context, rel *catalog.Relation) error

	// Streaming jobs. CreateTable allocates stateTables state tables for
	// rel, registers them with its catalog entry and starts its actor.
	CreateTable(ctx context.Context, rel *catalog.Relation, stateTables int) error
	// CreateMaterializedView creates a view planned as root (its visible
	// columns named by columns) and returns once it is backfilled and
	// committed. The plan is a tree of plain plan nodes; it holds bound
	// expressions, which a cluster would have to serialize.
	CreateMaterializedView(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column) error
	// CreateSink checks that the sink's target is reachable and creates
	// the sink job planned as root.
	CreateSink(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column, spec *sink.Spec) error
	// DropRelation drops rel and everything that depends on it
	// (dependents first), stopping their actors before their state goes.
	DropRelation(ctx context.Context, rel *catalog.Relation) error
	// DropSink drops a sink (its job and worker).
	DropSink(ctx context.Context, rel *catalog.Relation) error
	// ReplaceTableColumns gives table old the columns of updated (columns
	// appended, nothing else changed), restarting its actor.
	ReplaceTableColumns(ctx context.Context, old, updated *catalog.Relation) error
	// CreatingJob returns the materialized view whose creation has job
	// id id; CancelJob cancels it and returns once its CREATE returned.
	CreatingJob(id catalog.ObjectID) (*catalog.Relation, bool)
	CancelJob(ctx context.Context, id catalog.ObjectID) error
	// CreatingJobs lists the creations in progress (SHOW JOBS).
	CreatingJobs() []JobProgress
	// JobFailure is why the last rebuild could not start relation id's
	// job (nil: it runs); JobFailures lists a database's failed jobs.
	JobFailure(id catalog.ObjectID) error
	JobFailures(db catalog.ObjectID) []JobFailure
	// SinkStatus is a sink's delivery progress and state.
	SinkStatus(id catalog.ObjectID) (sink.Status, string)
	// Actors lists the running actors and the database of each.
	Actors() ([]stream.ActorInfo, map[stream.ActorID]catalog.ObjectID)

	// System parameters (ALTER SYSTEM).
	SystemParam(name string) string
	SetSystemParam(ctx context.Context, name, value string, reset bool, by string) error

	// Epochs.
	Flush(ctx context.Context) error
	Recover(ctx context.Context, reason string) error
	WaitEpochsWritten(ctx context.Context, group uint64, epochs []uint64) error
	Recoveries() []meta.RecoveryRecord

	// WorkerNodes lists the cluster's nodes (rw_worker_nodes, SHOW
	// CLUSTER), read from the metadata store.
	WorkerNodes(ctx context.Context) ([]cluster.Node, error)
}

// JobProgress is a creation in progress, as SHOW JOBS shows it.
type JobProgress struct {
	ID         catalog.ObjectID
	Definition string
	Progress   string
}

// JobFailure is a job the last rebuild could not start.
type JobFailure struct {
	Rel *catalog.Relation
	Err error
}

// DML is what the frontend asks of the compute nodes that run tables'
// actors: apply a statement's writes. The writes are a function applied
// to the table actor's writer inside the actor (so that a statement reads
// its table's latest state and is atomic); a cluster would ship the
// statement's rows or write set instead.
type DML interface {
	// Write applies one statement's writes to rel and returns the epoch
	// they belong to.
	Write(ctx context.Context, rel *catalog.Relation, apply func(context.Context, *exec.TableWriter) error) (uint64, error)
	// WriteAll applies writes to several tables in one epoch (a
	// transaction block's commit, I7).
	WriteAll(ctx context.Context, rels []*catalog.Relation, applies []func(context.Context, *exec.TableWriter) error) (uint64, error)
}

// Config configures a frontend.
type Config struct {
	Meta  Meta
	DML   DML
	Store *storage.Engine // batch reads of committed snapshots
	Log   *slog.Logger
}

// Frontend serves SQL sessions.
type Frontend struct {
	catalog CatalogReader
	meta    Meta
	dml     DML
	store   *storage.Engine
	log     *slog.Logger
	// openTxns: snapshots of open transaction blocks (txn.go).
	openTxns openTxns
	// sessions are the live sessions by process id (activity.go).
	sessions sessionRegistry
}

// New returns a frontend.
func New(cfg Config) *Frontend {
	return &Frontend{catalog: cfg.Meta.Catalog(), meta: cfg.Meta, dml: cfg.DML, store: cfg.Store, log: cfg.Log}
}

// Engine is the frontend as a pgwire engine.
func (f *Frontend) Engine() pgwire.Engine { return &engine{s: f} }

// TxHorizon is the oldest snapshot epoch of an open transaction block
// (table actors detect conflicts with writes after it).
func (f *Frontend) TxHorizon() uint64 { return f.openTxns.horizon(f.store) }
