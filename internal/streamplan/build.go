package streamplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Build turns a view's logical plan into a stream plan ending in a
// Materialize node. Operators Runnel cannot maintain incrementally yet are
// rejected with 0A000 naming the construct.
func Build(root plan.Node) (*Node, error) {
	b := &builder{}
	eowc, ok := root.(*plan.EmitOnWindowClose)
	if ok {
		root = eowc.Input
	}
	n, err := b.build(root)
	if err != nil {
		return nil, err
	}
	fuseHopWindowProjects(n) // see timewindow.go
	if eowc != nil {
		if n, err = b.emitOnWindowClose(n); err != nil { // see windowclose.go
			return nil, err
		}
	}
	return b.materialize(n), nil
}

type builder struct{}

func (b *builder) build(n plan.Node) (*Node, error) {
	if out, ok, err := b.dynamicFilter(n); ok || err != nil {
		return out, err // see dynamicfilter.go
	}
	if h, err := hoistScalarSubqueries(n); err != nil {
		return nil, err
	} else if h != nil {
		n = h // see subquery.go
	}
	if out, ok, err := b.temporalFilters(n); ok || err != nil {
		return out, err // see temporal.go
	}
	if err := checkNode(n); err != nil {
		return nil, err
	}
	if readsNothing(n) {
		return b.constant(n)
	}
	switch n := n.(type) {
	case *plan.Scan:
		if n.ProcTime {
			return nil, errDanglingTemporal()
		}
		rel := n.Rel
		if rel.Kind != catalog.KindTable && rel.Kind != catalog.KindMaterializedView && rel.Kind != catalog.KindSource {
			return nil, unsupported("reading %s %q in a materialized view is not supported", rel.Kind, rel.Name)
		}
		op := OpScan
		if rel.Kind == catalog.KindSource {
			// A source has no storage: each job reading it runs the
			// connector itself, from the start.
			op = OpSource
		}
		scan := &Node{Op: op, Rel: rel, Schema: n.Out, Key: slices.Clone(rel.PK), Dist: Dist{Kind: DistAny}}
		if n.Filter != nil {
			return b.filter(scan, n.Filter), nil
		}
		return scan, nil
	case *plan.Filter:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return b.filter(in, n.Cond), nil
	case *plan.Project:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return b.project(in, n.Exprs, n.Out), nil
	case *plan.Aggregate:
		return b.aggregate(n)
	case *plan.Join:
		return b.join(n)
	case *plan.Sort:
		// A materialized view has no order; ORDER BY alone changes nothing
		// that a later query cannot ask for.
		return b.build(n.Input)
	case *plan.TopN:
		return b.topN(n.Input, n.Keys, n.Limit, n.Offset, n.WithTies)
	case *plan.Limit:
		return b.topN(n.Input, nil, n.Limit, n.Offset, false)
	case *plan.Distinct:
		if n.On != nil {
			return b.distinctOn(n)
		}
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return b.distinct(in, len(n.Input.Schema())), nil
	case *plan.SetOp:
		return b.setOp(n)
	case *plan.ProjectSet:
		return b.projectSet(n) // constant ones were planned above (constant.go)
	case *plan.Expand:
		return b.expand(n) // see expand.go
	case *plan.Window:
		return b.overWindow(n)
	case *plan.HopWindow:
		return b.hopWindow(n) // see timewindow.go
	}
	return nil, unsupported("%s in a materialized view is not supported", strings.Fields(n.Describe() + " ?")[0])
}

// checkNode applies checkStreamable to a node's expressions.
func checkNode(n plan.Node) error {
	switch n := n.(type) {
	case *plan.RecursiveUnion:
		return unsupported("WITH RECURSIVE over a relation is not supported in a materialized view: a recursive query is not maintained incrementally (use it in a SELECT or a plain view)")
	case *plan.Scan:
		return checkStreamable(n.Filter)
	case *plan.Filter:
		return checkStreamable(n.Cond)
	case *plan.Project:
		return checkStreamable(n.Exprs...)
	case *plan.Aggregate:
		if err := checkStreamable(n.GroupBy...); err != nil {
			return err
		}
		for _, a := range n.Aggs {
			if err := checkStreamable(append(a.Args, a.Filter)...); err != nil {
				return err
			}
		}
	case *plan.Join:
		return checkStreamable(append(append(n.LeftKeys, n.RightKeys...), n.Cond)...)
	case *plan.Expand:
		return checkStreamable(n.Keys...)
	}
	return nil
}

