package streamplan

import (
	"fmt"
	"slices"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// A process-time temporal join (RisingWave's `s [LEFT] JOIN t FOR
// SYSTEM_TIME AS OF PROCTIME() ON s.k = t.pk`) becomes an
// OpTemporalJoin (exec.TemporalJoin): only the left side is a stream;
// each left change looks up the right relation's committed rows by key.
// The equality condition must cover the right relation's primary key, or
// a prefix of it that holds its distribution key (the rows of a key are
// then in one vnode); other conditions filter the looked-up rows.

// TemporalJoinSpec is an OpTemporalJoin's lookup.
type TemporalJoinSpec struct {
	// Rel is the looked-up table or materialized view; its columns follow
	// the left input's in the output.
	Rel *catalog.Relation
	// Point: LeftKeys cover Rel's whole primary key (one row per key).
	Point bool
	// AppendOnly: the left input never retracts, so the join keeps no
	// memo of what it emitted.
	AppendOnly bool
}

// errDanglingTemporal is RisingWave's refusal of a FOR SYSTEM_TIME AS OF
// PROCTIME() relation anywhere but the right side of an inner or left
// join.
func errDanglingTemporal() error {
	return unsupported("FOR SYSTEM_TIME AS OF PROCTIME() is supported only on the right side of an inner or left join (a temporal join)")
}

// temporalSide returns the scan of a join's right side when it is a
// relation read FOR SYSTEM_TIME AS OF PROCTIME(), possibly renamed by a
// column alias list (a projection of its columns in order).
func temporalSide(n plan.Node) *plan.Scan {
	if p, ok := n.(*plan.Project); ok {
		s, ok := p.Input.(*plan.Scan)
		if !ok || len(p.Exprs) != len(s.Out) {
			return nil
		}
		for i, e := range p.Exprs {
			if c, ok := e.(*expr.ColumnRef); !ok || c.Index != i {
				return nil
			}
		}
		n = s
	}
	if s, ok := n.(*plan.Scan); ok && s.ProcTime {
		return s
	}
	return nil
}

// temporalJoin plans n when its right side is a temporal scan (ok false
// otherwise).
func (b *builder) temporalJoin(n *plan.Join) (*Node, bool, error) {
	scan := temporalSide(n.Right)
	if scan == nil {
		return nil, false, nil
	}
	if n.Kind != plan.InnerJoin && n.Kind != plan.LeftJoin {
		return nil, true, errDanglingTemporal()
	}
	rel := scan.Rel
	// Which equality keys name which right columns.
	keyOf := map[int]int{}
	for i, rk := range n.RightKeys {
		if c, ok := rk.(*expr.CastExpr); ok {
			// x = id2 with x numeric binds as x = id2::numeric: the
			// lookup casts x to id2's type instead (checked again below).
			rk = c.E
		}
		if c, ok := rk.(*expr.ColumnRef); ok {
			if _, dup := keyOf[c.Index]; !dup {
				keyOf[c.Index] = i
			}
		}
	}
	m := 0
	for m < len(rel.PK) {
		if _, ok := keyOf[rel.PK[m]]; !ok {
			break
		}
		m++
	}
	point := m == len(rel.PK) && len(rel.PK) > 0
	if m == 0 || !pkPrefixFixesVnode(rel, m) {
		return nil, true, unsupported("temporal join requires the primary key of %q in the join's equality condition (all of it, or a prefix holding its distribution key): add ON conditions equating its key columns to the other side", rel.Name)
	}
	l, err := b.build(n.Left)
	if err != nil {
		return nil, true, err
	}
	nl, nr := len(n.Left.Schema()), len(n.Right.Schema())
	// The left side carries the lookup values as hidden columns, each of
	// the right key column's type. A cast only narrows the candidates: an
	// equality whose sides differ in type is checked again, as written,
	// in the residual condition (1.5 cast to int finds 2, which 1.5 = 2
	// then rejects; a value out of the column's range finds nothing).
	exprs := colRefs(l, seq(0, len(l.Schema)))
	lschema := slices.Clone(l.Schema)
	used := map[int]bool{}
	var lk []int
	for i := 0; i < m; i++ {
		col := rel.PK[i]
		k := keyOf[col]
		used[k] = true
		e := n.LeftKeys[k]
		want := rel.Columns[col].Type
		if e.Type() != want {
			c, err := expr.NewCast(e, want, expr.CastExplicit)
			if err != nil {
				return nil, true, unsupported("temporal join: cannot look up %s.%s (%s) by a %s value", rel.Name, rel.Columns[col].Name, want.Name(), e.Type().Name())
			}
			e = c
			used[k] = false // checked again below
		}
		exprs = append(exprs, e)
		lschema = append(lschema, plan.Column{Name: fmt.Sprintf("lookup_key_%d", i), Type: want, Hidden: true})
		lk = append(lk, len(exprs)-1)
	}
	lp := &Node{Op: OpProject, Inputs: []*Node{l}, Schema: lschema, Key: l.Key, Dist: l.Dist, Exprs: exprs}
	wl := len(lp.Schema)
	// The residual condition over left physical ++ right row: the ON
	// condition, the scan's pushed filter and the equalities the lookup
	// does not settle.
	mapping := make([]int, nl+nr)
	for i := 0; i < nl; i++ {
		mapping[i] = i
	}
	for i := 0; i < nr; i++ {
		mapping[nl+i] = wl + i
	}
	var conds []expr.Expr
	for k := range n.LeftKeys {
		if used[k] {
			continue
		}
		eq, err := expr.NewBinaryOp("=", n.LeftKeys[k], Remap(n.RightKeys[k], seq(nl, nr)))
		if err != nil {
			return nil, true, err
		}
		conds = append(conds, Remap(eq, mapping))
	}
	if n.Cond != nil {
		conds = append(conds, Remap(n.Cond, mapping))
	}
	if scan.Filter != nil {
		conds = append(conds, Remap(scan.Filter, seq(wl, nr)))
	}
	var cond expr.Expr
	for _, c := range conds {
		if cond == nil {
			cond = c
			continue
		}
		if cond, err = expr.NewBinaryOp("AND", cond, c); err != nil {
			return nil, true, err
		}
	}
	appendOnlyLeft := appendOnly(l) || InsertOnly(l)
	in := lp
	if !appendOnlyLeft {
		// The memo of emitted rows is keyed by the lookup key first and
		// distributed by it; the rows of a key must be in the actor that
		// owns its vnode.
		in = exchange(lp, Dist{Kind: DistHash, Keys: lk})
	}
	right := scan.Out
	schema := append(slices.Clone(in.Schema), right...)
	// The stream key: the left row's key and lookup values (an update
	// moving a row to another lookup key may reach downstream in either
	// order, as in a hash join), and the right key when a lookup may
	// match several rows.
	var key []int
	for _, c := range append(slices.Clone(l.Key), lk...) {
		if !slices.Contains(key, c) {
			key = append(key, c)
		}
	}
	if !point {
		for _, c := range rel.PK {
			key = append(key, wl+c)
		}
	}
	j := &Node{Op: OpTemporalJoin, Inputs: []*Node{in}, Schema: schema, Key: key, Dist: in.Dist, JoinKind: n.Kind,
		LeftKeys: lk, Cond: cond, TemporalJoin: &TemporalJoinSpec{Rel: rel, Point: point, AppendOnly: appendOnlyLeft}}
	outCols := seq(0, nl)
	for i := 0; i < nr; i++ {
		outCols = append(outCols, wl+i)
	}
	return b.project(j, colRefs(j, outCols), n.Out), true, nil
}

// pkPrefixFixesVnode reports whether the first n primary-key columns of
// rel hold its distribution key.
func pkPrefixFixesVnode(rel *catalog.Relation, n int) bool {
	dist := rel.DistKey
	if len(dist) == 0 {
		dist = rel.PK
	}
	for _, c := range dist {
		if !slices.Contains(rel.PK[:min(n, len(rel.PK))], c) {
			return false
		}
	}
	return true
}

// temporalLookupTypes are the right relation's column types.
func temporalLookupTypes(rel *catalog.Relation) []types.Type {
	out := make([]types.Type, len(rel.Columns))
	for i, c := range rel.Columns {
		out[i] = c.Type
	}
	return out
}
