package frontend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/ident"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/streamplan"
	"github.com/runneldb/runnel/internal/types"
)

// createIndex runs CREATE INDEX: a streaming job, like a materialized
// view over the base relation with another key (streamplan.BuildIndex),
// created, backfilled, published, rebuilt and dropped by the same
// machinery (metasrv: I3 on drop, I7 once published).
func (ss *session) createIndex(ctx context.Context, ci *binder.CreateIndex) (pgwire.Result, error) {
	s := ss.s
	base := ci.On
	name := ci.Name
	if name == "" {
		name = s.defaultIndexName(base, ci.Spec.Columns)
	}
	// An index lives in its table's schema and shares the relations'
	// namespace (PostgreSQL: 42P07).
	if _, err := s.catalog.RelationByName(base.SchemaID, name); err == nil {
		if ci.IfNotExists {
			ss.client.Notice(pgwire.Notice{Code: sqlerr.DuplicateTable, Message: fmt.Sprintf("relation %q already exists, skipping", name)})
			return pgwire.Result{Tag: "CREATE INDEX"}, nil
		}
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.DuplicateTable, "relation %q already exists", name)
	}
	spec := ci.Spec
	cols, nKey, err := streamplan.IndexColumns(base, &spec)
	if err != nil {
		return pgwire.Result{}, err
	}
	rel := &catalog.Relation{DatabaseID: base.DatabaseID, SchemaID: base.SchemaID, Name: name, Kind: catalog.KindIndex,
		Owner: ss.user.Name, DependsOn: []catalog.ObjectID{base.ID}, Index: &spec}
	names := make([]string, len(cols))
	for i, c := range cols {
		bc := base.Columns[c]
		names[i] = bc.Name
		rel.Columns = append(rel.Columns, catalog.Column{Name: bc.Name, Type: bc.Type, NotNull: bc.NotNull, Hidden: bc.Hidden})
	}
	root, err := streamplan.BuildIndex(base, names, nKey, spec.Desc)
	if err != nil {
		return pgwire.Result{}, err
	}
	_, rel.Definition = indexText(s.catalog, rel)
	if err := s.meta.CreateMaterializedView(ctx, rel, root, nil); err != nil {
		return pgwire.Result{}, err
	}
	return pgwire.Result{Tag: "CREATE INDEX"}, nil
}

// defaultIndexName is PostgreSQL's name for an unnamed index: table,
// columns and "idx" joined by underscores, numbered when taken.
func (s *Frontend) defaultIndexName(base *catalog.Relation, cols []string) string {
	stem := base.Name + "_" + strings.Join(cols, "_") + "_idx"
	name := stem
	for i := 1; ; i++ {
		if _, err := s.catalog.RelationByName(base.SchemaID, name); err != nil {
			return name
		}
		name = fmt.Sprintf("%s%d", stem, i)
	}
}

// planIndex re-plans an index's job from its catalog entry (rebuild after
// recovery): the stored column list and key, over its base as it is now.
func (s *Frontend) planIndex(rel *catalog.Relation) (*streamplan.Node, error) {
	if rel.Index == nil {
		return nil, fmt.Errorf("index %s has no index description", rel.Name)
	}
	base, ok := s.catalog.Relation(rel.Index.On)
	if !ok {
		return nil, fmt.Errorf("index %s: its %s (relation %d) does not exist", rel.Name, "base relation", rel.Index.On)
	}
	names := make([]string, len(rel.Columns))
	for i, c := range rel.Columns {
		names[i] = c.Name
	}
	return streamplan.BuildIndex(base, names, len(rel.PK), rel.Index.Desc)
}

// indexText is an index's qualified name and CREATE INDEX statement (SHOW
// CREATE INDEX, pg_indexes.indexdef, SHOW JOBS), naming its base as it is
// named now.
func indexText(cat CatalogReader, rel *catalog.Relation) (qualified, text string) {
	schema := ""
	for _, sc := range cat.Schemas(rel.DatabaseID) {
		if sc.ID == rel.SchemaID {
			schema = ident.Quote(sc.Name) + "."
		}
	}
	qualified = schema + ident.Quote(rel.Name)
	on := "?"
	if base, ok := cat.Relation(rel.Index.On); ok {
		on = schema + ident.Quote(base.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE INDEX %s ON %s (", ident.Quote(rel.Name), on)
	for i, c := range rel.Index.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ident.Quote(c))
		if i < len(rel.Index.Desc) && rel.Index.Desc[i] {
			b.WriteString(" DESC")
		}
	}
	b.WriteString(")")
	if !rel.Index.IncludeAll && len(rel.Index.Include) > 0 {
		parts := make([]string, len(rel.Index.Include))
		for i, c := range rel.Index.Include {
			parts[i] = ident.Quote(c)
		}
		b.WriteString(" INCLUDE (" + strings.Join(parts, ", ") + ")")
	}
	return qualified, b.String()
}

// indexesOf lists the indexes of a relation that queries may read (not
// being created, not failed), oldest first.
func (s *Frontend) indexesOf(id catalog.ObjectID) []*catalog.Relation {
	return s.catalog.Relations(func(r *catalog.Relation) bool {
		return r.Kind == catalog.KindIndex && !r.Creating && r.Index != nil && r.Index.On == id && s.meta.JobFailure(r.ID) == nil
	})
}

// showIndexesColumns are SHOW INDEXES's (RisingWave's, without arrays).
var showIndexesColumns = []pgwire.Column{{Name: "Name", Type: types.Varchar}, {Name: "On", Type: types.Varchar},
	{Name: "Key", Type: types.Varchar}, {Name: "Include", Type: types.Varchar}, {Name: "Distributed By", Type: types.Varchar}}

// showIndexes answers SHOW INDEXES FROM rel: one row per index, with its
// key (declared columns, then the base key's other columns), its
// included columns and its distribution key.
func (st *statement) showIndexes(r *parser.ShowIndexes) (pgwire.Result, error) {
	base, err := (&sessionCatalog{ss: st.sess}).ResolveRelation(r.Schema, r.Name)
	if err != nil {
		return pgwire.Result{}, err
	}
	var rows []types.Row
	for _, x := range st.sess.s.catalog.Relations(func(x *catalog.Relation) bool {
		return x.Kind == catalog.KindIndex && !x.Creating && x.Index != nil && x.Index.On == base.ID
	}) {
		var key, include, dist []string
		for i, k := range x.PK {
			c := ident.Quote(x.Columns[k].Name)
			if i < len(x.Index.Desc) && x.Index.Desc[i] {
				c += " DESC"
			}
			key = append(key, c)
		}
		for i, c := range x.Columns {
			if !slices.Contains(x.PK, i) {
				include = append(include, ident.Quote(c.Name))
			}
		}
		for _, k := range x.DistKey {
			dist = append(dist, ident.Quote(x.Columns[k].Name))
		}
		rows = append(rows, types.Row{types.DVarchar(x.Name), types.DVarchar(base.Name), types.DVarchar(strings.Join(key, ", ")),
			types.DVarchar(strings.Join(include, ", ")), types.DVarchar(strings.Join(dist, ", "))})
	}
	return pgwire.Result{Tag: "SHOW", Columns: showIndexesColumns, Rows: pgwire.SliceRows(rows)}, nil
}

// Indexes lists the indexes a query on rel may read (binder.IndexCatalog).
func (c *sessionCatalog) Indexes(rel *catalog.Relation) []*catalog.Relation {
	return c.ss.s.indexesOf(rel.ID)
}