// checkStreamable refuses expressions that a streaming executor cannot
// evaluate row by row: subqueries (they would need to re-run a query for
// every change).
func checkStreamable(es ...expr.Expr) error {
	for _, e := range es {
		if _, ok := e.(*subqueryColumns); ok {
			continue // its subqueries are join inputs (subquery.go)
		}
		// Bound expressions are opaque; subquery nodes render with a
		// "(subquery)" label (plan.Subquery), which is how we see them.
		if e != nil && strings.Contains(e.String(), "(subquery)") {
			return unsupported("subqueries in expressions of a materialized view are not supported yet (write them as joins)")
		}
	}
	name, tooDeep := volatileCall(es...)
	if tooDeep {
		return sqlerr.New(sqlerr.StatementTooComplex, "expression too deeply nested for a materialized view")
	}
	if name != "" {
		return unsupported("volatile function %s() in a materialized view is not supported: a view row keeps the value it had when it was computed (now() is supported in a WHERE comparison with a column, a temporal filter: WHERE ts > now() - INTERVAL '1 hour')", name)
	}
	return nil
}

func (b *builder) filter(in *Node, cond expr.Expr) *Node {
	return &Node{Op: OpFilter, Inputs: []*Node{in}, Schema: in.Schema, Key: in.Key, Dist: in.Dist, Cond: cond}
}

// project computes exprs over in and keeps in's stream key, appending
// hidden column references where exprs drop key columns.
func (b *builder) project(in *Node, exprs []expr.Expr, out plan.Schema) *Node {
	exprs = slices.Clone(exprs)
	out = slices.Clone(out)
	pos := func(col int) int {
		for j, e := range exprs {
			if c, ok := e.(*expr.ColumnRef); ok && c.Index == col {
				return j
			}
		}
		return -1
	}
	key := make([]int, len(in.Key))
	for i, k := range in.Key {
		j := pos(k)
		if j < 0 {
			c := in.Schema[k]
			exprs = append(exprs, &expr.ColumnRef{Index: k, Typ: c.Type, Name: c.Name})
			out = append(out, plan.Column{Name: c.Name, Type: c.Type, Table: c.Table, Hidden: true})
			j = len(exprs) - 1
		}
		key[i] = j
	}
	dist := Dist{Kind: in.Dist.Kind}
	if in.Dist.Kind == DistHash {
		for _, k := range in.Dist.Keys {
			j := pos(k)
			if j < 0 {
				dist = Dist{Kind: DistAny}
				break
			}
			dist.Keys = append(dist.Keys, j)
		}
	}
	return &Node{Op: OpProject, Inputs: []*Node{in}, Schema: out, Key: key, Dist: dist, Exprs: exprs}
}

// colRefs returns column references to cols of in.
func colRefs(in *Node, cols []int) []expr.Expr {
	out := make([]expr.Expr, len(cols))
	for i, c := range cols {
		out[i] = &expr.ColumnRef{Index: c, Typ: in.Schema[c].Type, Name: in.Schema[c].Name}
	}
	return out
}

