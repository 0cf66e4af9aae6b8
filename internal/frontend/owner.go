package frontend

import (
	"context"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// alterOwner runs ALTER TABLE | VIEW | MATERIALIZED VIEW | INDEX name
// OWNER TO role. As in PostgreSQL: only the owner or a superuser may, the
// role must exist (42704), and a non-superuser may give an object only to
// a role it is (Runnel has no role membership); owning is what lets a
// role ALTER, DROP and rename the object.
func (ss *session) alterOwner(ctx context.Context, n *pg_query.AlterTableStmt, to *pg_query.RoleSpec) (pgwire.Result, error) {
	kinds := map[pg_query.ObjectType]catalog.RelationKind{
		pg_query.ObjectType_OBJECT_TABLE: catalog.KindTable, pg_query.ObjectType_OBJECT_VIEW: catalog.KindView,
		pg_query.ObjectType_OBJECT_MATVIEW: catalog.KindMaterializedView, pg_query.ObjectType_OBJECT_INDEX: catalog.KindIndex,
	}
	kind, ok := kinds[n.Objtype]
	if !ok {
		return pgwire.Result{}, sqlerr.New(sqlerr.FeatureNotSupported, "this form of ALTER ... OWNER TO is not supported")
	}
	tag := "ALTER " + strings.ToUpper(kind.String())
	rel, err := ss.lookupForAlter(kind, n.Relation.Schemaname, n.Relation.Relname, n.MissingOk)
	if err != nil || rel == nil {
		return pgwire.Result{Tag: tag}, err
	}
	return pgwire.Result{Tag: tag}, ss.changeOwner(ctx, rel, to)
}

// changeOwner gives rel to the role to names.
func (ss *session) changeOwner(ctx context.Context, rel *catalog.Relation, to *pg_query.RoleSpec) error {
	var name string
	switch to.GetRoletype() {
	case pg_query.RoleSpecType_ROLESPEC_CSTRING:
		name = to.Rolename
	case pg_query.RoleSpecType_ROLESPEC_CURRENT_USER, pg_query.RoleSpecType_ROLESPEC_SESSION_USER, pg_query.RoleSpecType_ROLESPEC_CURRENT_ROLE:
		name = ss.user.Name
	default:
		return sqlerr.New(sqlerr.FeatureNotSupported, "OWNER TO PUBLIC is not supported")
	}
	u, err := ss.s.catalog.UserByName(name)
	if err != nil {
		return sqlerr.Errorf(sqlerr.UndefinedObject, "role %q does not exist", name)
	}
	if !ss.user.Superuser {
		if err := ss.requireOwner(rel); err != nil {
			return err
		}
		if u.Name != ss.user.Name {
			return sqlerr.Errorf(sqlerr.InsufficientPrivilege, "must be able to SET ROLE %q", u.Name)
		}
	}
	if rel.Owner == u.Name {
		return nil
	}
	upd := *rel
	upd.Owner = u.Name
	return ss.s.meta.UpdateRelation(ctx, &upd)
}

// alterOwnerOf is ALTER SOURCE | SINK name OWNER TO role.
func (ss *session) alterOwnerOf(ctx context.Context, kind catalog.RelationKind, schema, name, role string, missingOK bool) error {
	rel, err := ss.lookupForAlter(kind, schema, name, missingOK)
	if err != nil || rel == nil {
		return err
	}
	spec := &pg_query.RoleSpec{Roletype: pg_query.RoleSpecType_ROLESPEC_CSTRING, Rolename: role}
	switch role {
	case "current_user", "session_user", "current_role":
		spec = &pg_query.RoleSpec{Roletype: pg_query.RoleSpecType_ROLESPEC_CURRENT_USER}
	}
	return ss.changeOwner(ctx, rel, spec)
}
