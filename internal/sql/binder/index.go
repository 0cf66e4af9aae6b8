package binder

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// CreateIndex is CREATE INDEX [IF NOT EXISTS] [name] ON rel (col [ASC |
// DESC], ...) [INCLUDE (col, ...)]: a maintained, sorted copy of a table's
// or materialized view's rows (catalog.IndexSpec).
type CreateIndex struct {
	// Name is "" when the statement names no index (the frontend picks
	// PostgreSQL's default, rel_col_idx).
	Name        string
	On          *catalog.Relation
	Spec        catalog.IndexSpec
	IfNotExists bool
}

func (*CreateIndex) boundStmt() {}

// bindCreateIndex checks CREATE INDEX. What an index is here (a sorted
// copy read by key range) covers btree indexes on plain columns; other
// access methods, expressions, partial and unique indexes are refused
// with 0A000 rather than accepted and ignored.
func (b *Binder) bindCreateIndex(s *pg.IndexStmt) (Statement, error) {
	switch {
	case s.AccessMethod != "" && !strings.EqualFold(s.AccessMethod, "btree"):
		return nil, unsupported("index access method %q is not supported: an index is a sorted copy (btree)", s.AccessMethod)
	case s.Unique:
		return nil, unsupported("CREATE UNIQUE INDEX is not supported")
	case s.WhereClause != nil:
		return nil, unsupported("partial indexes (CREATE INDEX ... WHERE) are not supported")
	case s.Concurrent:
		return nil, unsupported("CREATE INDEX CONCURRENTLY is not supported (CREATE INDEX does not block writes)")
	case len(s.Options) > 0:
		return nil, unsupported("CREATE INDEX ... WITH (...) is not supported")
	case s.TableSpace != "":
		return nil, unsupported("tablespaces are not supported")
	case s.Relation == nil:
		return nil, sqlerr.New(sqlerr.SyntaxError, "CREATE INDEX needs ON relation")
	}
	if s.Relation.Catalogname != "" {
		return nil, unsupported("cross-database references are not implemented")
	}
	rel, err := b.cat.ResolveRelation(s.Relation.Schemaname, s.Relation.Relname)
	if err != nil {
		return nil, b.errAt(err, s.Relation.Location)
	}
	if rel.Kind != catalog.KindTable && rel.Kind != catalog.KindMaterializedView {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "cannot create index on %s %q", rel.Kind, rel.Name).
			WithDetail("Indexes are supported on tables and materialized views.")
	}
	ci := &CreateIndex{Name: s.Idxname, On: rel, IfNotExists: s.IfNotExists, Spec: catalog.IndexSpec{On: rel.ID}}
	if len(s.IndexParams) == 0 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "CREATE INDEX needs at least one column")
	}
	for _, p := range s.IndexParams {
		e := p.GetIndexElem()
		if e == nil {
			return nil, sqlerr.New(sqlerr.SyntaxError, "unexpected index element")
		}
		switch {
		case e.Expr != nil || e.Name == "":
			return nil, unsupported("expression indexes are not supported: index a column")
		case len(e.Collation) > 0 || len(e.Opclass) > 0:
			return nil, unsupported("index collations and operator classes are not supported")
		case e.NullsOrdering != pg.SortByNulls_SORTBY_NULLS_DEFAULT:
			return nil, unsupported("NULLS FIRST / NULLS LAST in an index are not supported")
		}
		if err := b.indexColumn(rel, e.Name); err != nil {
			return nil, err
		}
		ci.Spec.Columns = append(ci.Spec.Columns, e.Name)
		ci.Spec.Desc = append(ci.Spec.Desc, e.Ordering == pg.SortByDir_SORTBY_DESC)
	}
	if len(s.IndexIncludingParams) == 0 {
		ci.Spec.IncludeAll = true // RisingWave's default: a covering index
	}
	for _, p := range s.IndexIncludingParams {
		e := p.GetIndexElem()
		if e == nil || e.Expr != nil || e.Name == "" {
			return nil, unsupported("expressions in INCLUDE are not supported")
		}
		if err := b.indexColumn(rel, e.Name); err != nil {
			return nil, err
		}
		ci.Spec.Include = append(ci.Spec.Include, e.Name)
	}
	return ci, nil
}

func (b *Binder) indexColumn(rel *catalog.Relation, name string) error {
	i := rel.ColumnIndex(name)
	if i < 0 || rel.Columns[i].Hidden {
		return sqlerr.Errorf(sqlerr.UndefinedColumn, "column %q does not exist", name)
	}
	return nil
}