func seq(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// exchange redistributes in unless it is already distributed as d needs.
func exchange(in *Node, d Dist) *Node {
	if satisfies(in.Dist, d) {
		return in
	}
	return &Node{Op: OpExchange, Inputs: []*Node{in}, Schema: in.Schema, Key: in.Key, Dist: d}
}

// satisfies reports whether rows distributed by have are where need wants
// them. Hash distributions must match exactly: state tables compute vnodes
// from their distribution key, so an actor's rows must hash to the vnodes
// it owns by that same key.
func satisfies(have, need Dist) bool {
	switch need.Kind {
	case DistSingle:
		return have.Kind == DistSingle
	case DistHash:
		return have.Kind == DistHash && slices.Equal(have.Keys, need.Keys)
	}
	return true
}

// aggregate plans GROUP BY: a projection computing group keys, aggregate
// arguments and the input key as columns, an exchange by the group key,
// and a hash (or, without GROUP BY, a singleton) aggregation.
func (b *builder) aggregate(n *plan.Aggregate) (*Node, error) {
	in, err := b.build(n.Input)
	if err != nil {
		return nil, err
	}
	var exprs []expr.Expr
	var out plan.Schema
	add := func(e expr.Expr, name string) int {
		exprs = append(exprs, e)
		out = append(out, plan.Column{Name: name, Type: e.Type()})
		return len(exprs) - 1
	}
	for i, g := range n.GroupBy {
		add(g, fmt.Sprintf("group_%d", i))
	}
	specs := make([]AggSpec, len(n.Aggs))
	for i, a := range n.Aggs {
		s := AggSpec{Call: a, Filter: -1}
		for j, arg := range a.Args {
			s.Args = append(s.Args, add(arg, fmt.Sprintf("agg_%d_arg_%d", i, j)))
		}
		// An ordered aggregate (string_agg(x, ',' ORDER BY y)) keeps its
		// inputs sorted by the ORDER BY, then the input's stream key.
		// A key that is an argument (string_agg(DISTINCT x, ',' ORDER BY
		// x DESC) must be) reads the argument's column: the DISTINCT
		// input table is sorted by the argument itself.
		for j, k := range a.OrderBy {
			col := -1
			for ai, arg := range a.Args {
				if sortsLike(arg, k.Expr) {
					col = s.Args[ai]
					break
				}
			}
			if col < 0 {
				col = add(k.Expr, fmt.Sprintf("agg_%d_order_%d", i, j))
			}
			s.OrderBy = append(s.OrderBy, OrderCol{Col: col, Desc: k.Desc, NullsFirst: k.NullsFirst})
		}
		if a.Filter != nil {
			s.Filter = add(a.Filter, fmt.Sprintf("agg_%d_filter", i))
		}
		specs[i] = s
	}
	var inKey []int
	for _, k := range in.Key {
		c := in.Schema[k]
		inKey = append(inKey, add(&expr.ColumnRef{Index: k, Typ: c.Type, Name: c.Name}, c.Name))
	}
	pre := &Node{Op: OpProject, Inputs: []*Node{in}, Schema: out, Key: inKey, Dist: Dist{Kind: DistAny}, Exprs: exprs}
	g := len(n.GroupBy)
	if g == 0 {
		// (Always is set only with a group key: the grouping-set number.)
		ex := exchange(pre, Dist{Kind: DistSingle})
		return &Node{Op: OpSimpleAgg, Inputs: []*Node{ex}, Schema: n.Out, Key: []int{}, Dist: Dist{Kind: DistSingle},
			Aggs: specs, InputKey: inKey}, nil
	}
	ex := exchange(pre, Dist{Kind: DistHash, Keys: seq(0, g)})
	return &Node{Op: OpHashAgg, Inputs: []*Node{ex}, Schema: n.Out, Key: seq(0, g), Dist: Dist{Kind: DistHash, Keys: seq(0, g)},
		GroupKey: seq(0, g), Aggs: specs, InputKey: inKey, Always: n.Always}, nil
}

// join plans an equi-join: each side projected to carry its join keys as
// columns, exchanged by them, joined, then projected to the logical output
// plus both sides' stream keys.
func (b *builder) join(n *plan.Join) (*Node, error) {
	if tj, ok, err := b.temporalJoin(n); ok || err != nil {
		return tj, err // see temporaljoin.go
	}
	if n.NullAware {
		f, err := notInFilter(n) // see membership.go
		if err != nil {
			return nil, err
		}
		return b.build(f)
	}
	semi := n.Kind == plan.SemiJoin || n.Kind == plan.AntiJoin
	leftKeys, rightKeys := slices.Clone(n.LeftKeys), slices.Clone(n.RightKeys)
	if len(leftKeys) == 0 {
		// A join without an equality condition (a cross join, a band or
		// inequality join, the LEFT JOIN ON true of a scalar subquery):
		// both sides get one constant join key, so every row meets every
		// row of the other side in one actor, and the condition decides
		// each pair — a nested-loop join with both sides in state. Right
		// for any condition; its cost per change is the other side's size.
		one := &expr.Const{Value: types.DBool(true), Typ: types.Bool}
		leftKeys, rightKeys = []expr.Expr{one}, []expr.Expr{one}
	}
	l, err := b.build(n.Left)
	if err != nil {
		return nil, err
	}
	r, err := b.build(n.Right)
	if err != nil {
		return nil, err
	}
	nl, nr := len(n.Left.Schema()), len(n.Right.Schema())
	// Both sides hash and compare their keys by value: give each pair one
	// type (INT = BIGINT compares as bigint, as PostgreSQL does).
	for i := range leftKeys {
		lt, rt := leftKeys[i].Type(), rightKeys[i].Type()
		if lt == rt {
			continue
		}
		t, err := expr.CommonType([]types.Type{lt, rt}, "JOIN")
		if err != nil {
			return nil, err
		}
		if leftKeys[i], err = expr.NewCast(leftKeys[i], t, expr.CastImplicit); err != nil {
			return nil, err
		}
		if rightKeys[i], err = expr.NewCast(rightKeys[i], t, expr.CastImplicit); err != nil {
			return nil, err
		}
	}
	// A side the join may NULL-pad (the right of LEFT JOIN, the left of
	// RIGHT JOIN, both of FULL JOIN) carries a hidden constant true,
	// join_present, which is NULL in its padded rows; it joins the stream
	// key, so a padded row never shares a key with a real row whose key
	// columns are NULL (a one-row global aggregate has no key columns at
	// all: TestViewDifferential seed 1796273048054303955 made two such rows
	// of a FULL JOIN collide).
	padLeft := n.Kind == plan.RightJoin || n.Kind == plan.FullJoin
	padRight := n.Kind == plan.LeftJoin || n.Kind == plan.FullJoin
	withKeys := func(side *Node, keys []expr.Expr, padded bool) (*Node, []int, int) {
		exprs := colRefs(side, seq(0, len(side.Schema)))
		out := slices.Clone(side.Schema)
		var idx []int
		for i, k := range keys {
			exprs = append(exprs, k)
			out = append(out, plan.Column{Name: fmt.Sprintf("join_key_%d", i), Type: k.Type(), Hidden: true})
			idx = append(idx, len(exprs)-1)
		}
		present := -1
		if padded {
			exprs = append(exprs, &expr.Const{Value: types.DBool(true), Typ: types.Bool})
			out = append(out, plan.Column{Name: "join_present", Type: types.Bool, Hidden: true})
			present = len(exprs) - 1
		}
		p := &Node{Op: OpProject, Inputs: []*Node{side}, Schema: out, Key: side.Key, Dist: side.Dist, Exprs: exprs}
		return exchange(p, Dist{Kind: DistHash, Keys: idx}), idx, present
	}
	lp, lk, lPresent := withKeys(l, leftKeys, padLeft)
	rp, rk, rPresent := withKeys(r, rightKeys, padRight)
	wl := len(lp.Schema)
	// The residual condition was bound against left logical ++ right
	// logical columns; the join evaluates it over the physical rows.
	var cond expr.Expr
	if n.Cond != nil {
		mapping := make([]int, nl+nr)
		for i := 0; i < nl; i++ {
			mapping[i] = i
		}
		for i := 0; i < nr; i++ {
			mapping[nl+i] = wl + i
		}
		cond = Remap(n.Cond, mapping)
	}
	joinSchema := append(slices.Clone(lp.Schema), rp.Schema...)
	// The stream key holds both sides' keys and the join keys. Rows are
	// distributed by join key, so the two halves of an update that changes
	// a row's join key take different actors and may reach downstream in
	// either order; with the join key in the stream key they are different
	// rows, and their order cannot matter. (A view over a one-row
	// aggregate LEFT JOIN t met this: its NULL-padded row re-inserted
	// before the old one was deleted.)
	var key []int
	addKey := func(cols ...int) {
		for _, c := range cols {
			if !slices.Contains(key, c) {
				key = append(key, c)
			}
		}
	}
	addKey(l.Key...)
	addKey(lk...)
	if lPresent >= 0 {
		addKey(lPresent)
	}
	if semi {
		// Semi and anti joins output left rows only, each at most once.
		joinSchema = slices.Clone(lp.Schema)
	} else {
		for _, k := range r.Key {
			addKey(wl + k)
		}
		for _, k := range rk {
			addKey(wl + k)
		}
		if rPresent >= 0 {
			addKey(wl + rPresent)
		}
	}
	j := &Node{Op: OpHashJoin, Inputs: []*Node{lp, rp}, Schema: joinSchema, Key: key,
		Dist: Dist{Kind: DistHash, Keys: lk}, JoinKind: n.Kind, LeftKeys: lk, RightKeys: rk, Cond: cond}
	if n.Kind == plan.RightJoin || n.Kind == plan.FullJoin {
		// NULL-padded left rows hash nowhere in particular.
		j.Dist = Dist{Kind: DistAny}
	}
	// Shape the output: logical columns, then the stream key.
	outCols := seq(0, nl)
	if !semi {
		for i := 0; i < nr; i++ {
			outCols = append(outCols, wl+i)
		}
	}
	return b.project(j, colRefs(j, outCols), n.Out), nil
}

// constInt evaluates a constant LIMIT/OFFSET expression.
func constInt(e expr.Expr, what string) (int64, error) {
	if e == nil {
		return -1, nil
	}
	d, err := e.Eval(&expr.EvalContext{}, nil)
	if err != nil {
		return 0, unsupported("%s must be a constant in a materialized view", what)
	}
	if d.IsNull() {
		return -1, nil
	}
	switch d.Kind() {
	case types.KindInt16, types.KindInt32, types.KindInt64:
		if d.Int() < 0 {
			return 0, unsupported("%s must not be negative", what)
		}
		return d.Int(), nil
	}
	return 0, unsupported("%s must be an integer constant in a materialized view", what)
}

func (b *builder) topN(input plan.Node, keys []plan.SortKey, limitE, offsetE expr.Expr, withTies bool) (*Node, error) {
	limit, err := constInt(limitE, "LIMIT")
	if err != nil {
		return nil, err
	}
	offset, err := constInt(offsetE, "OFFSET")
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		offset = 0
	}
	if limit < 0 && offset == 0 {
		return b.build(input)
	}
	in, err := b.build(input)
	if err != nil {
		return nil, err
	}
	pre, order := orderedInput(in, keys, nil)
	ex := exchange(pre, Dist{Kind: DistSingle})
	n := &Node{Op: OpTopN, Inputs: []*Node{ex}, Schema: pre.Schema, Key: pre.Key, Dist: Dist{Kind: DistSingle},
		Order: order, Limit: limit, Offset: offset, InputKey: pre.Key}
	if withTies && limit >= 0 {
		for _, o := range order[:len(keys)] {
			n.TieCols = append(n.TieCols, o.Col)
		}
	}
	return n, nil
}

