package binder

import (
	"fmt"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// selItem is one output column of a select list (or a junk column added
// for ORDER BY / DISTINCT ON).
type selItem struct {
	e    expr.Expr
	name string
	ast  *pg.Node
}

// bindSelect binds a full query at one level; outer is the scope of the
// enclosing query (nil at top level).
func (b *Binder) bindSelect(sel *pg.SelectStmt, outer *scope) (plan.Node, error) {
	if sel == nil {
		return nil, unsupported("unsupported query")
	}
	if sel.WithClause != nil {
		frame := map[string]*cteDef{}
		b.ctes = append(b.ctes, frame)
		defer func() { b.ctes = b.ctes[:len(b.ctes)-1] }()
		for _, c := range sel.WithClause.Ctes {
			cte := c.GetCommonTableExpr()
			if _, dup := frame[cte.Ctename]; dup {
				return nil, b.errorf(cte.Location, "42712", "WITH query name \"%s\" specified more than once", cte.Ctename)
			}
			q := cte.Ctequery.GetSelectStmt()
			if q == nil {
				return nil, b.errorf(cte.Location, sqlerr.FeatureNotSupported, "data-modifying statements in WITH are not supported")
			}
			if sel.WithClause.Recursive && selfReferences(cte.Ctequery, cte.Ctename) > 0 {
				n, err := b.bindRecursiveCTE(cte, q, frame, outer) // see recursive.go
				if err != nil {
					return nil, err
				}
				frame[cte.Ctename] = &cteDef{node: n}
				continue
			}
			n, err := b.bindSelect(q, outer)
			if err != nil {
				return nil, err
			}
			if n, err = resolveUnknownColumns(n); err != nil {
				return nil, err
			}
			if n, err = b.aliasColumns(n, &pg.Alias{Aliasname: cte.Ctename, Colnames: cte.Aliascolnames}, cte.Location); err != nil {
				return nil, err
			}
			frame[cte.Ctename] = &cteDef{node: n}
		}
	}
	if sel.IntoClause != nil {
		return nil, unsupported("SELECT INTO is not supported")
	}
	if len(sel.LockingClause) > 0 {
		return nil, unsupported("SELECT ... FOR UPDATE/SHARE is not supported")
	}
	var node plan.Node
	var err error
	switch {
	case sel.Op != pg.SetOperation_SETOP_NONE:
		node, err = b.bindSetOp(sel, outer)
	case len(sel.ValuesLists) > 0:
		node, err = b.bindValues(sel.ValuesLists, outer)
	default:
		return b.bindSimpleSelect(sel, outer)
	}
	if err != nil {
		return nil, err
	}
	// ORDER BY / LIMIT on a set operation or VALUES see only output columns.
	sc := &scope{parent: outer, width: len(node.Schema())}
	sc.addTable("", node.Schema(), 0)
	var keys []plan.SortKey
	for _, s := range sel.SortClause {
		sb := s.GetSortBy()
		idx, ok, err := b.outputRef(sb.Node, outputNames(node.Schema()))
		if err != nil {
			return nil, err
		}
		var e expr.Expr
		if ok {
			c := node.Schema()[idx]
			e = &expr.ColumnRef{Index: idx, Typ: c.Type, Name: c.Name}
		} else if e, err = b.bindExpr(sb.Node, &exprCtx{sc: sc, clause: "ORDER BY"}); err != nil {
			return nil, err
		}
		k, err := sortKey(sb, e)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if len(keys) > 0 {
		node = &plan.Sort{Input: node, Keys: keys}
	}
	return b.bindLimit(sel, node, outer)
}

func outputNames(s plan.Schema) []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.Name
	}
	return out
}

// outputRef resolves an ORDER BY / GROUP BY / DISTINCT ON item that names
// an output column: an integer constant (ordinal) or a bare name.
func (b *Binder) outputRef(n *pg.Node, names []string) (int, bool, error) {
	if c := n.GetAConst(); c != nil {
		if iv := c.GetIval(); iv != nil {
			i := int(iv.Ival)
			if i < 1 || i > len(names) {
				return 0, false, b.errorf(c.Location, sqlerr.InvalidColumnReference, "ORDER BY position %d is not in select list", i)
			}
			return i - 1, true, nil
		}
		return 0, false, b.errorf(c.Location, sqlerr.SyntaxError, "non-integer constant in ORDER BY")
	}
	cr := n.GetColumnRef()
	if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetString_() == nil {
		return 0, false, nil
	}
	name := cr.Fields[0].GetString_().Sval
	hit := -1
	for i, nm := range names {
		if nm == name {
			if hit >= 0 {
				return 0, false, b.errorf(cr.Location, sqlerr.AmbiguousColumn, "ORDER BY \"%s\" is ambiguous", name)
			}
			hit = i
		}
	}
	return hit, hit >= 0, nil
}

