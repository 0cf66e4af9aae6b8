package server

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sink"
	_ "github.com/runneldb/runnel/internal/sink/file"     // registers s3, fs and file
	_ "github.com/runneldb/runnel/internal/sink/kafka"    // registers kafka
	_ "github.com/runneldb/runnel/internal/sink/postgres" // registers postgres and jdbc
	"github.com/runneldb/runnel/internal/sql"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/ident"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/streamplan"
)

// A sink is a streaming job like a materialized view (its running actors
// are a viewJob in s.jobs.views, so recovery tears down and stops it the
// same way) whose plan ends in a Sink executor writing the sink's log
// store; its sink.Worker, which drains the log into the target, lives in
// sinkWorkers for as long as the sink exists, across recoveries.

// Options a sink relation stores next to its WITH options.
const (
	sinkOptFormat = "_format"
	sinkOptEncode = "_encode"
	sinkOptFrom   = "_from" // CREATE SINK ... FROM this relation
	sinkEncodeOpt = "_encode."
)

// sinkWorkers holds the worker of every sink.
type sinkWorkers struct {
	mu sync.Mutex
	m  map[catalog.ObjectID]*sink.Worker
}

func (w *sinkWorkers) get(id catalog.ObjectID) *sink.Worker {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[id]
}

// sinkOpenTimeout bounds CREATE SINK's check that the target is reachable
// and fits the sink.
const sinkOpenTimeout = 15 * time.Second

// sinkConfig builds a sink's connector config from its relation.
func sinkConfig(s *Server, rel *catalog.Relation) (*sink.Config, *sink.Spec, error) {
	spec, err := sink.ParseSpec(rel.Name, rel.Options)
	if err != nil {
		return nil, nil, err
	}
	cfg := &sink.Config{Name: rel.Name, ID: uint64(rel.ID), Type: spec.Type, Options: map[string]string{},
		Format: rel.Options[sinkOptFormat], Encode: rel.Options[sinkOptEncode], EncodeOptions: map[string]string{}}
	for k, v := range rel.Options {
		switch {
		case strings.HasPrefix(k, sinkEncodeOpt):
			cfg.EncodeOptions[strings.TrimPrefix(k, sinkEncodeOpt)] = v
		case !strings.HasPrefix(k, "_"):
			cfg.Options[k] = v
		}
	}
	cfg.Name = sinkQualifiedName(s.catalog, rel)
	for _, i := range rel.VisibleColumns() {
		cfg.Columns = append(cfg.Columns, sink.Column{Name: rel.Columns[i].Name, Type: rel.Columns[i].Type})
	}
	for _, k := range spec.Key {
		idx := slices.IndexFunc(cfg.Columns, func(c sink.Column) bool { return c.Name == k })
		if idx < 0 {
			return nil, nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "sink %q: primary_key column %q is not a column of the sink's query", rel.Name, k)
		}
		cfg.Key = append(cfg.Key, idx)
	}
	return cfg, spec, nil
}

// sinkQualifiedName is database.schema.name: the key of the sink's progress
// row in an exactly-once target.
func sinkQualifiedName(cat *catalog.Catalog, rel *catalog.Relation) string {
	name := rel.Name
	for _, sc := range cat.Schemas(rel.DatabaseID) {
		if sc.ID == rel.SchemaID {
			name = sc.Name + "." + name
		}
	}
	for _, d := range cat.Databases() {
		if d.ID == rel.DatabaseID {
			name = d.Name + "." + name
		}
	}
	return name
}

// newSinkTarget opens a sink's connector (options checked, not connected).
func newSinkTarget(cfg *sink.Config, spec *sink.Spec) (sink.Target, error) {
	c, _ := sink.Lookup(spec.Connector)
	if c.NeedsFormat && cfg.Format == "" {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: connector %s needs FORMAT ... ENCODE ...", cfg.Name, spec.Connector)
	}
	return c.New(cfg)
}