// orderedInput prepares in for a top-N: sort keys that are not plain
// columns become hidden computed columns, and the order is the keys
// (leaving out the columns in skip) then in's stream key, a total order, so
// ties break the same way at every recomputation.
func orderedInput(in *Node, keys []plan.SortKey, skip []int) (*Node, []OrderCol) {
	exprs := colRefs(in, seq(0, len(in.Schema)))
	out := slices.Clone(in.Schema)
	var order []OrderCol
	for i, k := range keys {
		if c, ok := k.Expr.(*expr.ColumnRef); ok {
			if !slices.Contains(skip, c.Index) {
				order = append(order, OrderCol{Col: c.Index, Desc: k.Desc, NullsFirst: k.NullsFirst})
			}
			continue
		}
		exprs = append(exprs, k.Expr)
		out = append(out, plan.Column{Name: fmt.Sprintf("order_%d", i), Type: k.Expr.Type(), Hidden: true})
		order = append(order, OrderCol{Col: len(exprs) - 1, Desc: k.Desc, NullsFirst: k.NullsFirst})
	}
	for _, k := range in.Key {
		order = append(order, OrderCol{Col: k})
	}
	if len(exprs) == len(in.Schema) {
		return in, order
	}
	return &Node{Op: OpProject, Inputs: []*Node{in}, Schema: out, Key: in.Key, Dist: in.Dist, Exprs: exprs}, order
}

