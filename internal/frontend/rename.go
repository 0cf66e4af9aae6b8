package frontend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// rename runs ALTER TABLE | MATERIALIZED VIEW | VIEW name RENAME TO new and
// ALTER TABLE name RENAME COLUMN a TO b (ALTER SOURCE | SINK ... RENAME TO
// come through renameRelation from Runnel's parser).
//
// Views and sinks store their query as SQL text and are re-planned from it
// at restart (plain views at every use), so a name they read must not
// change: renaming anything a view or sink depends on is refused with
// 2BP01, naming the dependents. Otherwise only the catalog entry changes:
// state tables, actors and connectors are keyed by ids, not names.
func (ss *session) rename(ctx context.Context, n *pg_query.RenameStmt) (pgwire.Result, error) {
	if n.Relation == nil {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "ALTER %s ... RENAME is not supported", objectTypeName(n.RenameType))
	}
	schema, name := n.Relation.Schemaname, n.Relation.Relname
	switch n.RenameType {
	case pg_query.ObjectType_OBJECT_TABLE, pg_query.ObjectType_OBJECT_MATVIEW, pg_query.ObjectType_OBJECT_VIEW, pg_query.ObjectType_OBJECT_INDEX:
		kind := kindOfObjectType(n.RenameType)
		return pgwire.Result{Tag: "ALTER " + strings.ToUpper(kind.String())}, ss.renameRelation(ctx, kind, schema, name, n.Newname, n.MissingOk)
	case pg_query.ObjectType_OBJECT_COLUMN:
		if n.RelationType != pg_query.ObjectType_OBJECT_TABLE {
			return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "ALTER %s ... RENAME COLUMN is not supported", objectTypeName(n.RelationType))
		}
		return pgwire.Result{Tag: "ALTER TABLE"}, ss.renameColumn(ctx, schema, name, n.Subname, n.Newname, n.MissingOk)
	}
	return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "ALTER %s ... RENAME is not supported", objectTypeName(n.RenameType))
}

func kindOfObjectType(t pg_query.ObjectType) catalog.RelationKind {
	switch t {
	case pg_query.ObjectType_OBJECT_MATVIEW:
		return catalog.KindMaterializedView
	case pg_query.ObjectType_OBJECT_VIEW:
		return catalog.KindView
	case pg_query.ObjectType_OBJECT_INDEX:
		return catalog.KindIndex
	}
	return catalog.KindTable
}

func objectTypeName(t pg_query.ObjectType) string {
	return strings.ReplaceAll(strings.TrimPrefix(t.String(), "OBJECT_"), "_", " ")
}

// lookupForAlter finds relation [schema.]name of kind want; nil without
// error when it does not exist and missingOK (a notice is sent).
func (ss *session) lookupForAlter(want catalog.RelationKind, schema, name string, missingOK bool) (*catalog.Relation, error) {
	rel, err := ss.findRelation(schema, name)
	if err != nil {
		return nil, err
	}
	if rel == nil || rel.Creating || rel.Kind == catalog.KindSystem && want != catalog.KindSystem {
		if rel != nil && rel.Kind == catalog.KindSystem {
			return nil, sqlerr.Errorf(sqlerr.InsufficientPrivilege, "permission denied: %q is a system catalog", name)
		}
		if missingOK {
			ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("relation %q does not exist, skipping", name)})
			return nil, nil
		}
		return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "%s %q does not exist", want, name)
	}
	if rel.Kind != want {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "%q is not a %s", name, want).
			WithHint("Use ALTER %s instead.", strings.ToUpper(rel.Kind.String()))
	}
	if err := ss.requireOwner(rel); err != nil {
		return nil, err
	}
	return rel, nil
}

// requireOwner refuses to let anyone but rel's owner or a superuser alter,
// comment on or drop it (PostgreSQL's 42501).
func (ss *session) requireOwner(rel *catalog.Relation) error {
	if ss.user.Superuser || rel.Owner == ss.user.Name {
		return nil
	}
	return sqlerr.Errorf(sqlerr.InsufficientPrivilege, "must be owner of %s %s", rel.Kind, rel.Name)
}

