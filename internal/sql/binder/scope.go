package binder

import (
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// scopeCol is one column visible by name.
type scopeCol struct {
	table string // range variable ("" for unqualified-only columns)
	name  string
	typ   types.Type
	// e is the expression producing the column, bound against the scope's
	// row (a ColumnRef, or COALESCE(l, r) for a FULL JOIN USING column).
	e expr.Expr
	// hidden columns are not expanded by * (a table's _row_id).
	hidden bool
	// qualifiedOnly columns can only be named as table.col (the two
	// sides of a USING column, which unqualified refers to the merged one).
	qualifiedOnly bool
	// unqualifiedOnly: the merged USING column has no table of its own
	// except through the join alias.
	unqualifiedOnly bool
}

// scope is the set of names visible in one query level.
type scope struct {
	cols []scopeCol
	// star lists the columns * expands to, in order.
	star []int
	// tables lists range variables, each with the columns table.*
	// expands to.
	tables []scopeTable
	parent *scope
	// correlated is set when a name resolved in a parent scope (the
	// subquery being bound is correlated).
	correlated *bool
	// width is the width of the row the scope's expressions are bound
	// against.
	width int
	// flatParent makes references resolved in the parent scope plain
	// column references into the same row (the parent's columns come
	// first in it): the row of a decorrelated semi join.
	flatParent bool
}

type scopeTable struct {
	name string
	cols []int
}

func (s *scope) addTable(name string, sch plan.Schema, offset int) {
	t := scopeTable{name: name}
	for i, c := range sch {
		idx := len(s.cols)
		s.cols = append(s.cols, scopeCol{table: name, name: c.Name, typ: c.Type, hidden: c.Hidden,
			e: &expr.ColumnRef{Index: offset + i, Typ: c.Type, Name: qualName(name, c.Name)}})
		if !c.Hidden {
			t.cols = append(t.cols, idx)
			s.star = append(s.star, idx)
		}
	}
	s.tables = append(s.tables, t)
}

func qualName(table, col string) string {
	if table == "" {
		return col
	}
	return table + "." + col
}

func (s *scope) hasTable(name string) bool {
	for _, t := range s.tables {
		if t.name == name {
			return true
		}
	}
	return false
}

// lookup resolves a column reference in this scope only. found is false if
// nothing matched.
func (s *scope) lookup(table, name string) (*scopeCol, bool, error) {
	var hit *scopeCol
	for i := range s.cols {
		c := &s.cols[i]
		if c.name != name {
			continue
		}
		if table != "" {
			if c.table != table || c.unqualifiedOnly {
				continue
			}
		} else if c.qualifiedOnly {
			continue
		}
		if hit != nil {
			if table != "" {
				return nil, false, sqlerr.Errorf(sqlerr.AmbiguousColumn, "column reference \"%s.%s\" is ambiguous", table, name)
			}
			return nil, false, sqlerr.Errorf(sqlerr.AmbiguousColumn, "column reference \"%s\" is ambiguous", name)
		}
		hit = c
	}
	return hit, hit != nil, nil
}
