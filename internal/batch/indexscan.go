package batch

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/types"
)

// openIndex starts a scan through an index (plan.IndexLookup): the
// index's key range, each row mapped back to a row of the relation. ok is
// false when the source cannot read the index or a bound does not
// evaluate to a key value (the caller then scans the relation). A NULL
// equality or bound matches nothing (the filter rejects NULL comparisons).
func (s *scanExec) openIndex(ctx context.Context) (RowIterator, bool, error) {
	l := s.node.Index
	is, ok := s.r.env.Data.(IndexScanner)
	if !ok {
		return nil, false, nil
	}
	ec := s.r.evalCtx(ctx)
	eq := make(types.Row, len(l.Eq))
	for i, e := range l.Eq {
		d, err := e.Eval(ec, nil)
		if err != nil {
			return nil, false, nil // e.g. out of range for the key type
		}
		if d.IsNull() {
			return emptyRows{}, true, nil
		}
		eq[i] = d
	}
	bound := func(e expr.Expr) (*types.Datum, bool, bool) {
		if e == nil {
			return nil, false, true
		}
		d, err := e.Eval(ec, nil)
		if err != nil {
			return nil, false, false
		}
		return &d, d.IsNull(), true
	}
	lo, loNull, okLo := bound(l.Lo)
	hi, hiNull, okHi := bound(l.Hi)
	if !okLo || !okHi {
		return nil, false, nil
	}
	if loNull || hiNull {
		return emptyRows{}, true, nil
	}
	it, ok, err := is.ScanIndex(ctx, l.Index, eq, lo, hi)
	if err != nil || !ok {
		return nil, ok, err
	}
	rel := s.node.Rel
	fromIndex := make([]int, len(rel.Columns))
	for i, c := range rel.Columns {
		fromIndex[i] = l.Index.ColumnIndex(c.Name)
	}
	m := &indexRows{it: it, rel: rel, fromIndex: fromIndex, covering: l.Covering}
	if !l.Covering {
		ks, ok := s.r.env.Data.(KeyScanner)
		if !ok {
			it.Close()
			return nil, false, nil
		}
		m.base = ks
		for _, k := range rel.PK {
			m.pk = append(m.pk, fromIndex[k])
		}
	}
	return m, true, nil
}

// indexRows maps an index's rows to rows of its relation: by column name
// from the index's own columns (covering), or by a point read of the
// relation by the primary key the index row holds. Both are read from
// the same snapshot, where index and relation are one committed epoch
// (I7: one version delta makes an epoch visible for all tables at once),
// so the point read always finds the row; a miss is reported, not
// skipped (I6).
type indexRows struct {
	it        RowIterator
	rel       *catalog.Relation
	fromIndex []int
	covering  bool
	base      KeyScanner
	pk        []int
}

func (r *indexRows) Next(ctx context.Context) (types.Row, error) {
	x, err := r.it.Next(ctx)
	if err != nil || x == nil {
		return nil, err
	}
	if r.covering {
		row := make(types.Row, len(r.fromIndex))
		for i, j := range r.fromIndex {
			row[i] = x[j]
		}
		return row, nil
	}
	key := make(types.Row, len(r.pk))
	for i, j := range r.pk {
		key[i] = x[j]
	}
	it, ok, err := r.base.ScanKey(ctx, r.rel, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, internalf("index scan of %s: cannot read it by primary key", r.rel.Name)
	}
	defer it.Close()
	row, err := it.Next(ctx)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, fmt.Errorf("index scan of %s %s: the index holds key %v, the %s has no such row (index inconsistent with its relation)", r.rel.Kind, r.rel.Name, key, r.rel.Kind)
	}
	return row, nil
}

func (r *indexRows) Close() { r.it.Close() }
