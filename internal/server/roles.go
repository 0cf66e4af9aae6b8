package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/compute"
	"github.com/runneldb/runnel/internal/frontend"
	"github.com/runneldb/runnel/internal/meta"
	"github.com/runneldb/runnel/internal/metasrv"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/streamplan"
)

// The in-process seams between the roles of one process (role all):
//
//	frontend --frontend.Meta--> metaRole --> metasrv.Service
//	frontend --frontend.DML---> compute.Node
//	metasrv.Service --metasrv.Compute--> compute.Node; meta.BarrierLoop --meta.Actors--> compute.Node's barrier manager
//	metasrv.Service --metasrv.Planner--> frontend.Frontend (re-plans at rebuild)
var (
	_ frontend.DML    = (*compute.Node)(nil)
	_ metasrv.Planner = (*frontend.Frontend)(nil)
	_ metasrv.Compute = (*compute.Node)(nil)
	_ frontend.Meta   = metaRole{}
)

// metaRole is the in-process implementation of frontend.Meta: the
// frontend's calls go straight to this process's meta service, catalog and
// barrier loop.
type metaRole struct{ s *Server }

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

func (m metaRole) CreateFunction(ctx context.Context, fn *catalog.Function, replace bool) error {
	return m.s.catalog.CreateFunction(ctx, fn, replace)
}

func (m metaRole) CreateRelation(ctx context.Context, rel *catalog.Relation) error {
	_, err := m.s.catalog.CreateRelation(ctx, rel, 0)
	return err
}

func (m metaRole) UpdateRelation(ctx context.Context, rel *catalog.Relation) error {
	return m.s.catalog.UpdateRelation(ctx, rel)
}

func (m metaRole) CreateTable(ctx context.Context, rel *catalog.Relation, stateTables int) error {
	return m.s.meta.CreateTable(ctx, rel, stateTables)
}

func (m metaRole) CreateMaterializedView(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column) error {
	return m.s.meta.CreateMaterializedView(ctx, rel, root, columns)
}

func (m metaRole) CreateSink(ctx context.Context, rel *catalog.Relation, root *streamplan.Node, columns []plan.Column, spec *sink.Spec) error {
	return m.s.meta.CreateSink(ctx, rel, root, columns, spec)
}

func (m metaRole) DropRelation(ctx context.Context, rel *catalog.Relation) error {
	return m.s.meta.DropRelation(ctx, rel)
}

func (m metaRole) DropSink(ctx context.Context, rel *catalog.Relation) error {
	return m.s.meta.DropSink(ctx, rel)
}

func (m metaRole) ReplaceTableColumns(ctx context.Context, old, updated *catalog.Relation) error {
	return m.s.meta.ReplaceTableColumns(ctx, old, updated)
}

func (m metaRole) CreatingJob(id catalog.ObjectID) (*catalog.Relation, bool) {
	return m.s.meta.CreatingJob(id)
}

func (m metaRole) CancelJob(ctx context.Context, id catalog.ObjectID) error {
	return m.s.meta.CancelJob(ctx, id)
}

// CreatingJobs answers SHOW JOBS: views being created, with backfill
// progress.
func (m metaRole) CreatingJobs() []frontend.JobProgress {
	var rows []frontend.JobProgress
	for _, b := range m.s.compute.Backfills() {
		progress := fmt.Sprintf("%d rows backfilled, %d/%d upstream actors done, %s", b.Rows, b.Done, b.Upstreams, time.Since(b.Started).Round(time.Millisecond))
		rows = append(rows, frontend.JobProgress{ID: b.Rel.ID, Definition: "CREATE " + strings.ToUpper(b.Rel.Kind.String()) + " " + b.Rel.Name, Progress: progress})
	}
	return rows
}

func (m metaRole) JobFailure(id catalog.ObjectID) error { return m.s.meta.JobFailure(id) }

func (m metaRole) JobFailures(db catalog.ObjectID) []frontend.JobFailure {
	var out []frontend.JobFailure
	for _, j := range m.s.meta.JobFailures(db) {
		out = append(out, frontend.JobFailure{Rel: j.Rel, Err: j.Err})
	}
	return out
}

func (m metaRole) SinkStatus(id catalog.ObjectID) (sink.Status, string) {
	return m.s.meta.SinkStatus(id)
}

func (m metaRole) Actors() ([]stream.ActorInfo, map[stream.ActorID]catalog.ObjectID) {
	return m.s.meta.Actors()
}

func (m metaRole) SystemParam(name string) string { return m.s.meta.SystemParam(name) }

func (m metaRole) SetSystemParam(ctx context.Context, name, value string, reset bool, by string) error {
	return m.s.meta.SetSystemParam(ctx, name, value, reset, by)
}

func (m metaRole) Flush(ctx context.Context) error {
	if err := m.s.epochs.Flush(ctx); err != nil {
		return err
	}
	return m.s.meta.FlushIntoTables(ctx, m.s.epochs.Flush)
}

func (m metaRole) Recover(ctx context.Context, reason string) error {
	return m.s.epochs.Recover(ctx, reason)
}

func (m metaRole) WaitEpochsWritten(ctx context.Context, group uint64, epochs []uint64) error {
	return m.s.epochs.WaitEpochsWritten(ctx, group, epochs)
}

func (m metaRole) Recoveries() []meta.RecoveryRecord { return m.s.epochs.Recoveries() }

func (m metaRole) WorkerNodes(ctx context.Context) ([]cluster.Node, error) {
	return m.s.WorkerNodes(ctx)
}
