package frontend

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/ident"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// describeColumns are the columns of DESCRIBE and SHOW COLUMNS, as
// RisingWave names them.
var describeColumns = []pgwire.Column{
	{Name: "Name", Type: types.Varchar}, {Name: "Type", Type: types.Varchar},
	{Name: "Is Hidden", Type: types.Varchar}, {Name: "Description", Type: types.Varchar},
}

// showCreateColumns are the columns of SHOW CREATE.
var showCreateColumns = []pgwire.Column{{Name: "Name", Type: types.Varchar}, {Name: "Create Sql", Type: types.Varchar}}

// describe answers DESCRIBE name (keys too) and SHOW COLUMNS FROM name:
// one row per column, hidden ones included and marked, then, for
// DESCRIBE, the primary and distribution keys.
func (st *statement) describe(schema, name string, keys bool) (pgwire.Result, error) {
	rel, err := (&sessionCatalog{ss: st.sess}).ResolveRelation(schema, name)
	if err != nil {
		return pgwire.Result{}, err
	}
	var rows []types.Row
	for _, c := range rel.Columns {
		rows = append(rows, types.Row{types.DVarchar(c.Name), types.DVarchar(c.Type.Name()),
			types.DVarchar(fmt.Sprint(c.Hidden)), types.NullDatum})
	}
	if keys {
		names := func(idx []int) string {
			out := make([]string, len(idx))
			for i, c := range idx {
				out[i] = rel.Columns[c].Name
			}
			return strings.Join(out, ", ")
		}
		if len(rel.PK) > 0 {
			rows = append(rows, types.Row{types.DVarchar("primary key"), types.DVarchar(names(rel.PK)), types.NullDatum, types.NullDatum})
		}
		if len(rel.DistKey) > 0 {
			rows = append(rows, types.Row{types.DVarchar("distribution key"), types.DVarchar(names(rel.DistKey)), types.NullDatum, types.NullDatum})
		}
	}
	return pgwire.Result{Tag: fmt.Sprintf("SELECT %d", len(rows)), Columns: describeColumns, Rows: pgwire.SliceRows(rows)}, nil
}

// showCreate answers SHOW CREATE TABLE | MATERIALIZED VIEW | VIEW | SOURCE
// name: the object's qualified name and a statement that creates it again.
// Views and materialized views print their stored definition; tables and
// sources are written out from the catalog (columns, keys, watermark,
// options), so the text is equivalent to, not a copy of, what was typed.
func (st *statement) showCreate(r *parser.ShowCreate) (pgwire.Result, error) {
	rel, err := (&sessionCatalog{ss: st.sess}).ResolveRelation(r.Schema, r.Name)
	if err != nil {
		return pgwire.Result{}, err
	}
	want, what := map[parser.ObjectKind]catalog.RelationKind{
		parser.ShowTables:            catalog.KindTable,
		parser.ShowMaterializedViews: catalog.KindMaterializedView,
		parser.ShowViews:             catalog.KindView,
		parser.ShowSources:           catalog.KindSource,
		parser.ShowSinks:             catalog.KindSink,
		parser.ShowIndex:             catalog.KindIndex,
	}[r.Kind], map[parser.ObjectKind]string{
		parser.ShowTables:            "a table",
		parser.ShowMaterializedViews: "a materialized view",
		parser.ShowViews:             "a view",
		parser.ShowSources:           "a source",
		parser.ShowSinks:             "a sink",
		parser.ShowIndex:             "an index",
	}[r.Kind]
	if rel.Kind != want {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.WrongObjectType, "%q is not %s", rel.Name, what)
	}
	qualified, text := createStatement(st.sess.s.catalog, rel)
	rows := []types.Row{{types.DVarchar(qualified), types.DVarchar(text)}}
	return pgwire.Result{Tag: "SELECT 1", Columns: showCreateColumns, Rows: pgwire.SliceRows(rows)}, nil
}

