package binder

import (
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// IndexCatalog is optionally implemented by a Catalog: the indexes
// (CREATE INDEX) of a relation that a query may read instead of it.
type IndexCatalog interface {
	Indexes(rel *catalog.Relation) []*catalog.Relation
}

// readsIndexes reports whether scans of this statement may read indexes:
// a SELECT (or EXPLAIN of one). A DML statement reads its own table
// through the table's writer, which an index cannot follow; a view's
// definition is a stream plan, which reads no index.
func (b *Binder) readsIndexes() bool {
	if b.stmt == nil || b.stmt.AST == nil {
		return false
	}
	if b.stmt.AST.GetSelectStmt() != nil {
		return true
	}
	e := b.stmt.AST.GetExplainStmt()
	return e != nil && e.Query != nil && e.Query.GetSelectStmt() != nil
}

// indexBounds is what a scan's filter requires of one column: equality
// with a value, or inclusive bounds.
type indexBounds struct {
	eq, lo, hi expr.Expr
}

// chooseIndex picks, for a scan of rel with the WHERE conjuncts conds,
// the index whose key the conjuncts bound best: equalities on a prefix of
// its declared key, then at most one range on the next column. It is
// used only when it bounds more than the relation's own key prefix does
// (pkPrefix equalities). Values are constants or parameters converted as
// keyValue allows, so that the key range never misses a row the filter
// accepts; the filter still decides every row read.
func (b *Binder) chooseIndex(rel *catalog.Relation, conds []expr.Expr, pkPrefix int) *plan.IndexLookup {
	ic, ok := b.cat.(IndexCatalog)
	if !ok || !b.readsIndexes() || (rel.Kind != catalog.KindTable && rel.Kind != catalog.KindMaterializedView) {
		return nil
	}
	if pkPrefix == len(rel.PK) {
		return nil // a point read of the relation itself
	}
	indexes := ic.Indexes(rel)
	if len(indexes) == 0 {
		return nil
	}
	bounds := columnBounds(rel, conds)
	if len(bounds) == 0 {
		return nil
	}
	var best *plan.IndexLookup
	bestScore := 2 * pkPrefix
	for _, x := range indexes {
		l := &plan.IndexLookup{Index: x, Covering: covers(x, rel)}
		for i := 0; i < len(x.Index.Columns) && i < len(x.PK); i++ {
			col := rel.ColumnIndex(x.Columns[x.PK[i]].Name)
			bd, ok := bounds[col]
			if !ok {
				break
			}
			if bd.eq != nil {
				l.Eq = append(l.Eq, bd.eq)
				continue
			}
			if bd.lo != nil || bd.hi != nil {
				l.Lo, l.Hi = bd.lo, bd.hi
			}
			break
		}
		score := 2 * len(l.Eq)
		if l.Lo != nil || l.Hi != nil {
			score++
		}
		if score > bestScore || (score == bestScore && best != nil && l.Covering && !best.Covering) {
			best, bestScore = l, score
		}
	}
	return best
}

// covers reports whether index x stores every column of rel.
func covers(x, rel *catalog.Relation) bool {
	for _, c := range rel.Columns {
		if x.ColumnIndex(c.Name) < 0 {
			return false
		}
	}
	return true
}

// columnBounds reads, from the conjuncts, each column's equality value or
// range bounds (of the column's own type; see keyValue and rangeValue).
func columnBounds(rel *catalog.Relation, conds []expr.Expr) map[int]*indexBounds {
	out := map[int]*indexBounds{}
	get := func(i int) *indexBounds {
		if out[i] == nil {
			out[i] = &indexBounds{}
		}
		return out[i]
	}
	var all []expr.Expr
	for _, c := range conds {
		all = append(all, expr.Conjuncts(c)...)
	}
	for _, c := range all {
		op, l, r, ok := expr.Comparison(c)
		if !ok {
			if l, r, ok = expr.EqualityOperands(c); !ok {
				continue
			}
			op = "="
		}
		if stringColumn(l) == nil {
			l, r = r, l
			op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op]
		}
		col := stringColumn(l)
		isCol := col != nil
		if !isCol || col.Index < 0 || col.Index >= len(rel.Columns) || !plan.StatementConstant(r) {
			continue
		}
		t := rel.Columns[col.Index].Type
		if op == "=" {
			if v := indexValue(r, t); v != nil {
				get(col.Index).eq = v
			}
			continue
		}
		v := rangeValue(r, t)
		if v == nil {
			continue
		}
		// Several bounds on one side: any one of them is a correct
		// (looser or equal) bound; the first is kept.
		switch op {
		case ">", ">=":
			if bd := get(col.Index); bd.lo == nil {
				bd.lo = v
			}
		case "<", "<=":
			if bd := get(col.Index); bd.hi == nil {
				bd.hi = v
			}
		}
	}
	return out
}

// rangeValue is keyValue for range bounds, for the types whose key
// encoding sorts exactly as their comparison operators do: integers,
// dates and times, and strings (byte order).
func rangeValue(v expr.Expr, t types.Type) expr.Expr {
	switch t.Kind {
	case types.KindInt16, types.KindInt32, types.KindInt64, types.KindDate, types.KindTimestamp, types.KindTimestamptz, types.KindVarchar:
		return indexValue(v, t)
	}
	return nil
}

// indexValue is keyValue, also taking a string value for a column of
// any string type (a varchar column compared with a text literal): the
// key encodes a string's bytes whatever its declared length.
func indexValue(v expr.Expr, t types.Type) expr.Expr {
	if t.Kind == types.KindVarchar && v.Type().Kind == types.KindVarchar {
		return v
	}
	return keyValue(v, t)
}

// stringColumn returns the column e reads: a column reference, or a
// string column cast to another string type (varchar to text, which
// PostgreSQL's operators insert and which changes no value).
func stringColumn(e expr.Expr) *expr.ColumnRef {
	if c, ok := e.(*expr.CastExpr); ok && c.To.Kind == types.KindVarchar && c.E.Type().Kind == types.KindVarchar {
		e = c.E
	}
	col, _ := e.(*expr.ColumnRef)
	return col
}