func (b *Binder) bindLimit(sel *pg.SelectStmt, node plan.Node, outer *scope) (plan.Node, error) {
	withTies := sel.LimitOption == pg.LimitOption_LIMIT_OPTION_WITH_TIES
	if _, sorted := node.(*plan.Sort); withTies && !sorted {
		return nil, sqlerr.New(sqlerr.SyntaxError, "WITH TIES cannot be specified without ORDER BY clause")
	}
	if sel.LimitCount == nil && sel.LimitOffset == nil {
		return node, nil
	}
	ec := &exprCtx{sc: &scope{parent: outer}, clause: "LIMIT"}
	bind := func(n *pg.Node, what string) (expr.Expr, error) {
		if n == nil {
			return nil, nil
		}
		if c := n.GetAConst(); c != nil && c.Isnull {
			return nil, nil // LIMIT NULL / LIMIT ALL
		}
		ec.clause = what
		e, err := b.bindExpr(n, ec)
		if err != nil {
			return nil, err
		}
		e = b.retypeParam(e, types.Int64)
		c, err := expr.NewCast(e, types.Int64, expr.CastImplicit)
		if err != nil {
			return nil, b.errorf(location(n), sqlerr.DatatypeMismatch, "argument of %s must be type bigint, not type %s", what, e.Type().Name())
		}
		return c, nil
	}
	lim, err := bind(sel.LimitCount, "LIMIT")
	if err != nil {
		return nil, err
	}
	off, err := bind(sel.LimitOffset, "OFFSET")
	if err != nil {
		return nil, err
	}
	if withTies && lim == nil {
		// FETCH FIRST NULL ROWS WITH TIES (PostgreSQL checks it when the
		// statement runs; the count here is a constant NULL).
		return nil, sqlerr.New("2201W", "row count cannot be null in FETCH FIRST ... WITH TIES clause")
	}
	if lim == nil && off == nil {
		return node, nil
	}
	if s, ok := node.(*plan.Sort); ok {
		return &plan.TopN{Input: s.Input, Keys: s.Keys, Limit: lim, Offset: off, WithTies: withTies}, nil
	}
	return &plan.Limit{Input: node, Limit: lim, Offset: off}, nil
}

func (b *Binder) bindValues(lists []*pg.Node, outer *scope) (plan.Node, error) {
	ec := &exprCtx{sc: &scope{parent: outer}, clause: "VALUES"}
	var rows [][]expr.Expr
	for _, l := range lists {
		row, err := b.bindList(l.GetList().GetItems(), ec)
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 && len(row) != len(rows[0]) {
			return nil, b.errorf(location(l.GetList().GetItems()[0]), sqlerr.SyntaxError, "VALUES lists must all be the same length")
		}
		rows = append(rows, row)
	}
	width := len(rows[0])
	out := make(plan.Schema, width)
	for c := 0; c < width; c++ {
		ts := make([]types.Type, len(rows))
		for r := range rows {
			ts[r] = rows[r][c].Type()
		}
		var t types.Type
		if len(rows) == 1 {
			t = ts[0] // a single row keeps unknown literals unknown
		} else {
			var err error
			if t, err = commonType(ts, "VALUES"); err != nil {
				return nil, err
			}
			for r := range rows {
				e := b.retypeParam(rows[r][c], t)
				if rows[r][c], err = expr.NewCast(e, t, expr.CastImplicit); err != nil {
					return nil, err
				}
			}
		}
		out[c] = plan.Column{Name: fmt.Sprintf("column%d", c+1), Type: t}
	}
	return &plan.Values{Rows: rows, Out: out}, nil
}