// planSink binds a sink's query (as a view definition would be) and plans
// it into a stream plan ending in a Sink.
func (s *Server) planSink(ss *session, name, query string, spec *sink.Spec) (*streamplan.Node, *binder.CreateView, error) {
	st, err := parser.ParseOne("CREATE MATERIALIZED VIEW " + quoteIdent(name) + " AS " + query)
	if err != nil {
		return nil, nil, err
	}
	p, err := sql.Prepare(&sessionCatalog{ss: ss}, st, nil)
	if err != nil {
		return nil, nil, err
	}
	cv, ok := p.Bound.(*binder.CreateView)
	if !ok {
		return nil, nil, fmt.Errorf("sink %s: its query is not a query", name)
	}
	// The target key, as positions in the query's output.
	var key []int
	for _, k := range spec.Key {
		idx := slices.IndexFunc(cv.Columns, func(c plan.Column) bool { return c.Name == k })
		if idx < 0 {
			return nil, nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "sink %q: primary_key column %q is not a column of the sink's query", name, k)
		}
		key = append(key, idx)
	}
	root, err := streamplan.BuildSink(cv.Plan, streamplan.SinkSpec{Key: key, AppendOnly: spec.Type == sink.TypeAppendOnly})
	if err != nil {
		return nil, nil, err
	}
	return root, cv, nil
}

// createSink runs CREATE SINK: check the options and the target, plan the
// query, register the log store and the job's state tables, start the
// worker and the job (which backfills from its upstreams like a new view),
// and publish the sink once its backfill's last epoch is committed.
func (ss *session) createSink(ctx context.Context, cs *parser.CreateSink) (pgwire.Result, error) {
	s := ss.s
	const tag = "CREATE_SINK"
	sc, err := ss.resolveSchema(cs.Schema)
	if err != nil {
		return pgwire.Result{}, err
	}
	if old, _ := s.catalog.RelationByName(sc.ID, cs.Name); old != nil {
		if cs.IfNotExists {
			ss.client.Notice(pgwire.Notice{Code: sqlerr.DuplicateTable, Message: fmt.Sprintf("relation %q already exists, skipping", cs.Name)})
			return pgwire.Result{Tag: tag}, nil
		}
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateTable, "relation %q already exists", cs.Name)
	}
	opts := map[string]string{}
	for k, v := range cs.Options {
		opts[k] = v
	}
	// RisingWave also takes force_append_only as an ENCODE option
	// (FORMAT PLAIN ENCODE PARQUET (force_append_only = 'true')).
	if v, ok := cs.EncodeOptions["force_append_only"]; ok && opts["force_append_only"] == "" {
		opts["force_append_only"] = v
	}
	spec, err := sink.ParseSpec(cs.Name, opts)
	if err != nil {
		return pgwire.Result{}, err
	}
	query := cs.Query
	if cs.From != "" {
		from, err := (&sessionCatalog{ss: ss}).ResolveRelation(cs.FromSchema, cs.From)
		if err != nil {
			return pgwire.Result{}, err
		}
		if from.Kind != catalog.KindTable && from.Kind != catalog.KindMaterializedView && from.Kind != catalog.KindSource {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.WrongObjectType, "cannot create sink %q from %s %q: only a table, materialized view or source", cs.Name, from.Kind, from.Name)
		}
		qualified, _ := createStatement(s.catalog, from)
		query = "SELECT * FROM " + qualified
		opts[sinkOptFrom] = qualified
	}
	if cs.Format != "" {
		opts[sinkOptFormat], opts[sinkOptEncode] = cs.Format, cs.Encode
		for k, v := range cs.EncodeOptions {
			opts[sinkEncodeOpt+k] = v
		}
	}
	root, cv, err := s.planSink(ss, cs.Name, query, spec)
	if err != nil {
		return pgwire.Result{}, err
	}
	if spec.Type == sink.TypeAppendOnly && !spec.ForceAppendOnly && !streamplan.InsertOnly(root) {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidParameterValue,
			"sink %q cannot be append-only: its query is not append-only (it can update and delete rows)", cs.Name).
			WithHint("Add force_append_only = 'true' to the WITH options to force it: the sink then drops deletes and turns updates into inserts; or use type = 'upsert' with a primary_key.")
	}
	rel := &catalog.Relation{DatabaseID: ss.db.ID, SchemaID: sc.ID, Name: cs.Name, Owner: ss.user.Name, Kind: catalog.KindSink,
		Definition: query, DependsOn: cv.DependsOn, Options: opts, AppendOnly: spec.Type == sink.TypeAppendOnly}
	rel.Columns = jobColumns(root, cv.Columns)
	cfg, _, err := sinkConfig(s, rel)
	if err != nil {
		return pgwire.Result{}, err
	}
	target, err := newSinkTarget(cfg, spec)
	if err != nil {
		return pgwire.Result{}, err
	}
	// Like RisingWave, CREATE SINK checks that the target is there and
	// fits (a typo in a URL or a table name fails now, not later).
	octx, cancel := context.WithTimeout(ctx, sinkOpenTimeout)
	_, err = target.Open(octx)
	cancel()
	target.Close()
	if err != nil {
		if sqlerr.From(err) == nil {
			err = sqlerr.Errorf(sqlerr.ConnectionException, "%v", err)
		}
		return pgwire.Result{}, err
	}
	if err := s.createSinkJob(ctx, rel, root); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: tag}, nil
}

