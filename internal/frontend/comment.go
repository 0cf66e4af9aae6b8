package frontend

import (
	"context"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// comment runs COMMENT ON TABLE | MATERIALIZED VIEW | VIEW | COLUMN ... IS
// 'text' | NULL. The comment is stored in the relation's catalog entry
// (Relation.Comment, Column.Comment), so it survives restarts; pg_description,
// obj_description and col_description show it (psql's \d+, \dt+). NULL or ”
// removes it, as in PostgreSQL.
func (ss *session) comment(ctx context.Context, n *pg_query.CommentStmt) (pgwire.Result, error) {
	res := pgwire.Result{Tag: "COMMENT"}
	var names []string
	if l := n.Object.GetList(); l != nil {
		for _, it := range l.Items {
			names = append(names, it.GetString_().GetSval())
		}
	}
	switch n.Objtype {
	case pg_query.ObjectType_OBJECT_TABLE, pg_query.ObjectType_OBJECT_MATVIEW, pg_query.ObjectType_OBJECT_VIEW:
		schema, name, err := splitQualified(names)
		if err != nil {
			return res, err
		}
		rel, err := ss.lookupForAlter(kindOfObjectType(n.Objtype), schema, name, false)
		if err != nil {
			return res, err
		}
		upd := *rel
		upd.Comment = n.Comment
		return res, ss.s.meta.UpdateRelation(ctx, &upd)
	case pg_query.ObjectType_OBJECT_COLUMN:
		if len(names) < 2 {
			return res, sqlerr.New(sqlerr.SyntaxError, "column name must be qualified")
		}
		col := names[len(names)-1]
		schema, name, err := splitQualified(names[:len(names)-1])
		if err != nil {
			return res, err
		}
		rel, err := ss.lookupAnyRelation(schema, name)
		if err != nil {
			return res, err
		}
		for i, c := range rel.Columns {
			if c.Name == col && !c.Hidden {
				upd := *rel
				upd.Columns = append([]catalog.Column(nil), rel.Columns...)
				upd.Columns[i].Comment = n.Comment
				return res, ss.s.meta.UpdateRelation(ctx, &upd)
			}
		}
		return res, sqlerr.Errorf(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", col, rel.Name)
	}
	return res, sqlerr.Errorf(sqlerr.FeatureNotSupported, "COMMENT ON %s is not supported", objectTypeName(n.Objtype))
}

// splitQualified splits [schema.]name (a database qualifier is refused).
func splitQualified(names []string) (schema, name string, err error) {
	switch len(names) {
	case 1:
		return "", names[0], nil
	case 2:
		return names[0], names[1], nil
	}
	return "", "", sqlerr.Errorf(sqlerr.FeatureNotSupported, "cross-database references are not implemented: %s", strings.Join(names, "."))
}

// lookupAnyRelation finds a table, view or materialized view of any kind.
func (ss *session) lookupAnyRelation(schema, name string) (*catalog.Relation, error) {
	rel, err := ss.findRelation(schema, name)
	if err != nil {
		return nil, err
	}
	if rel == nil || rel.Creating || rel.Kind == catalog.KindSink {
		return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "relation %q does not exist", name)
	}
	if rel.Kind == catalog.KindSystem {
		return nil, sqlerr.Errorf(sqlerr.InsufficientPrivilege, "permission denied: %q is a system catalog", name)
	}
	return rel, nil
}
