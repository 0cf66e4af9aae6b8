package binder

import (
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// keyPrefix finds, among the WHERE conjuncts of a scan of a table or
// materialized view, equalities between primary-key columns and constants
// or parameters that cover a prefix of the key, in key order: a point or
// prefix lookup instead of a full scan (UPDATE … WHERE id = $1, SELECT
// from a view by its key). Only equalities whose value has exactly the
// column's type, or an integer type widened or narrowed to an integer
// column, are used, so the lookup never misses a row the filter accepts.
func keyPrefix(rel *catalog.Relation, conds []expr.Expr) []expr.Expr {
	if rel == nil || len(rel.PK) == 0 || (rel.Kind != catalog.KindTable && rel.Kind != catalog.KindMaterializedView) {
		return nil
	}
	vals := map[int]expr.Expr{}
	for _, c := range conds {
		l, r, ok := expr.EqualityOperands(c)
		if !ok {
			continue
		}
		for _, side := range [2][2]expr.Expr{{l, r}, {r, l}} {
			col, ok := side[0].(*expr.ColumnRef)
			if !ok || col.Index < 0 || col.Index >= len(rel.Columns) || !plan.StatementConstant(side[1]) {
				continue
			}
			if v := keyValue(side[1], rel.Columns[col.Index].Type); v != nil {
				vals[col.Index] = v
			}
		}
	}
	var out []expr.Expr
	for _, k := range rel.PK {
		v, ok := vals[k]
		if !ok {
			break
		}
		out = append(out, v)
	}
	return out
}

func isIntKind(k types.Kind) bool {
	return k == types.KindInt16 || k == types.KindInt32 || k == types.KindInt64
}

// keyValue returns v as a value of the key column's type t, or nil when
// the conversion could change which rows are equal.
func keyValue(v expr.Expr, t types.Type) expr.Expr {
	vt := v.Type()
	if vt.Kind == t.Kind && vt.Mod == t.Mod {
		return v
	}
	if isIntKind(vt.Kind) && isIntKind(t.Kind) {
		// An out-of-range value fails the cast: the scan then reads
		// everything and the filter decides.
		c, err := expr.NewCast(v, t, expr.CastAssignment)
		if err == nil {
			return c
		}
	}
	return nil
}