// distinctOn plans DISTINCT ON (on) ... ORDER BY keys as a top-1 per group
// of equal on values, hash-distributed by them: the first row by the ORDER
// BY keys that follow the DISTINCT ON prefix, ties broken by the input's
// stream key (PostgreSQL leaves the choice among ties unspecified; a view
// must make the same one at every recomputation).
func (b *builder) distinctOn(n *plan.Distinct) (*Node, error) {
	srt, ok := n.Input.(*plan.Sort)
	if !ok {
		return nil, unsupported("DISTINCT ON of this form in a materialized view is not supported yet")
	}
	in, err := b.build(srt.Input)
	if err != nil {
		return nil, err
	}
	var group []int
	for _, e := range n.On {
		c, ok := e.(*expr.ColumnRef)
		if !ok {
			return nil, unsupported("DISTINCT ON of an expression in a materialized view is not supported yet")
		}
		group = append(group, c.Index)
	}
	// The group columns are constant within a group: not order keys.
	pre, order := orderedInput(in, srt.Keys, group)
	// One row per group: the group columns are a stream key of the output;
	// the input key keeps rows of a group that changes its first row apart.
	key := slices.Clone(group)
	for _, k := range pre.Key {
		if !slices.Contains(key, k) {
			key = append(key, k)
		}
	}
	dist := Dist{Kind: DistHash, Keys: group}
	ex := exchange(pre, dist)
	top := &Node{Op: OpTopN, Inputs: []*Node{ex}, Schema: pre.Schema, Key: key, Dist: dist,
		GroupKey: group, Order: order, Limit: 1, InputKey: pre.Key}
	if len(pre.Schema) == len(n.Schema()) {
		return top, nil
	}
	// Drop the computed order columns again (keeping the key's).
	return b.project(top, colRefs(top, seq(0, len(n.Schema()))), n.Schema()), nil
}

