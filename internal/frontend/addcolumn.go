package frontend

import (
	"context"
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/ident"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// alterTable runs ALTER TABLE t ADD COLUMN [IF NOT EXISTS] c type
// [DEFAULT expr] for a plain table: the column is appended, nullable.
// Stored rows lack it and decode with NULL in it (types.DecodeValueRow),
// which is what PostgreSQL gives existing rows for a column added without
// a default; the table's actor is restarted with the new columns
// (Meta.ReplaceTableColumns, as the time-series ingest does). With a
// DEFAULT, the column is added with it (new rows get it) and then the
// existing rows are given it by an UPDATE through the session's DML path,
// flushed before the statement returns (I7), as PostgreSQL fills them (a
// volatile default is evaluated per row). Unlike PostgreSQL's, the two
// steps are not one transaction: a row another session inserts between
// them with an explicit NULL in the new column gets the default too, and
// a crash between them leaves the column with NULL in the old rows (the
// statement was not acknowledged). Refused (0A000): NOT NULL, tables with
// a connector (their columns are the upstream's), and tables a view or
// sink reads (their plans and stored SQL were made against the old
// columns).
func (st *statement) alterTable(ctx context.Context, n *pg_query.AlterTableStmt) (pgwire.Result, error) {
	ss := st.sess
	res := pgwire.Result{Tag: "ALTER TABLE"}
	if len(n.Cmds) == 1 && n.Relation != nil {
		if cmd := n.Cmds[0].GetAlterTableCmd(); cmd != nil && cmd.Subtype == pg_query.AlterTableType_AT_ChangeOwner {
			return ss.alterOwner(ctx, n, cmd.Newowner) // owner.go
		}
	}
	if n.Objtype != pg_query.ObjectType_OBJECT_TABLE || n.Relation == nil || len(n.Cmds) != 1 {
		return res, sqlerr.New(sqlerr.FeatureNotSupported, "this form of ALTER is not supported (ALTER TABLE ... ADD COLUMN and RENAME are)")
	}
	cmd := n.Cmds[0].GetAlterTableCmd()
	if cmd == nil || cmd.Subtype != pg_query.AlterTableType_AT_AddColumn {
		return res, sqlerr.New(sqlerr.FeatureNotSupported, "this form of ALTER TABLE is not supported (ADD COLUMN and RENAME are)")
	}
	cd := cmd.Def.GetColumnDef()
	if cd == nil {
		return res, sqlerr.New(sqlerr.FeatureNotSupported, "this form of ALTER TABLE ... ADD is not supported")
	}
	rel, err := ss.lookupForAlter(catalog.KindTable, n.Relation.Schemaname, n.Relation.Relname, n.MissingOk)
	if err != nil || rel == nil {
		return res, err
	}
	for _, c := range rel.Columns {
		if c.Name == cd.Colname {
			if cmd.MissingOk {
				ss.client.Notice(pgwire.Notice{Code: sqlerr.DuplicateColumn, Message: "column \"" + cd.Colname + "\" of relation \"" + rel.Name + "\" already exists, skipping"})
				return res, nil
			}
			return res, sqlerr.Errorf(sqlerr.DuplicateColumn, "column %q of relation %q already exists", cd.Colname, rel.Name)
		}
	}
	t, err := binder.ResolveTypeName(cd.TypeName)
	if err != nil {
		return res, err
	}
	if cd.IsNotNull {
		return res, sqlerr.New(sqlerr.FeatureNotSupported, "ALTER TABLE ... ADD COLUMN ... NOT NULL is not supported (existing rows would hold NULL)")
	}
	var def string
	for k, cn := range cd.Constraints {
		switch c := cn.GetConstraint(); c.GetContype() {
		case pg_query.ConstrType_CONSTR_NULL:
		case pg_query.ConstrType_CONSTR_DEFAULT:
			limit := -1 // the expression ends before the next constraint
			if k+1 < len(cd.Constraints) {
				limit = int(cd.Constraints[k+1].GetConstraint().GetLocation())
			}
			if def, err = binder.AddColumnDefault(&sessionCatalog{ss: ss}, st.p, c.RawExpr, t, cd.Colname, int(c.Location), limit); err != nil {
				return res, err
			}
		case pg_query.ConstrType_CONSTR_NOTNULL:
			return res, sqlerr.New(sqlerr.FeatureNotSupported, "ALTER TABLE ... ADD COLUMN ... NOT NULL is not supported (existing rows would hold NULL)")
		default:
			return res, sqlerr.Errorf(sqlerr.FeatureNotSupported, "column constraint %s is not supported in ALTER TABLE ... ADD COLUMN", c.GetContype().String()[len("CONSTR_"):])
		}
	}
	if _, ok := rel.Options["connector"]; ok {
		return res, sqlerr.Errorf(sqlerr.FeatureNotSupported, "cannot add a column to table %s: its columns are its connector's", rel.Name)
	}
	if deps := ss.s.catalog.Dependents(rel.ID); len(deps) > 0 {
		return res, sqlerr.Errorf(sqlerr.FeatureNotSupported, "cannot add a column to table %s while %s %s reads it", rel.Name, deps[0].Kind, deps[0].Name).
			WithHint("Drop the views that read it, add the column, and create them again.")
	}
	nr := *rel
	nr.Columns = append(slices.Clone(rel.Columns), catalog.Column{Name: cd.Colname, Type: t, Default: def})
	if err := ss.s.meta.ReplaceTableColumns(ctx, rel, &nr); err != nil || def == "" {
		return res, err
	}
	var schema string
	for _, sc := range ss.s.catalog.Schemas(rel.DatabaseID) {
		if sc.ID == rel.SchemaID {
			schema = sc.Name
		}
	}
	text := "UPDATE " + ident.Quote(schema) + "." + ident.Quote(rel.Name) + " SET " + ident.Quote(cd.Colname) + " = DEFAULT"
	p, err := parser.ParseOne(text)
	if err != nil {
		return res, err
	}
	if _, err := (&statement{sess: ss, p: p}).Execute(ctx, nil); err != nil {
		return res, err
	}
	return res, ss.flush(ctx)
}