func (b *Binder) bindSetOp(sel *pg.SelectStmt, outer *scope) (plan.Node, error) {
	l, err := b.bindSelect(sel.Larg, outer)
	if err != nil {
		return nil, err
	}
	r, err := b.bindSelect(sel.Rarg, outer)
	if err != nil {
		return nil, err
	}
	var kind plan.SetOpKind
	var ctx string
	switch sel.Op {
	case pg.SetOperation_SETOP_UNION:
		kind, ctx = plan.Union, "UNION"
	case pg.SetOperation_SETOP_INTERSECT:
		kind, ctx = plan.Intersect, "INTERSECT"
	default:
		kind, ctx = plan.Except, "EXCEPT"
	}
	ls, rs := visible(l.Schema()), visible(r.Schema())
	if len(ls) != len(l.Schema()) {
		l = projectVisible(l)
	}
	if len(rs) != len(r.Schema()) {
		r = projectVisible(r)
	}
	if len(ls) != len(rs) {
		return nil, sqlerr.Errorf(sqlerr.SyntaxError, "each %s query must have the same number of columns", ctx)
	}
	out := make(plan.Schema, len(ls))
	lx := make([]expr.Expr, len(ls))
	rx := make([]expr.Expr, len(ls))
	needL, needR := false, false
	for i := range ls {
		t, err := commonType([]types.Type{ls[i].Type, rs[i].Type}, ctx)
		if err != nil {
			return nil, err
		}
		if t.Kind == types.KindUnknown {
			t = types.Text
		}
		out[i] = plan.Column{Name: ls[i].Name, Type: t}
		if lx[i], err = expr.NewCast(&expr.ColumnRef{Index: i, Typ: ls[i].Type, Name: ls[i].Name}, t, expr.CastImplicit); err != nil {
			return nil, err
		}
		if rx[i], err = expr.NewCast(&expr.ColumnRef{Index: i, Typ: rs[i].Type, Name: rs[i].Name}, t, expr.CastImplicit); err != nil {
			return nil, err
		}
		needL = needL || ls[i].Type != t
		needR = needR || rs[i].Type != t
	}
	if needL {
		l = &plan.Project{Input: l, Exprs: lx, Out: withTypes(ls, out)}
	}
	if needR {
		r = &plan.Project{Input: r, Exprs: rx, Out: withTypes(rs, out)}
	}
	return &plan.SetOp{Kind: kind, All: sel.All, Left: l, Right: r, Out: out}, nil
}

func withTypes(names, typed plan.Schema) plan.Schema {
	out := make(plan.Schema, len(names))
	for i := range names {
		out[i] = plan.Column{Name: names[i].Name, Type: typed[i].Type}
	}
	return out
}

