package frontend

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

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
	"github.com/runneldb/runnel/internal/streamplan"
)

// planSink binds a sink's query (as a view definition would be) and plans
// it into a stream plan ending in a Sink.
func (s *Frontend) planSink(ss *session, name, query string, spec *sink.Spec) (*streamplan.Node, *binder.CreateView, error) {
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
	if opts["type"] == "" {
		// RisingWave takes the sink's type from FORMAT when WITH has no
		// type: PLAIN is append-only, UPSERT and DEBEZIUM upsert. A
		// blackhole sink discards every change; it needs neither.
		switch {
		case cs.Format == "PLAIN":
			opts["type"] = sink.TypeAppendOnly
		case cs.Format == "UPSERT" || cs.Format == "DEBEZIUM":
			opts["type"] = sink.TypeUpsert
		case cs.Format == "" && strings.EqualFold(opts["connector"], "blackhole"):
			opts["type"], opts["force_append_only"] = sink.TypeAppendOnly, "true"
		}
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
		opts[sink.OptFrom] = qualified
	}
	if cs.Format != "" {
		opts[sink.OptFormat], opts[sink.OptEncode] = cs.Format, cs.Encode
		for k, v := range cs.EncodeOptions {
			opts[sink.OptEncodePrefix+k] = v
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
		Definition: query, DependsOn: cv.DependsOn, Functions: cv.Functions, Options: opts, AppendOnly: spec.Type == sink.TypeAppendOnly}
	if err := s.meta.CreateSink(ctx, rel, root, cv.Columns, spec); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: tag}, nil
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
	if err := ss.s.meta.DropSink(ctx, rel); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: tag}, nil
}

// createSinkText writes CREATE SINK for rel (SHOW CREATE SINK, rw_sinks).
func createSinkText(rel *catalog.Relation, qualified string) string {
	var b strings.Builder
	b.WriteString("CREATE SINK " + qualified)
	if from := rel.Options[sink.OptFrom]; from != "" {
		b.WriteString(" FROM " + from)
	} else {
		b.WriteString(" AS " + rel.Definition)
	}
	var keys, enc []string
	for k := range rel.Options {
		switch {
		case strings.HasPrefix(k, sink.OptEncodePrefix):
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
	if f := rel.Options[sink.OptFormat]; f != "" {
		b.WriteString(" FORMAT " + f + " ENCODE " + rel.Options[sink.OptEncode])
		if len(enc) > 0 {
			parts := make([]string, len(enc))
			for i, k := range enc {
				parts[i] = optionText(strings.TrimPrefix(k, sink.OptEncodePrefix), rel.Options[k])
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
		st, status := sc.ss.s.meta.SinkStatus(r.ID)
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