// distinct keeps one row per distinct value of the first n columns.
func (b *builder) distinct(in *Node, n int) *Node {
	logical := in
	if len(in.Schema) != n {
		logical = &Node{Op: OpProject, Inputs: []*Node{in}, Schema: in.Schema[:n], Key: nil, Dist: Dist{Kind: DistAny},
			Exprs: colRefs(in, seq(0, n))}
	}
	ex := exchange(logical, Dist{Kind: DistHash, Keys: seq(0, n)})
	return &Node{Op: OpDistinct, Inputs: []*Node{ex}, Schema: in.Schema[:n], Key: seq(0, n),
		Dist: Dist{Kind: DistHash, Keys: seq(0, n)}, GroupKey: seq(0, n), InputKey: in.Key}
}

// setOp plans UNION [ALL]: each branch projects the logical columns, every
// branch's stream key (NULL in the other branches) and its branch number,
// which together identify a row of the union.
func (b *builder) setOp(n *plan.SetOp) (*Node, error) {
	if n.Kind != plan.Union {
		return b.intersectExcept(n) // see setop.go
	}
	var branches []plan.Node
	var flatten func(p plan.Node)
	flatten = func(p plan.Node) {
		if s, ok := p.(*plan.SetOp); ok && s.Kind == plan.Union && s.All {
			flatten(s.Left)
			flatten(s.Right)
			return
		}
		branches = append(branches, p)
	}
	if n.All {
		flatten(n.Left)
		flatten(n.Right)
	} else {
		branches = []plan.Node{n.Left, n.Right}
	}
	ins := make([]*Node, len(branches))
	for i, br := range branches {
		in, err := b.build(br)
		if err != nil {
			return nil, err
		}
		ins[i] = in
	}
	width := len(n.Out)
	schema := slices.Clone(n.Out)
	keyStart := make([]int, len(ins))
	for i, in := range ins {
		keyStart[i] = len(schema)
		for _, k := range in.Key {
			c := in.Schema[k]
			schema = append(schema, plan.Column{Name: fmt.Sprintf("branch_%d_%s", i, c.Name), Type: c.Type, Hidden: true})
		}
	}
	schema = append(schema, plan.Column{Name: "branch", Type: types.Int32, Hidden: true})
	key := seq(width, len(schema)-width)
	var projected []*Node
	for i, in := range ins {
		exprs := colRefs(in, seq(0, width))
		for j, other := range ins {
			for _, k := range other.Key {
				if j == i {
					exprs = append(exprs, &expr.ColumnRef{Index: k, Typ: in.Schema[k].Type, Name: in.Schema[k].Name})
				} else {
					exprs = append(exprs, &expr.Const{Value: types.NullDatum, Typ: other.Schema[k].Type})
				}
			}
		}
		exprs = append(exprs, &expr.Const{Value: types.DInt32(int32(i)), Typ: types.Int32})
		p := &Node{Op: OpProject, Inputs: []*Node{in}, Schema: schema, Key: key, Dist: Dist{Kind: DistAny}, Exprs: exprs}
		// Every branch is exchanged by the union's key, so that the union's
		// actors each merge their share of every branch (branches may run at
		// different parallelism).
		projected = append(projected, exchange(p, Dist{Kind: DistHash, Keys: key}))
	}
	u := &Node{Op: OpUnionAll, Inputs: projected, Schema: schema, Key: key, Dist: Dist{Kind: DistHash, Keys: key}}
	if n.All {
		return u, nil
	}
	return b.distinct(u, width), nil
}

