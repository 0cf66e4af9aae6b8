package frontend

import (
	"context"
	"fmt"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sql"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"
	"github.com/runneldb/runnel/internal/types"
)

// createView runs CREATE [MATERIALIZED] VIEW.
func (ss *session) createView(ctx context.Context, cv *binder.CreateView) (pgwire.Result, error) {
	s := ss.s
	sc, err := ss.resolveSchema(cv.Schema)
	if err != nil {
		return pgwire.Result{}, err
	}
	tag := "CREATE VIEW"
	if cv.Materialized {
		tag = "CREATE MATERIALIZED VIEW"
	}
	old, _ := s.catalog.RelationByName(sc.ID, cv.Name)
	if old != nil {
		if cv.IfNotExists {
			ss.client.Notice(pgwire.Notice{Code: sqlerr.DuplicateTable, Message: fmt.Sprintf("relation %q already exists, skipping", cv.Name)})
			return pgwire.Result{Tag: tag}, nil
		}
		if !(cv.OrReplace && old.Kind == catalog.KindView && !cv.Materialized) {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateTable, "relation %q already exists", cv.Name)
		}
		if err := s.checkNoCycle(old, cv.DependsOn); err != nil {
			return pgwire.Result{}, err
		}
	}
	seen := map[string]bool{}
	for _, c := range cv.Columns {
		if seen[c.Name] {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateColumn, "column %q specified more than once", c.Name)
		}
		seen[c.Name] = true
	}
	rel := &catalog.Relation{DatabaseID: ss.db.ID, SchemaID: sc.ID, Name: cv.Name, Owner: ss.user.Name,
		Definition: cv.Query, DependsOn: cv.DependsOn, Functions: cv.Functions, EmitOnWindowClose: cv.EmitOnWindowClose}
	if !cv.Materialized {
		rel.Kind = catalog.KindView
		for _, c := range cv.Columns {
			rel.Columns = append(rel.Columns, catalog.Column{Name: c.Name, Type: c.Type})
		}
		if old != nil {
			rel.ID = old.ID
			return pgwire.Result{Tag: tag}, s.meta.UpdateRelation(ctx, rel)
		}
		if err := s.meta.CreateRelation(ctx, rel); err != nil {
			return pgwire.Result{}, err
		}
		return pgwire.Result{Tag: tag}, nil
	}
	root, err := streamplan.Build(cv.Plan)
	if err != nil {
		return pgwire.Result{}, err
	}
	rel.Kind = catalog.KindMaterializedView
	// The cache policy is the view's for life: rebuilds use the same.
	policy := ss.setting("over_window_cache_policy")
	if _, err := exec.ParseOverWindowCachePolicy(policy); err != nil {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value for over_window_cache_policy: %q (full or recent)", policy)
	}
	rel.Options = map[string]string{"over_window_cache_policy": policy}
	if err := s.meta.CreateMaterializedView(ctx, rel, root, cv.Columns); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: tag}, nil
}

func (s *Frontend) internalSession(rel *catalog.Relation) *session {
	ss := &session{s: s, settings: map[string]string{}}
	for k, v := range settingDefaults {
		ss.settings[k] = v
	}
	for _, db := range s.catalog.Databases() {
		if db.ID == rel.DatabaseID {
			ss.db = db
		}
	}
	for _, sc := range s.catalog.Schemas(rel.DatabaseID) {
		if sc.ID == rel.SchemaID {
			ss.settings["search_path"] = quoteIdent(sc.Name) + ", public"
		}
	}
	ss.user = &catalog.User{Name: rel.Owner, Superuser: true}
	return ss
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

var cancelJobsColumns = []pgwire.Column{{Name: "Id", Type: types.Int64}}

// cancelJobs answers CANCEL JOBS id, ...: each job (a materialized view
// being created, as SHOW JOBS lists them) is cancelled, and the statement
// returns once its CREATE has returned and dropped everything of the view.
// A job that finished before the cancellation reached it is an error, as
// is an unknown id; ids before it stay cancelled.
func (st *statement) cancelJobs(ctx context.Context, ids []uint64) (pgwire.Result, error) {
	s, ss := st.sess.s, st.sess
	var rows []types.Row
	for _, id := range ids {
		rel, ok := s.meta.CreatingJob(catalog.ObjectID(id))
		if !ok || rel.DatabaseID != ss.db.ID {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedObject, "job %d not found (SHOW JOBS lists the jobs in progress)", id)
		}
		if !ss.user.Superuser && rel.Owner != ss.user.Name {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InsufficientPrivilege, "must be owner of materialized view %s to cancel job %d", rel.Name, id)
		}
		if err := s.meta.CancelJob(ctx, catalog.ObjectID(id)); err != nil {
			return pgwire.Result{}, err
		}
		if cur, ok := s.catalog.Relation(rel.ID); ok && !cur.Creating {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "job %d finished before it could be cancelled: materialized view %s exists", id, rel.Name)
		}
		rows = append(rows, types.Row{types.DInt64(int64(id))})
	}
	return pgwire.Result{Tag: "CANCEL_JOBS", Columns: cancelJobsColumns, Rows: pgwire.SliceRows(rows)}, nil
}

// planView binds and plans a stored view definition (a CREATE
// MATERIALIZED VIEW statement) in ss's context.
// createViewText is the CREATE MATERIALIZED VIEW statement of rel, named
// name, as SHOW CREATE prints it and recovery re-plans it.
func createViewText(name string, rel *catalog.Relation) string {
	text := "CREATE MATERIALIZED VIEW " + name + " AS " + rel.Definition
	if rel.EmitOnWindowClose {
		text += " EMIT ON WINDOW CLOSE"
	}
	return text
}

func (s *Frontend) planView(ss *session, rel *catalog.Relation, stmt string) (*streamplan.Node, *binder.CreateView, error) {
	st, err := parser.ParseOne(stmt)
	if err != nil {
		return nil, nil, err
	}
	p, err := sql.Prepare(&sessionCatalog{ss: ss}, st, nil)
	if err != nil {
		return nil, nil, err
	}
	cv, ok := p.Bound.(*binder.CreateView)
	if !ok {
		return nil, nil, fmt.Errorf("definition of %s is not a view", rel.Name)
	}
	root, err := streamplan.Build(cv.Plan)
	if err != nil {
		return nil, nil, err
	}
	return root, cv, nil
}

// PlanView plans a materialized view's stored definition as its CREATE
// did, in its owner's context: the meta node's rebuild re-plans views with
// it (a cluster's meta node would store the plan instead).
func (s *Frontend) PlanView(rel *catalog.Relation) (*streamplan.Node, error) {
	if rel.Kind == catalog.KindIndex {
		return s.planIndex(rel) // index.go
	}
	root, _, err := s.planView(s.internalSession(rel), rel, createViewText(quoteIdent(rel.Name), rel))
	return root, err
}

// PlanViewQuery plans a materialized view's query alone (no EMIT ON
// WINDOW CLOSE), for the dashboard's fragment graph.
func (s *Frontend) PlanViewQuery(rel *catalog.Relation) (*streamplan.Node, error) {
	root, _, err := s.planView(s.internalSession(rel), rel, "CREATE MATERIALIZED VIEW "+quoteIdent(rel.Name)+" AS "+rel.Definition)
	return root, err
}

// PlanSink plans a sink's stored query (the meta node's rebuild).
func (s *Frontend) PlanSink(rel *catalog.Relation, spec *sink.Spec) (*streamplan.Node, error) {
	root, _, err := s.planSink(s.internalSession(rel), rel.Name, rel.Definition, spec)
	return root, err
}