// createSinkJob registers the sink's state tables (log store first, in
// plan order) and catalog entry, starts its worker and actors, waits for
// the backfill, and publishes it.
func (s *Server) createSinkJob(ctx context.Context, rel *catalog.Relation, root *streamplan.Node) error {
	if err := s.createJobState(ctx, rel, root, "sink "+rel.Name, nil); err != nil {
		return err
	}
	fail := func(err error) error {
		if derr := s.dropView(context.Background(), rel); derr != nil {
			s.log.Error("drop sink whose creation failed", "sink", rel.Name, "err", derr)
		}
		return err
	}
	interrupted := func() error {
		return fail(sqlerr.Errorf(sqlerr.ObjectNotInPrerequisiteState, "creation of sink %q was interrupted by a recovery; it was dropped, run CREATE again", rel.Name))
	}
	w, err := s.startSinkWorker(rel, root)
	if err != nil {
		return fail(err)
	}
	vj, err := s.startView(ctx, rel, root, func(env *streamplan.Env) { env.Name, env.SinkLog = "sink "+rel.Name, w })
	if err != nil {
		return fail(err)
	}
	for _, bf := range vj.backfills {
		select {
		case <-bf.Done():
		case <-vj.replaced:
			return interrupted()
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	if err := s.epochs.Flush(ctx); err != nil {
		return fail(err)
	}
	return s.publishJob(ctx, rel, vj, interrupted)
}

// startSinkWorker creates and starts the worker of a sink (planned, state
// tables assigned) unless it runs already.
func (s *Server) startSinkWorker(rel *catalog.Relation, root *streamplan.Node) (*sink.Worker, error) {
	s.sinks.mu.Lock()
	defer s.sinks.mu.Unlock()
	if w := s.sinks.m[rel.ID]; w != nil {
		return w, nil
	}
	cfg, spec, err := sinkConfig(s, rel)
	if err != nil {
		return nil, err
	}
	target, err := newSinkTarget(cfg, spec)
	if err != nil {
		return nil, err
	}
	w := sink.NewWorker(sink.WorkerConfig{
		Name:           rel.Name,
		Store:          s.store,
		LogTable:       storage.TableID(rel.StateTables[0]),
		LogSchema:      exec.SinkLogSchema("sink "+rel.Name+" log store", root.Types()),
		Columns:        rel.VisibleColumns(),
		Committed:      s.store.CommittedEpoch,
		Target:         target,
		MaxPendingRows: spec.MaxPendingRows,
		Log:            s.log,
	})
	if s.sinks.m == nil {
		s.sinks.m = map[catalog.ObjectID]*sink.Worker{}
	}
	s.sinks.m[rel.ID] = w
	w.Start()
	return w, nil
}

// stopSinkWorker stops a sink's worker and waits for it (I3: before the
// log store is unregistered).
func (s *Server) stopSinkWorker(id catalog.ObjectID) {
	s.sinks.mu.Lock()
	w := s.sinks.m[id]
	delete(s.sinks.m, id)
	s.sinks.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}

// stopSinkWorkers stops every worker (server shutdown).
func (s *Server) stopSinkWorkers() {
	s.sinks.mu.Lock()
	ids := make([]catalog.ObjectID, 0, len(s.sinks.m))
	for id := range s.sinks.m {
		ids = append(ids, id)
	}
	s.sinks.mu.Unlock()
	for _, id := range ids {
		s.stopSinkWorker(id)
	}
}

// rebuildSink recreates a sink's actors after recovery (like rebuildView)
// and tells its worker, starting it if this process has none yet.
func (s *Server) rebuildSink(ctx context.Context, rel *catalog.Relation, curr uint64) (*streamplan.Job, error) {
	ss := s.internalSession(rel)
	spec, err := sink.ParseSpec(rel.Name, rel.Options)
	if err != nil {
		return nil, fmt.Errorf("rebuild sink %s: %w", rel.Name, err)
	}
	root, _, err := s.planSink(ss, rel.Name, rel.Definition, spec)
	if err != nil {
		return nil, fmt.Errorf("rebuild sink %s: %w", rel.Name, err)
	}
	w, err := s.startSinkWorker(rel, root)
	if err != nil {
		return nil, fmt.Errorf("rebuild sink %s: %w", rel.Name, err)
	}
	env := s.viewEnv(rel, false, curr)
	env.Name, env.SinkLog = "sink "+rel.Name, w
	job, err := s.rebuildJob(rel, root, "sink "+rel.Name, env)
	if err != nil {
		return nil, err
	}
	// The recovery may have lost the epoch carrying truncations.
	w.Rebuilt()
	return job, nil
}

// dropSinkStmt runs DROP SINK [IF EXISTS] name.
func (ss *session) dropSinkStmt(ctx context.Context, d *parser.DropSink) (pgwire.Result, error) {
	const tag = "DROP_SINK"
	rel, err := (&sessionCatalog{ss: ss}).ResolveRelation(d.Schema, d.Name)
	if err != nil || rel == nil {
		if d.IfExists {
			ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("sink %q does not exist, skipping", d.Name)})
			return pgwire.Result{Tag: tag}, nil
		}
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedObject, "sink %q does not exist", d.Name)
	}
	if rel.Kind != catalog.KindSink {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.WrongObjectType, "%q is not a sink", d.Name).
			WithHint("Use DROP %s to remove a %s.", strings.ToUpper(rel.Kind.String()), rel.Kind)
	}
	if !ss.user.Superuser && rel.Owner != ss.user.Name {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.InsufficientPrivilege, "must be owner of sink %s", rel.Name)
	}
	if err := ss.s.dropView(ctx, rel); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: tag}, nil
}