// materialize ends the plan: rows are hashed by the stream key (unless
// already colocated by it) and written to the view's state table.
//
// A view's rows are stored by vnode | key, the vnode hashed from the
// distribution key. A lookup by a key prefix reads one key range only when
// that prefix covers the distribution key; otherwise it seeks in each of
// the 256 vnodes. A join's output is distributed by the join key, which
// sits behind the left side's key in the view's key (orders joined with
// customers: key (order id, customer id), distribution customer id), so
// `WHERE id = $1` on such a view would always fan out. Like RisingWave,
// which shuffles a join's output by the stream key before its
// Materialize (also to spread a skewed join key), such a view is
// redistributed — here by its leading key column, so that lookups by it
// read one vnode. The price is one more exchange per changed row.
func (b *builder) materialize(in *Node) *Node {
	var in2 *Node
	switch {
	case in.Dist.Kind == DistSingle || len(in.Key) == 0:
		in2 = exchange(in, Dist{Kind: DistSingle})
	case in.Dist.Kind != DistHash || !subset(in.Dist.Keys, in.Key):
		in2 = exchange(in, Dist{Kind: DistHash, Keys: in.Key})
	case !keyPrefix(in.Dist.Keys, in.Key):
		in2 = exchange(in, Dist{Kind: DistHash, Keys: in.Key[:1]})
	default:
		in2 = in
	}
	return &Node{Op: OpMaterialize, Inputs: []*Node{in2}, Schema: in.Schema, Key: in.Key, Dist: in2.Dist}
}

// keyPrefix reports whether the columns dist are a prefix of key (in any
// order): a lookup by that prefix of the key then fixes the vnode.
func keyPrefix(dist, key []int) bool {
	if len(dist) > len(key) {
		return false
	}
	for _, c := range key[:len(dist)] {
		if !slices.Contains(dist, c) {
			return false
		}
	}
	return true
}

func subset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// sortsLike reports whether ordering by arg orders rows as ordering by key:
// the same expression, or key cast between string types (string_agg's
// varchar argument is cast to text; both sort alike).
func sortsLike(arg, key expr.Expr) bool {
	if arg.String() == key.String() && arg.Type() == key.Type() {
		return true
	}
	c, ok := arg.(*expr.CastExpr)
	return ok && c.E.String() == key.String() && isString(c.E.Type()) && isString(c.To)
}

func isString(t types.Type) bool { return t.Kind == types.KindVarchar }
