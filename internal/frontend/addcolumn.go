package frontend

import (
	"context"
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// alterTable runs ALTER TABLE t ADD COLUMN [IF NOT EXISTS] c type for a
// plain table: the column is appended, nullable and without a default.
// Stored rows lack it and decode with NULL in it (types.DecodeValueRow),
// which is what PostgreSQL gives existing rows for a column added without
// a default; the table's actor is restarted with the new columns
// (Meta.ReplaceTableColumns, as the time-series ingest does). Refused
// (0A000): DEFAULT and NOT NULL (existing rows would read NULL, not the
// default), tables with a connector (their columns are the upstream's),
// and tables a view or sink reads (their plans and stored SQL were made
// against the old columns).
func (ss *session) alterTable(ctx context.Context, n *pg_query.AlterTableStmt) (pgwire.Result, error) {
	res := pgwire.Result{Tag: "ALTER TABLE"}
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
	for _, cn := range cd.Constraints {
		switch c := cn.GetConstraint(); c.GetContype() {
		case pg_query.ConstrType_CONSTR_NULL:
		case pg_query.ConstrType_CONSTR_DEFAULT, pg_query.ConstrType_CONSTR_NOTNULL:
			return res, sqlerr.Errorf(sqlerr.FeatureNotSupported, "ALTER TABLE ... ADD COLUMN with %s is not supported yet (existing rows would read NULL)", c.GetContype().String()[len("CONSTR_"):])
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
	nr.Columns = append(slices.Clone(rel.Columns), catalog.Column{Name: cd.Colname, Type: t})
	return res, ss.s.meta.ReplaceTableColumns(ctx, rel, &nr)
}