// findRelation finds [schema.]name along search_path (nil when absent).
func (ss *session) findRelation(schema, name string) (*catalog.Relation, error) {
	if schema == "" {
		rel, _ := (&sessionCatalog{ss: ss}).ResolveRelation("", name)
		return rel, nil
	}
	sc, err := ss.resolveSchema(schema)
	if err != nil {
		return nil, err
	}
	rel, _ := ss.s.catalog.RelationByName(sc.ID, name)
	return rel, nil
}

// refuseIfDependents refuses to rename what a view or sink reads (its
// stored SQL names it).
func (ss *session) refuseIfDependents(rel *catalog.Relation, what string, indexesOK bool) error {
	deps := ss.s.catalog.Dependents(rel.ID)
	if indexesOK {
		deps = slices.DeleteFunc(deps, func(d *catalog.Relation) bool { return d.Kind == catalog.KindIndex })
	}
	if len(deps) == 0 {
		return nil
	}
	var lines []string
	for _, d := range deps {
		lines = append(lines, fmt.Sprintf("%s %s depends on %s %s", d.Kind, d.Name, rel.Kind, rel.Name))
	}
	return sqlerr.Errorf(sqlerr.DependentObjectsStillExist, "cannot rename %s because other objects depend on it", what).
		WithDetail("%s", strings.Join(lines, "\n")).
		WithHint("Drop the dependent objects first (their definitions name it), then create them again under the new name.")
}

func (ss *session) renameRelation(ctx context.Context, kind catalog.RelationKind, schema, name, newName string, missingOK bool) error {
	rel, err := ss.lookupForAlter(kind, schema, name, missingOK)
	if err != nil || rel == nil {
		return err
	}
	if other, err := ss.s.catalog.RelationByName(rel.SchemaID, newName); err == nil && other.ID != rel.ID {
		return sqlerr.Errorf(sqlerr.DuplicateTable, "relation %q already exists", newName)
	}
	// Its indexes name it by id (catalog.IndexSpec.On), not in SQL: they
	// do not hold a rename back. A column rename still is refused (an
	// index stores its columns' names).
	if err := ss.refuseIfDependents(rel, fmt.Sprintf("%s %s", rel.Kind, rel.Name), true); err != nil {
		return err
	}
	upd := *rel
	upd.Name = newName
	return ss.s.meta.UpdateRelation(ctx, &upd)
}

func (ss *session) renameColumn(ctx context.Context, schema, name, col, newName string, missingOK bool) error {
	rel, err := ss.lookupForAlter(catalog.KindTable, schema, name, missingOK)
	if err != nil || rel == nil {
		return err
	}
	idx := -1
	for i, c := range rel.Columns {
		if c.Hidden {
			continue
		}
		if c.Name == col {
			idx = i
		}
		if c.Name == newName {
			return sqlerr.Errorf(sqlerr.DuplicateColumn, "column %q of relation %q already exists", newName, rel.Name)
		}
	}
	if idx < 0 {
		return sqlerr.Errorf(sqlerr.UndefinedColumn, "column %q does not exist", col)
	}
	if _, ok := rel.Options["connector"]; ok {
		// A connector's fields (JSON keys, upstream columns) map to
		// columns by name.
		return sqlerr.Errorf(sqlerr.FeatureNotSupported, "cannot rename a column of table %s: its connector maps columns by name", rel.Name)
	}
	if rel.Watermark != nil {
		// The WATERMARK FOR expression is stored as SQL text over the
		// column names.
		return sqlerr.Errorf(sqlerr.FeatureNotSupported, "cannot rename a column of table %s: its WATERMARK FOR expression names columns", rel.Name)
	}
	if err := ss.refuseIfDependents(rel, fmt.Sprintf("column %s of table %s", col, rel.Name), false); err != nil {
		return err
	}
	upd := *rel
	upd.Columns = append([]catalog.Column(nil), rel.Columns...)
	upd.Columns[idx].Name = newName
	return ss.s.meta.UpdateRelation(ctx, &upd)
}
