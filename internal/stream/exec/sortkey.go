package exec

import "github.com/runneldb/runnel/internal/types"

// sortKey turns ORDER BY items into state-table key columns. State tables
// encode NULL after every value in both directions (state.Schema has no
// NULLS FIRST), so an item with NULLS FIRST gets an extra boolean column
// "is null" in front of it, stored descending: true (NULL) sorts first.
//
//	ORDER BY a DESC (NULLS FIRST), b    ->  key columns: a IS NULL (desc), a (desc), b
type sortKey struct {
	orders []ColumnOrder
}

// width is the number of key columns the items take.
func (s sortKey) width() int {
	n := len(s.orders)
	for _, o := range s.orders {
		if o.NullsFirst {
			n++
		}
	}
	return n
}

// columns returns the key columns' types and directions for an input of
// types in.
func (s sortKey) columns(in []types.Type) (ts []types.Type, desc []bool) {
	for _, o := range s.orders {
		if o.NullsFirst {
			ts = append(ts, types.Bool)
			desc = append(desc, true)
		}
		ts = append(ts, in[o.Col])
		desc = append(desc, o.Desc)
	}
	return ts, desc
}

// appendValues appends the key columns' values for row.
func (s sortKey) appendValues(dst types.Row, row types.Row) types.Row {
	for _, o := range s.orders {
		if o.NullsFirst {
			dst = append(dst, types.DBool(row[o.Col].IsNull()))
		}
		dst = append(dst, row[o.Col])
	}
	return dst
}