// bindSimpleSelect binds SELECT ... FROM ... WHERE ... GROUP BY ...
// HAVING ... WINDOW ... ORDER BY ... LIMIT.
func (b *Binder) bindSimpleSelect(sel *pg.SelectStmt, outer *scope) (plan.Node, error) {
	r, err := b.bindFrom(sel.FromClause, outer)
	if err != nil {
		return nil, err
	}
	sc := r.sc
	var semis []*semiJoin
	if sel.WhereClause != nil {
		if containsAggregate(sel.WhereClause) {
			return nil, b.errorf(aggregateLocation(sel.WhereClause), sqlerr.GroupingError, "aggregate functions are not allowed in WHERE")
		}
		if containsWindow(sel.WhereClause) {
			return nil, b.errorf(windowLocation(sel.WhereClause), sqlerr.WindowingError, "window functions are not allowed in WHERE")
		}
		for _, c := range conjuncts(sel.WhereClause) {
			sj, err := b.trySemiJoin(c, r)
			if err != nil {
				return nil, err
			}
			if sj != nil {
				semis = append(semis, sj)
				continue
			}
			tabs, movable := b.refTables(c, r)
			if !movable {
				r.filters = append(r.filters, c)
				continue
			}
			b.pushDown(r, c, tabs)
		}
	}
	node, err := b.build(r)
	if err != nil {
		return nil, err
	}
	for _, sj := range semis {
		node = sj.apply(node)
	}

	// Select-list expansion (*, t.*) happens first: GROUP BY ordinals and
	// ORDER BY refer to it.
	targets, err := b.expandTargets(sel.TargetList, sc)
	if err != nil {
		return nil, err
	}

	hasAgg := len(sel.GroupClause) > 0 || sel.HavingClause != nil
	for _, t := range targets {
		if t.ast != nil && (containsAggregate(t.ast) || containsGrouping(t.ast)) {
			hasAgg = true
		}
	}
	for _, s := range sel.SortClause {
		if containsAggregate(s.GetSortBy().Node) || containsGrouping(s.GetSortBy().Node) {
			hasAgg = true
		}
	}
	ec := &exprCtx{sc: sc, clause: "SELECT"}
	var ac *aggCtx
	if hasAgg {
		ac = &aggCtx{input: sc, keys: map[string]int{}, aggIdx: map[string]int{}}
		if err := b.bindGroupBy(sel, targets, ac); err != nil {
			return nil, err
		}
		if ac.sets != nil {
			ac.addGroupingSetColumn(len(node.Schema())) // see grouping.go
		}
		ac.out = &scope{parent: sc.parent}
		for i, g := range ac.group {
			if cr, ok := g.(*expr.ColumnRef); ok {
				for _, c := range sc.cols {
					if ref, ok := c.e.(*expr.ColumnRef); ok && ref.Index == cr.Index {
						c.e = ac.groupRef(i)
						ac.out.cols = append(ac.out.cols, c)
					}
				}
			}
		}
		ec = &exprCtx{sc: ac.out, clause: "SELECT", agg: ac}
	}
	wc := &winCtx{named: map[string]*pg.WindowDef{}}
	for _, w := range sel.WindowClause {
		wd := w.GetWindowDef()
		if _, dup := wc.named[wd.Name]; dup {
			return nil, b.errorf(wd.Location, sqlerr.WindowingError, "window \"%s\" is already defined", wd.Name)
		}
		// A window may build on one defined before it in the list (as in
		// PostgreSQL), so resolving in order never meets a cycle: before,
		// WINDOW w AS () resolved w through itself until the stack overflowed.
		own := &pg.WindowDef{Refname: wd.Refname, PartitionClause: wd.PartitionClause, OrderClause: wd.OrderClause,
			FrameOptions: wd.FrameOptions, StartOffset: wd.StartOffset, EndOffset: wd.EndOffset, Location: wd.Location}
		r, err := b.resolveWindowDef(own, wc)
		if err != nil {
			return nil, err
		}
		wc.named[wd.Name] = r
	}
	if hasAgg {
		wc.base = len(ac.group) // aggregates are appended after binding
	} else {
		wc.base = len(node.Schema())
	}
	ec.win = wc

	var items []selItem
	var nOut int
	var having expr.Expr
	var distinctOn []int
	type orderItem struct {
		idx int
		sb  *pg.SortBy
	}
	var order []orderItem
	isDistinct := len(sel.DistinctClause) > 0
	var srfs []*plan.SRFCall
	bindItems := func() error {
		items, having, distinctOn, order, srfs = nil, nil, nil, nil, nil
		// The select list.
		for _, t := range targets {
			if t.e != nil { // from * expansion
				if hasAgg {
					e, ok, err := b.aggHook(t.ast, ec)
					if err != nil {
						return err
					}
					if !ok {
						return sqlerr.New(sqlerr.InternalError, "unexpected * in aggregate query")
					}
					t.e = e
				}
				items = append(items, t)
				continue
			}
			if fc := t.ast.GetFuncCall(); fc != nil && fc.Over == nil && isSRFName(fc) {
				e, err := b.bindSRF(fc, ec, hasAgg, &srfs, len(node.Schema()))
				if err != nil {
					return err
				}
				t.e = e
				items = append(items, t)
				continue
			}
			if fc, ind := srfFieldSelect(t.ast); fc != nil {
				e, err := b.bindSRF(fc, ec, hasAgg, &srfs, len(node.Schema()))
				if err != nil {
					return err
				}
				if t.e, err = b.selectFields(e, ind); err != nil {
					return err
				}
				items = append(items, t)
				continue
			}
			e, err := b.bindExpr(t.ast, ec)
			if err != nil {
				return err
			}
			t.e = e
			items = append(items, t)
		}
		nOut = len(items)

		// HAVING.
		if sel.HavingClause != nil {
			hc := &exprCtx{sc: ec.sc, clause: "HAVING", agg: ac}
			if containsWindow(sel.HavingClause) {
				return b.errorf(windowLocation(sel.HavingClause), sqlerr.WindowingError, "window functions are not allowed in HAVING")
			}
			h, err := b.bindExpr(sel.HavingClause, hc)
			if err != nil {
				return err
			}
			if having, err = expr.CoerceBool(h, "HAVING"); err != nil {
				return err
			}
		}

		// DISTINCT ON and ORDER BY may add junk columns.
		names := make([]string, nOut)
		for i, it := range items {
			names[i] = it.name
		}
		findOrAdd := func(n *pg.Node, what string) (int, error) {
			idx, ok, err := b.outputRef(n, names)
			if err != nil {
				if e := sqlerr.From(err); e != nil && what != "ORDER BY" {
					e.Message = what + e.Message[len("ORDER BY"):]
				}
				return 0, err
			}
			if ok {
				return idx, nil
			}
			e, err := b.bindExpr(n, ec)
			if err != nil {
				return 0, err
			}
			s := e.String()
			for i, it := range items {
				if it.e.String() == s {
					return i, nil
				}
			}
			items = append(items, selItem{e: e, name: "?junk?", ast: n})
			return len(items) - 1, nil
		}
		if isDistinct && !(len(sel.DistinctClause) == 1 && (sel.DistinctClause[0] == nil || sel.DistinctClause[0].GetNode() == nil)) {
			for _, d := range sel.DistinctClause {
				i, err := findOrAdd(d, "SELECT DISTINCT ON")
				if err != nil {
					return err
				}
				distinctOn = append(distinctOn, i)
			}
		}
		for _, s := range sel.SortClause {
			sb := s.GetSortBy()
			i, err := findOrAdd(sb.Node, "ORDER BY")
			if err != nil {
				return err
			}
			order = append(order, orderItem{i, sb})
		}
		return nil
	}
	if err := bindItems(); err != nil {
		return nil, err
	}
	if hasAgg && len(wc.calls) > 0 && len(ac.aggs) > 0 {
		// Window placeholders must point past the aggregates, whose number
		// is known only now: bind again (aggregates dedupe to the same
		// indices).
		wc.base = len(ac.group) + len(ac.aggs)
		wc.calls = nil
		if err := bindItems(); err != nil {
			return nil, err
		}
	}
	if isDistinct && distinctOn == nil && len(items) > nOut {
		return nil, b.errorf(location(order[0].sb.Node), sqlerr.InvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
	}
	if distinctOn != nil {
		// PostgreSQL: DISTINCT ON expressions must match the leftmost
		// ORDER BY expressions.
		for k := 0; k < len(order) && k < len(distinctOn); k++ {
			match := false
			for _, d := range distinctOn {
				if d == order[k].idx {
					match = true
				}
			}
			if !match {
				return nil, b.errorf(location(order[k].sb.Node), sqlerr.InvalidColumnReference, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
			}
		}
	}

	// Build: Aggregate -> HAVING -> Window -> Project.
	if hasAgg {
		agg := &plan.Aggregate{Input: node, GroupBy: ac.group, Aggs: ac.aggs}
		if ac.sets != nil {
			agg = ac.groupingAggregate(node) // Expand under the Aggregate
		}
		for _, g := range ac.group {
			agg.Out = append(agg.Out, plan.Column{Name: g.String(), Type: g.Type()})
		}
		for _, a := range ac.aggs {
			agg.Out = append(agg.Out, plan.Column{Name: a.Name, Type: a.Type})
		}
		node = agg
		if having != nil {
			node = &plan.Filter{Input: node, Cond: having}
		}
	}
	if len(srfs) > 0 {
		if len(wc.calls) > 0 {
			return nil, unsupported("set-returning functions together with window functions are not supported")
		}
		ps := &plan.ProjectSet{Input: node, Calls: srfs, Out: append(plan.Schema{}, node.Schema()...)}
		for _, c := range srfs {
			ps.Out = append(ps.Out, plan.Column{Name: c.Name, Type: c.Type})
		}
		node = ps
	}
	if len(wc.calls) > 0 {
		w := &plan.Window{Input: node, Calls: wc.calls}
		w.Out = append(plan.Schema{}, node.Schema()...)
		for _, c := range wc.calls {
			w.Out = append(w.Out, plan.Column{Name: c.Name, Type: c.Type})
		}
		node = w
	}
	proj := &plan.Project{Input: node}
	for i, it := range items {
		e := it.e
		if i < nOut && e.Type().Kind == types.KindUnknown && (len(sel.SortClause) > 0 || isDistinct) {
			// sorting or comparing needs a type: unknown becomes text.
			if e, err = expr.ResolveUnknown(e); err != nil {
				return nil, err
			}
		}
		proj.Exprs = append(proj.Exprs, e)
		out := plan.Column{Name: it.name, Type: e.Type(), Hidden: i >= nOut}
		if ref, ok := e.(*expr.ColumnRef); ok && ref.Index < len(node.Schema()) {
			in := node.Schema()[ref.Index]
			out.OrigRel, out.OrigAtt = in.OrigRel, in.OrigAtt
		}
		proj.Out = append(proj.Out, out)
	}
	node = proj
	col := func(i int) expr.Expr {
		return &expr.ColumnRef{Index: i, Typ: proj.Out[i].Type, Name: items[i].name}
	}
	var keys []plan.SortKey
	for _, o := range order {
		k, err := sortKey(o.sb, col(o.idx))
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	switch {
	case distinctOn != nil:
		// PostgreSQL sorts by the DISTINCT ON expressions first when ORDER
		// BY does not start with them (they must match its prefix).
		if len(keys) < len(distinctOn) {
			seen := map[int]bool{}
			for _, o := range order {
				seen[o.idx] = true
			}
			for _, d := range distinctOn {
				if !seen[d] {
					keys = append(keys, plan.SortKey{Expr: col(d)})
				}
			}
		}
		node = &plan.Sort{Input: node, Keys: keys}
		on := make([]expr.Expr, len(distinctOn))
		for i, d := range distinctOn {
			on[i] = col(d)
		}
		node = &plan.Distinct{Input: node, On: on}
	case isDistinct:
		node = &plan.Distinct{Input: node}
		if len(keys) > 0 {
			node = &plan.Sort{Input: node, Keys: keys}
		}
	case len(keys) > 0:
		node = &plan.Sort{Input: node, Keys: keys}
	}
	if node, err = b.bindLimit(sel, node, outer); err != nil {
		return nil, err
	}
	if len(items) > nOut {
		exprs := make([]expr.Expr, nOut)
		for i := range exprs {
			exprs[i] = col(i)
		}
		node = &plan.Project{Input: node, Exprs: exprs, Out: proj.Out[:nOut]}
	}
	return node, nil
}

// expandTargets expands * and t.* and names the output columns. Items from
// * carry their bound expression; others only their AST.
func (b *Binder) expandTargets(list []*pg.Node, sc *scope) ([]selItem, error) {
	var out []selItem
	for _, n := range list {
		rt := n.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			var cols []int
			if len(cr.Fields) == 1 {
				cols = sc.star
				if len(sc.tables) == 0 || (len(sc.cols) == 0) {
					if len(sc.tables) == 1 && sc.tables[0].name == "" {
						return nil, b.errorf(cr.Location, sqlerr.SyntaxError, "SELECT * with no tables specified is not valid")
					}
				}
			} else {
				t := cr.Fields[len(cr.Fields)-2].GetString_().GetSval()
				found := false
				for _, tab := range sc.tables {
					if tab.name == t {
						cols, found = tab.cols, true
					}
				}
				if !found {
					return nil, b.errorf(cr.Location, sqlerr.UndefinedTable, "missing FROM-clause entry for table \"%s\"", t)
				}
			}
			for _, i := range cols {
				c := sc.cols[i]
				ast := colAST(c)
				out = append(out, selItem{e: c.e, name: c.name, ast: ast})
			}
			continue
		}
		name := rt.Name
		if name == "" {
			name = nodeName(rt.Val)
		}
		out = append(out, selItem{name: name, ast: rt.Val})
	}
	return out, nil
}

// colAST builds a column reference AST for a scope column (used to match
// * columns against GROUP BY in aggregate queries).
func colAST(c scopeCol) *pg.Node {
	if c.table != "" && !c.unqualifiedOnly {
		return pg.MakeColumnRefNode([]*pg.Node{pg.MakeStrNode(c.table), pg.MakeStrNode(c.name)}, -1)
	}
	return pg.MakeColumnRefNode([]*pg.Node{pg.MakeStrNode(c.name)}, -1)
}

func isSRFName(fc *pg.FuncCall) bool {
	name := fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()
	if _, ok := expr.JSONSRFName(name); ok {
		return true
	}
	return name == "generate_series" || name == "unnest" || name == "generate_subscripts" || name == "_pg_expandarray"
}

// srfFieldSelect recognizes (f(...)).field at the top of a select item
// where f is a set-returning function (pgjdbc's
// (information_schema._pg_expandarray(i.indkey)).n).
func srfFieldSelect(n *pg.Node) (*pg.FuncCall, *pg.A_Indirection) {
	ind := n.GetAIndirection()
	if ind == nil {
		return nil, nil
	}
	if fc := ind.Arg.GetFuncCall(); fc != nil && fc.Over == nil && isSRFName(fc) {
		return fc, ind
	}
	return nil, nil
}

// bindSRF binds a set-returning function at the top of a select item; its
// value is a column that ProjectSet appends after the input's columns.
func (b *Binder) bindSRF(fc *pg.FuncCall, ec *exprCtx, hasAgg bool, srfs *[]*plan.SRFCall, base int) (expr.Expr, error) {
	if hasAgg {
		return nil, b.errorf(fc.Location, sqlerr.FeatureNotSupported, "set-returning functions in an aggregating query are not supported")
	}
	args, err := b.bindList(fc.Args, ec)
	if err != nil {
		return nil, err
	}
	name := fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()
	var typ types.Type
	jname, isJSON := expr.JSONSRFName(name)
	switch {
	case isJSON:
		if jname == "jsonb_each" || jname == "jsonb_each_text" {
			return nil, b.errorf(fc.Location, sqlerr.FeatureNotSupported, "%s in a select list (a record per key) is not supported: use it in FROM (FROM t, %s(t.col) AS e(key, value))", name, name)
		}
		if args, err = jsonSRFArgs(name, args); err != nil {
			return nil, b.errAt(err, fc.Location)
		}
		name, typ = jname, types.Jsonb
		if jname != "jsonb_array_elements" {
			typ = types.Text
		}
	case name == "unnest":
		// Runnel has no arrays; the vectors it has are the oidvector and
		// int2vector columns of the system catalogs (pg_proc.proargtypes,
		// pg_index.indkey).
		var ok bool
		if len(args) == 1 {
			typ, _, ok = args[0].Type().CatalogArray()
			if args[0].Type().IsArray() {
				typ, ok = args[0].Type().ElemType(), true
			}
		}
		if !ok {
			return nil, b.errorf(fc.Location, sqlerr.UndefinedFunction, "function unnest(%s) does not exist", argTypeNames(args))
		}
	case name == "generate_subscripts":
		// generate_subscripts(vector, 1): the vectors' subscripts start at
		// 0, as in PostgreSQL (SQLAlchemy orders index columns by them).
		if len(args) < 2 || len(args) > 3 {
			return nil, b.errorf(fc.Location, sqlerr.UndefinedFunction, "function generate_subscripts with %d arguments does not exist", len(args))
		}
		if _, _, ok := args[0].Type().CatalogArray(); !ok && !args[0].Type().IsArray() {
			return nil, b.errorf(fc.Location, sqlerr.FeatureNotSupported, "generate_subscripts is only supported for the vector and array columns of the system catalogs")
		}
		for i := 1; i < len(args); i++ {
			want := types.Int32
			if i == 2 {
				want = types.Bool
			}
			if args[i], err = expr.NewCast(args[i], want, expr.CastImplicit); err != nil {
				return nil, b.errAt(err, fc.Location)
			}
		}
		typ = types.Int32
	case name == "_pg_expandarray":
		// information_schema._pg_expandarray(arr): one record (x, n) per
		// element: the element and its 1-based position.
		if len(args) != 1 {
			return nil, b.errorf(fc.Location, sqlerr.UndefinedFunction, "function _pg_expandarray with %d arguments does not exist", len(args))
		}
		if _, _, ok := args[0].Type().CatalogArray(); !ok {
			return nil, b.errorf(fc.Location, sqlerr.FeatureNotSupported, "_pg_expandarray is only supported for the vector and array columns of the system catalogs")
		}
		typ = types.ExpandArrayRecord
	default:
		if typ, args, err = seriesSignature(args); err != nil {
			return nil, b.errAt(err, fc.Location)
		}
	}
	idx := base + len(*srfs)
	*srfs = append(*srfs, &plan.SRFCall{Name: name, Args: args, Type: typ})
	return &expr.ColumnRef{Index: idx, Typ: typ, Name: name + "(...)"}, nil
}
