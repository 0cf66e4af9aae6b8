package frontend

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
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
	var into *catalog.Relation
	if cs.Into != "" {
		if into, err = ss.sinkIntoTarget(cs, opts); err != nil {
			return pgwire.Result{}, err
		}
	} else if strings.HasPrefix(opts["connector"], "_") {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "sink %q: unknown connector %q (supported: %s)", cs.Name, opts["connector"], strings.Join(sink.Connectors(), ", "))
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
	if into != nil {
		if query, err = ss.sinkIntoQuery(cs, into, query); err != nil {
			return pgwire.Result{}, err
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
	deps := cv.DependsOn
	if into != nil {
		// The sink must not feed its own input (every write would come
		// round again); the table cannot be dropped while it is written
		// (DROP TABLE ... CASCADE drops the sink).
		if err := s.checkNoCycle(into, deps); err != nil {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.InvalidObjectDefinition, "sink %q cannot write into table %q: its query reads that table, so every write would come back to it", cs.Name, into.Name)
		}
		deps = append(slices.Clone(deps), into.ID)
	}
	rel := &catalog.Relation{DatabaseID: ss.db.ID, SchemaID: sc.ID, Name: cs.Name, Owner: ss.user.Name, Kind: catalog.KindSink,
		Definition: query, DependsOn: deps, Functions: cv.Functions, Options: opts, AppendOnly: spec.Type == sink.TypeAppendOnly}
	if err := s.meta.CreateSink(ctx, rel, root, cv.Columns, spec); err != nil {
		return pgwire.Result{}, err
	}
	for _, k := range sink.UnknownOptions(opts) {
		ss.client.Notice(pgwire.Notice{Severity: "WARNING", Message: fmt.Sprintf("WITH option %q is not used by the %s sink connector; it is ignored", k, opts["connector"])})
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
	if into := rel.Options[sink.OptIntoName]; into != "" {
		// The stored query already maps its columns onto the table's.
		b.WriteString(" INTO " + into + " AS " + rel.Definition)
	} else if from := rel.Options[sink.OptFrom]; from != "" {
		b.WriteString(" FROM " + from)
	} else {
		b.WriteString(" AS " + rel.Definition)
	}
	var keys, enc []string
	for k := range rel.Options {
		switch {
		case strings.HasPrefix(k, sink.OptEncodePrefix):
			enc = append(enc, k)
		case !strings.HasPrefix(k, "_") && !(k == "connector" && rel.Options[k] == sink.ConnectorTable):
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	sort.Strings(enc)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = optionText(k, rel.Options[k])
	}
	if len(parts) > 0 {
		b.WriteString(" WITH (" + strings.Join(parts, ", ") + ")")
	}
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

// sinkIntoTarget resolves the table of CREATE SINK ... INTO (RisingWave's
// sink into a table) and sets the options that make the meta node deliver
// each committed epoch into it as DML: the table's primary key is the
// sink's (an upsert sink: a delete upstream deletes the row by key); a
// table without one takes an append-only sink (inserts only).
func (ss *session) sinkIntoTarget(cs *parser.CreateSink, opts map[string]string) (*catalog.Relation, error) {
	if c := opts["connector"]; c != "" {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: CREATE SINK ... INTO a table takes no connector (it writes into the table), but connector = %q was given", cs.Name, c)
	}
	if cs.Format != "" {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: CREATE SINK ... INTO a table takes no FORMAT ... ENCODE ...", cs.Name)
	}
	t, err := (&sessionCatalog{ss: ss}).ResolveRelation(cs.IntoSchema, cs.Into)
	if err != nil || t == nil {
		return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "table %q does not exist", cs.Into)
	}
	if t.Kind != catalog.KindTable {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "cannot create sink %q into %s %q: only a table can be written", cs.Name, t.Kind, t.Name)
	}
	if !ss.user.Superuser && t.Owner != ss.user.Name {
		return nil, sqlerr.Errorf(sqlerr.InsufficientPrivilege, "permission denied for table %s", t.Name)
	}
	var pk []string
	for _, k := range t.PK {
		if t.Columns[k].Hidden {
			pk = nil // the hidden _row_id: no key a sink can name
			break
		}
		pk = append(pk, t.Columns[k].Name)
	}
	switch strings.ToLower(opts["type"]) {
	case "":
		opts["type"] = sink.TypeAppendOnly
		if pk != nil {
			opts["type"] = sink.TypeUpsert
		}
	case sink.TypeUpsert:
		if pk == nil {
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: an upsert sink into table %q needs the table to have a primary key", cs.Name, t.Name)
		}
	}
	if pk != nil {
		if given := opts["primary_key"]; given != "" && !strings.EqualFold(strings.ReplaceAll(given, " ", ""), strings.Join(pk, ",")) {
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: primary_key %q differs from table %q's primary key (%s): a sink into a table writes by the table's key", cs.Name, given, t.Name, strings.Join(pk, ", "))
		}
		if opts["type"] == sink.TypeUpsert {
			opts["primary_key"] = strings.Join(quoteAll(pk), ", ")
		}
	}
	qualified, _ := createStatement(ss.s.catalog, t)
	opts["connector"] = sink.ConnectorTable
	opts[sink.OptInto] = strconv.FormatUint(uint64(t.ID), 10)
	opts[sink.OptIntoName] = qualified
	return t, nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoteIdent(n)
	}
	return out
}