// createStatement returns rel's schema-qualified name and a statement that
// creates it (SHOW CREATE, the definition column of rw_catalog's tables).
func createStatement(cat CatalogReader, rel *catalog.Relation) (qualified, text string) {
	qualified = ident.Quote(rel.Name)
	for _, sc := range cat.Schemas(rel.DatabaseID) {
		if sc.ID == rel.SchemaID {
			qualified = ident.Quote(sc.Name) + "." + qualified
		}
	}
	switch rel.Kind {
	case catalog.KindMaterializedView:
		return qualified, createViewText(qualified, rel)
	case catalog.KindView:
		return qualified, "CREATE VIEW " + qualified + " AS " + rel.Definition
	case catalog.KindSink:
		return qualified, createSinkText(rel, qualified)
	case catalog.KindIndex:
		return indexText(cat, rel) // index.go
	}
	return qualified, createTableText(rel, qualified)
}

// createTableText writes CREATE TABLE / CREATE SOURCE for rel.
func createTableText(rel *catalog.Relation, qualified string) string {
	var b strings.Builder
	if rel.Kind == catalog.KindSource {
		b.WriteString("CREATE SOURCE ")
	} else {
		b.WriteString("CREATE TABLE ")
	}
	b.WriteString(qualified + " (")
	var parts []string
	hiddenKey := false
	for _, i := range rel.PK {
		hiddenKey = hiddenKey || rel.Columns[i].Hidden
	}
	for i, c := range rel.Columns {
		if c.Hidden {
			continue
		}
		part := ident.Quote(c.Name) + " " + c.Type.Name()
		if c.NotNull && (hiddenKey || !slices.Contains(rel.PK, i)) { // a key column is NOT NULL anyway
			part += " NOT NULL"
		}
		if c.Default != "" {
			part += " DEFAULT " + c.Default
		}
		parts = append(parts, part)
	}
	if len(rel.PK) > 0 && !hiddenKey {
		keys := make([]string, len(rel.PK))
		for i, c := range rel.PK {
			keys[i] = ident.Quote(rel.Columns[c].Name)
		}
		parts = append(parts, "PRIMARY KEY ("+strings.Join(keys, ", ")+")")
	}
	if wm := rel.Watermark; wm != nil {
		parts = append(parts, "WATERMARK FOR "+ident.Quote(rel.Columns[wm.Column].Name)+" AS "+wm.Expr)
	}
	b.WriteString(strings.Join(parts, ", ") + ")")
	if rel.Kind == catalog.KindTable && rel.AppendOnly {
		if _, set := rel.Options["appendonly"]; !set {
			b.WriteString(" APPEND ONLY")
		}
	}
	if len(rel.Options) > 0 {
		keys := make([]string, 0, len(rel.Options))
		for k := range rel.Options {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		opts := make([]string, len(keys))
		for i, k := range keys {
			opts[i] = optionText(k, rel.Options[k])
		}
		b.WriteString(" WITH (" + strings.Join(opts, ", ") + ")")
	}
	return b.String()
}

// redacted replaces a secret in SHOW CREATE and rw_catalog definitions.
const redacted = "[REDACTED]"

// secretOption reports whether a WITH option holds a secret: password,
// properties.sasl.password, s3.credentials.secret, a token, a private key.
func secretOption(key string) bool {
	k := strings.ToLower(key)
	for _, w := range []string{"password", "secret", "token", "private"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// urlSecrets finds the password of a URL's user info or query
// (jdbc:postgresql://h/db?user=u&password=p, postgres://u:p@h/db).
var urlSecrets = regexp.MustCompile(`(?i)(password=)[^&;\s]*|(://[^/:@\s]*:)[^@/\s]*@`)

// optionText renders a WITH option as k = 'v' for SHOW CREATE and the
// definitions in rw_catalog, with secrets redacted (the connector itself
// keeps the value in the catalog).
func optionText(k, v string) string {
	if secretOption(k) {
		v = redacted
	} else {
		v = urlSecrets.ReplaceAllStringFunc(v, func(m string) string {
			if i := strings.IndexByte(m, '='); i >= 0 && strings.EqualFold(m[:i+1], "password=") {
				return m[:i+1] + redacted
			}
			return m[:strings.LastIndexByte(m, ':')+1] + redacted + "@"
		})
	}
	return k + " = '" + strings.ReplaceAll(v, "'", "''") + "'"
}