// createSinkText writes CREATE SINK for rel (SHOW CREATE SINK, rw_sinks).
func createSinkText(rel *catalog.Relation, qualified string) string {
	var b strings.Builder
	b.WriteString("CREATE SINK " + qualified)
	if from := rel.Options[sinkOptFrom]; from != "" {
		b.WriteString(" FROM " + from)
	} else {
		b.WriteString(" AS " + rel.Definition)
	}
	var keys, enc []string
	for k := range rel.Options {
		switch {
		case strings.HasPrefix(k, sinkEncodeOpt):
			enc = append(enc, k)
		case !strings.HasPrefix(k, "_"):
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	sort.Strings(enc)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = optionText(k, rel.Options[k])
	}
	b.WriteString(" WITH (" + strings.Join(parts, ", ") + ")")
	if f := rel.Options[sinkOptFormat]; f != "" {
		b.WriteString(" FORMAT " + f + " ENCODE " + rel.Options[sinkOptEncode])
		if len(enc) > 0 {
			parts := make([]string, len(enc))
			for i, k := range enc {
				parts[i] = optionText(strings.TrimPrefix(k, sinkEncodeOpt), rel.Options[k])
			}
			b.WriteString(" (" + strings.Join(parts, ", ") + ")")
		}
	}
	return b.String()
}

// sinkRows lists the session database's sinks for rw_catalog.rw_sinks:
// RisingWave's columns, then the log store's backlog and delivery state.
func sinkRows(sc *sysCtx) [][]any {
	var out [][]any
	rels := sc.cat.Relations(func(r *catalog.Relation) bool {
		return r.DatabaseID == sc.db.ID && r.Kind == catalog.KindSink && !r.Creating
	})
	sort.Slice(rels, func(i, j int) bool { return rels[i].ID < rels[j].ID })
	for _, r := range rels {
		qualified := ident.Quote(r.Name)
		for _, s := range sc.cat.Schemas(r.DatabaseID) {
			if s.ID == r.SchemaID {
				qualified = ident.Quote(s.Name) + "." + qualified
			}
		}
		st, status := sc.ss.s.sinkStatus(r.ID)
		var lastErr any
		if st.LastError != "" {
			lastErr = st.LastError
		}
		out = append(out, []any{int64(r.ID), r.Name, int64(r.SchemaID), r.Owner, r.Options["connector"], r.Options["type"],
			createSinkText(r, qualified), r.AppendOnly, status, st.PendingRows, int64(st.PendingEpochs), int64(st.Delivered),
			st.DeliveredRows, lastErr})
	}
	return out
}

// sinkStatus is a sink's worker progress and "running", "retrying" (its
// last delivery failed) or "stopped" (no worker).
func (s *Server) sinkStatus(id catalog.ObjectID) (sink.Status, string) {
	w := s.sinks.get(id)
	if w == nil {
		return sink.Status{}, "stopped"
	}
	st := w.Status()
	if st.LastError != "" {
		return st, "retrying"
	}
	return st, "running"
}