// sinkIntoQuery wraps a sink's query so that it yields exactly the
// target table's visible columns, in order and of their types: the
// query's columns go to the listed columns (or to the table's first
// ones, in order), cast as INSERT would; the others take their DEFAULT,
// or NULL.
func (ss *session) sinkIntoQuery(cs *parser.CreateSink, t *catalog.Relation, query string) (string, error) {
	// Bound as a plain query: its column names do not matter (they are
	// replaced by position below), so duplicates are fine.
	st, err := parser.ParseOne(query)
	if err != nil {
		return "", err
	}
	p, err := sql.Prepare(&sessionCatalog{ss: ss}, st, nil)
	if err != nil {
		return "", err
	}
	if p.Kind != sql.KindQuery {
		return "", sqlerr.Errorf(sqlerr.SyntaxError, "sink %q: its query is not a query", cs.Name)
	}
	cv := p // cv.Columns: the query's result columns
	visible := t.VisibleColumns()
	targets := cs.IntoColumns
	if targets == nil {
		if len(cv.Columns) > len(visible) {
			return "", sqlerr.Errorf(sqlerr.SyntaxError, "sink %q has more columns (%d) than table %q (%d)", cs.Name, len(cv.Columns), t.Name, len(visible))
		}
		for _, i := range visible[:len(cv.Columns)] {
			targets = append(targets, t.Columns[i].Name)
		}
	}
	if len(targets) != len(cv.Columns) {
		return "", sqlerr.Errorf(sqlerr.SyntaxError, "sink %q has %d columns but %d target columns of table %q are listed", cs.Name, len(cv.Columns), len(targets), t.Name)
	}
	from := map[string]int{}
	for i, name := range targets {
		idx := t.ColumnIndex(name)
		if idx < 0 || t.Columns[idx].Hidden {
			return "", sqlerr.Errorf(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", name, t.Name)
		}
		if _, dup := from[name]; dup {
			return "", sqlerr.Errorf(sqlerr.DuplicateColumn, "column %q specified more than once", name)
		}
		from[name] = i
	}
	const src = "_rw_sink_src"
	aliases := make([]string, len(cv.Columns))
	for i := range aliases {
		aliases[i] = fmt.Sprintf("_c%d", i+1)
	}
	sel := make([]string, 0, len(visible))
	for _, i := range visible {
		c := t.Columns[i]
		val := "NULL"
		if k, ok := from[c.Name]; ok {
			val = src + "." + aliases[k]
		} else if c.Default != "" {
			val = "(" + c.Default + ")"
		}
		sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %s", val, c.Type.Name(), quoteIdent(c.Name)))
	}
	return fmt.Sprintf("SELECT %s FROM (%s) AS %s(%s)", strings.Join(sel, ", "), query, src, strings.Join(aliases, ", ")), nil
}
