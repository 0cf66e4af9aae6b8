package server

import (
	"context"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/compute"
	"github.com/runneldb/runnel/internal/frontend"
	"github.com/runneldb/runnel/internal/meta"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/streamplan"
)

// metaRole is the in-process implementation of frontend.Meta: the
// frontend's calls go straight to this process's meta node.
type metaRole struct{ s *Server }

var _ frontend.Meta = metaRole{}

func (m metaRole) Catalog() frontend.CatalogReader { return m.s.catalog }

func (m metaRole) CreateDatabase(ctx context.Context, name, owner string) (*catalog.Database, error) {
	return m.s.catalog.CreateDatabase(ctx, name, owner)
}

func (m metaRole) CreateSchema(ctx context.Context, db catalog.ObjectID, name, owner string) (*catalog.Schema, error) {
	return m.s.catalog.CreateSchema(ctx, db, name, owner)
}

func (m metaRole) CreateUser(ctx context.Context, u catalog.User) (*catalog.User, error) {
	return m.s.catalog.CreateUser(ctx, u)
}

func (m metaRole) UpdateUser(ctx context.Context, u catalog.User) error {
	return m.s.catalog.UpdateUser(ctx, u)
}

func (m metaRole) DropObject(ctx context.Context, id catalog.ObjectID) error {
	return m.s.catalog.DropObject(ctx, id)
}

func (m metaRole) CreateRelation(ctx context.Context, rel *catalog.Relation) error {
	_, err := m.s.catalog.CreateRelation(ctx, rel, 0)
	return err
}

func (m metaRole) UpdateRelation(ctx context.Context, rel *catalog.Relation) error {
	return m.s.catalog.UpdateRelation(ctx, rel)
}

func (m metaRole) CreateTable(ctx context.Context, rel *catalog.Relation, stateTables int) error {
	return m.s.createTable(ctx, rel, stateTables)
}

func (m metaRole) CreateMaterializedView(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column) error {
	return m.s.createMaterializedView(ctx, rel, columns, root)
}

func (m metaRole) CreateSink(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column, spec *sink.Spec) error {
	return m.s.createSink(ctx, rel, root, columns, spec)
}

func (m metaRole) DropRelation(ctx context.Context, rel *catalog.Relation) error {
	return m.s.dropCascade(ctx, rel)
}

func (m metaRole) DropSink(ctx context.Context, rel *catalog.Relation) error {
	return m.s.dropView(ctx, rel)
}

func (m metaRole) ReplaceTableColumns(ctx context.Context, old, updated *catalog.Relation) error {
	return m.s.replaceTableColumns(ctx, old, updated)
}

func (m metaRole) CreatingJob(id catalog.ObjectID) (*catalog.Relation, bool) {
	return m.s.creatingJob(id)
}

func (m metaRole) CancelJob(ctx context.Context, id catalog.ObjectID) error {
	return m.s.cancelJob(ctx, id)
}

func (m metaRole) CreatingJobs() []frontend.JobProgress { return m.s.jobRows() }

func (m metaRole) JobFailure(id catalog.ObjectID) error { return m.s.failures.get(id) }

func (m metaRole) JobFailures(db catalog.ObjectID) []frontend.JobFailure {
	var out []frontend.JobFailure
	for _, j := range m.s.failures.list(db) {
		out = append(out, frontend.JobFailure{Rel: j.rel, Err: j.err})
	}
	return out
}

func (m metaRole) SinkStatus(id catalog.ObjectID) (sink.Status, string) { return m.s.sinkStatus(id) }

func (m metaRole) Actors() ([]stream.ActorInfo, map[stream.ActorID]catalog.ObjectID) {
	return m.s.compute.Actors(), m.s.compute.ActorDatabases()
}

func (m metaRole) SystemParam(name string) string { return m.s.systemParam(name) }

func (m metaRole) SetSystemParam(ctx context.Context, name, value string, reset bool, by string) error {
	return m.s.setSystemParam(ctx, name, value, reset, by)
}

func (m metaRole) Flush(ctx context.Context) error { return m.s.epochs.Flush(ctx) }

func (m metaRole) Recover(ctx context.Context, reason string) error {
	return m.s.epochs.Recover(ctx, reason)
}

func (m metaRole) WaitEpochsWritten(ctx context.Context, group uint64, epochs []uint64) error {
	return m.s.epochs.WaitEpochsWritten(ctx, group, epochs)
}

func (m metaRole) Recoveries() []meta.RecoveryRecord { return m.s.epochs.Recoveries() }

var _ frontend.DML = (*compute.Node)(nil) // in-process DML goes straight to the compute node
