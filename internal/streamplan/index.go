package streamplan

import (
	"slices"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// BuildIndex plans an index's job (CREATE INDEX): the base relation's
// rows, projected to the index's columns (IndexColumns), materialized
// under the key (declared index columns, then the base key's other
// columns) and distributed by the first index column, so that a lookup by
// it reads one vnode. The index is a view over one relation with another
// key order: a new job backfills it from the base relation's snapshot and
// then follows its changes like any view (an update moving a row to
// another index key arrives as a delete and an insert, split between
// actors by the exchange).
//
// names are the index's columns (base column names, as IndexColumns
// chose them at creation: a rebuild plans the stored list, so columns
// added to the base later do not change the index's layout), the first
// nKey its key, desc their order.
func BuildIndex(base *catalog.Relation, names []string, nKey int, desc []bool) (*Node, error) {
	if base.Kind != catalog.KindTable && base.Kind != catalog.KindMaterializedView {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "%q is not a table or materialized view", base.Name)
	}
	cols := make([]int, len(names))
	for i, name := range names {
		if cols[i] = base.ColumnIndex(name); cols[i] < 0 {
			return nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "column %q of the index does not exist in %s %s", name, base.Kind, base.Name)
		}
	}
	for _, k := range base.PK {
		if !slices.Contains(cols[:nKey], k) {
			return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "the key of %s %s changed since the index was created", base.Kind, base.Name)
		}
	}
	in := make(plan.Schema, len(base.Columns))
	for i, c := range base.Columns {
		in[i] = plan.Column{Name: c.Name, Type: c.Type, Table: base.Name, Hidden: c.Hidden}
	}
	scan := &Node{Op: OpScan, Rel: base, Schema: in, Key: slices.Clone(base.PK), Dist: Dist{Kind: DistAny}}
	out := make(plan.Schema, len(cols))
	for i, c := range cols {
		out[i] = in[c]
	}
	b := &builder{}
	proj := b.project(scan, colRefs(scan, cols), out)
	proj.Key = seq(0, nKey) // unique: it holds the base key
	ex := exchange(proj, Dist{Kind: DistHash, Keys: []int{0}})
	desc = append(slices.Clone(desc), make([]bool, max(0, nKey-len(desc)))...)
	return &Node{Op: OpMaterialize, Inputs: []*Node{ex}, Schema: out, Key: seq(0, nKey), Dist: ex.Dist, KeyDesc: desc}, nil
}

// IndexColumns lists the base columns an index stores, in its column
// order: the declared key columns, the base key's columns not among them
// (nKey counts these two groups: the index's key), then the included
// columns (every other column when spec.IncludeAll).
func IndexColumns(base *catalog.Relation, spec *catalog.IndexSpec) (cols []int, nKey int, err error) {
	find := func(name string) (int, error) {
		i := base.ColumnIndex(name)
		if i < 0 {
			return 0, sqlerr.Errorf(sqlerr.UndefinedColumn, "column %q does not exist in %s %s", name, base.Kind, base.Name)
		}
		return i, nil
	}
	for _, name := range spec.Columns {
		i, err := find(name)
		if err != nil {
			return nil, 0, err
		}
		if slices.Contains(cols, i) {
			return nil, 0, sqlerr.Errorf(sqlerr.DuplicateColumn, "column %q appears twice in the index", name)
		}
		cols = append(cols, i)
	}
	for _, k := range base.PK {
		if !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	nKey = len(cols)
	if spec.IncludeAll {
		for i := range base.Columns {
			if !slices.Contains(cols, i) {
				cols = append(cols, i)
			}
		}
		return cols, nKey, nil
	}
	for _, name := range spec.Include {
		i, err := find(name)
		if err != nil {
			return nil, 0, err
		}
		if !slices.Contains(cols, i) {
			cols = append(cols, i)
		}
	}
	return cols, nKey, nil
}
