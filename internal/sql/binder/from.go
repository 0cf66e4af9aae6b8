package binder

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// rel is a FROM item while the FROM clause is being bound: a leaf (a scan,
// derived table, function) or a join of two rels. WHERE conjuncts are
// pushed into it before the plan is built (see pushDown), which is where
// predicate pushdown and equi-join key extraction happen: both need the
// conditions' syntax trees and the scopes of each side.
type rel struct {
	// leaf
	node plan.Node
	// join
	kind        plan.JoinKind
	left, right *rel
	on          []*pg.Node // ON conjuncts (and pushed WHERE conjuncts)
	using       []string   // USING / NATURAL columns
	// filters are conjuncts to apply on top of this rel (for a leaf: in its
	// scan).
	filters []*pg.Node
	// lateral, when set, makes a join rel a function in FROM over the
	// columns of the items before it (left): a ProjectSet over left, its
	// Input and the input's part of Out filled in by build; right is the
	// function's leaf, for its names only.
	lateral *plan.ProjectSet
	// sc lists the rel's output columns (offsets relative to its own row).
	sc     *scope
	tables map[string]bool
	width  int
}

// bindFrom binds the FROM list (comma-separated items are cross joins).
func (b *Binder) bindFrom(items []*pg.Node, outer *scope) (*rel, error) {
	if len(items) == 0 {
		// SELECT without FROM reads one empty row.
		return b.leaf(&plan.Values{Rows: [][]expr.Expr{{}}, Out: plan.Schema{}}, "", outer), nil
	}
	var cur *rel
	for _, it := range items {
		var r *rel
		var err error
		if rf := it.GetRangeFunction(); rf != nil && cur != nil {
			// A function may read the columns of the items before it
			// (implicitly LATERAL, as in PostgreSQL).
			r, err = b.bindRangeFunction(rf, outer, cur, plan.InnerJoin)
		} else {
			r, err = b.bindFromItem(it, outer)
		}
		if err != nil {
			return nil, err
		}
		if r.lateral != nil {
			cur = r
			continue
		}
		if cur == nil {
			cur = r
			continue
		}
		if cur, err = b.makeJoin(plan.InnerJoin, cur, r, nil, outer); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

func (b *Binder) leaf(n plan.Node, name string, outer *scope) *rel {
	sc := &scope{parent: outer, width: len(n.Schema())}
	sc.addTable(name, n.Schema(), 0)
	return &rel{node: n, sc: sc, tables: map[string]bool{name: true}, width: len(n.Schema())}
}

func (b *Binder) bindFromItem(n *pg.Node, outer *scope) (*rel, error) {
	switch {
	case n.GetRangeVar() != nil:
		return b.bindRangeVar(n.GetRangeVar(), outer)
	case n.GetRangeSubselect() != nil:
		rs := n.GetRangeSubselect()
		if rs.Lateral {
			return nil, unsupported("LATERAL is not supported")
		}
		// No alias: PostgreSQL 16+ allows it (15 does not). Like 16, the
		// subquery's columns are visible but it has no name to qualify
		// them with. (The AST is not changed: it is the user's.)
		alias := rs.Alias
		if alias == nil {
			alias = &pg.Alias{}
		}
		q, err := b.bindSelect(rs.Subquery.GetSelectStmt(), outer)
		if err != nil {
			return nil, err
		}
		if q, err = resolveUnknownColumns(q); err != nil {
			return nil, err
		}
		q, err = b.aliasColumns(q, alias, -1)
		if err != nil {
			return nil, err
		}
		return b.leaf(q, alias.Aliasname, outer), nil
	case n.GetRangeFunction() != nil:
		return b.bindRangeFunction(n.GetRangeFunction(), outer, nil, plan.InnerJoin)
	case n.GetJoinExpr() != nil:
		return b.bindJoinExpr(n.GetJoinExpr(), outer)
	}
	if n.GetRangeTableSample() != nil {
		return nil, unsupported("TABLESAMPLE is not supported")
	}
	return nil, unsupported("%s in FROM is not supported", statementName(n))
}

// aliasColumns renames q's output columns per alias's column list.
func (b *Binder) aliasColumns(q plan.Node, alias *pg.Alias, loc int32) (plan.Node, error) {
	if alias == nil || len(alias.Colnames) == 0 {
		return q, nil
	}
	names := strs(alias.Colnames)
	sch := q.Schema()
	visible := 0
	for _, c := range sch {
		if !c.Hidden {
			visible++
		}
	}
	if len(names) > visible {
		return nil, b.errorf(loc, sqlerr.InvalidColumnReference, "table \"%s\" has %d columns available but %d columns specified", alias.Aliasname, visible, len(names))
	}
	out := make(plan.Schema, len(sch))
	copy(out, sch)
	k := 0
	for i := range out {
		if out[i].Hidden {
			continue
		}
		if k < len(names) {
			out[i].Name = names[k]
		}
		k++
	}
	return renameSchema(q, out), nil
}

// renameSchema returns a node with q's rows and schema sch (same types).
func renameSchema(q plan.Node, sch plan.Schema) plan.Node {
	exprs := make([]expr.Expr, len(sch))
	for i, c := range sch {
		exprs[i] = &expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name}
	}
	return &plan.Project{Input: q, Exprs: exprs, Out: sch}
}

func (b *Binder) bindRangeVar(rv *pg.RangeVar, outer *scope) (*rel, error) {
	name := rv.Relname
	alias := name
	if rv.Alias != nil && rv.Alias.Aliasname != "" {
		alias = rv.Alias.Aliasname
	}
	procTime := b.stmt != nil && slices.Contains(b.stmt.ProcTime, rv.Location)
	if procTime && rv.Schemaname == "" && b.lookupCTE(name) != nil {
		return nil, b.errorf(rv.Location, sqlerr.FeatureNotSupported, "FOR SYSTEM_TIME AS OF PROCTIME() is supported only on a table or materialized view, not on the WITH query \"%s\"", name)
	}
	if rv.Schemaname == "" {
		if cte := b.lookupCTE(name); cte != nil {
			node, err := b.aliasColumns(cte.node, rv.Alias, rv.Location)
			if err != nil {
				return nil, err
			}
			return b.leaf(node, alias, outer), nil
		}
	}
	r, err := b.cat.ResolveRelation(rv.Schemaname, name)
	if err != nil {
		return nil, b.errAt(err, rv.Location)
	}
	if procTime && r.Kind != catalog.KindTable && r.Kind != catalog.KindMaterializedView {
		return nil, b.errorf(rv.Location, sqlerr.FeatureNotSupported, "FOR SYSTEM_TIME AS OF PROCTIME() is supported only on a table or materialized view, not on %s \"%s\"", r.Kind, r.Name)
	}
	if r.Kind == catalog.KindSink {
		return nil, b.errAt(sqlerr.Errorf(sqlerr.WrongObjectType, "%q is a sink: it cannot be queried", r.Name), rv.Location)
	}
	if r.Kind == catalog.KindIndex {
		// Queries on its table read it (Scan.Index); it has no rows of its own to name.
		return nil, b.errAt(sqlerr.Errorf(sqlerr.WrongObjectType, "%q is an index", r.Name), rv.Location)
	}
	if !slices.Contains(b.deps, r.ID) {
		b.deps = append(b.deps, r.ID)
	}
	var node plan.Node
	if r.Kind == catalog.KindView {
		if node, err = b.expandView(r); err != nil {
			return nil, err
		}
	} else {
		sch := make(plan.Schema, len(r.Columns))
		for i, c := range r.Columns {
			sch[i] = plan.Column{Name: c.Name, Type: c.Type, Table: alias, Hidden: c.Hidden}
			if r.Kind == catalog.KindTable || r.Kind == catalog.KindMaterializedView {
				sch[i].OrigRel, sch[i].OrigAtt = r.ID, i+1
			}
		}
		node = &plan.Scan{Rel: r, Alias: alias, Out: sch, ProcTime: procTime}
	}
	if node, err = b.aliasColumns(node, rv.Alias, rv.Location); err != nil {
		return nil, err
	}
	return b.leaf(node, alias, outer), nil
}

// maxViewNesting bounds how many plain views may be expanded inside each
// other (a view over a view over ...). Each level is a few binder frames
// and one plan node; the expressions of different levels do not nest.
const maxViewNesting = 256

// expandView binds a plain view's definition in place (views are macros).
func (b *Binder) expandView(r *catalog.Relation) (plan.Node, error) {
	// A view reached again inside its own expansion is a cycle (refused
	// at CREATE OR REPLACE VIEW since issue 13; a catalog may predate
	// that); a long chain of views is bounded like any other nesting, so
	// that expansion never recurses without end (I9).
	if slices.Contains(b.views, r.ID) {
		return nil, sqlerr.Errorf(sqlerr.InvalidObjectDefinition, "infinite recursion detected in rules for relation \"%s\"", r.Name)
	}
	if b.viewDepth >= maxViewNesting {
		return nil, parser.StackDepthError()
	}
	st, err := parser.ParseOne(r.Definition)
	if err != nil || st.AST.GetSelectStmt() == nil {
		return nil, sqlerr.Errorf(sqlerr.InternalError, "view \"%s\" has an invalid definition", r.Name)
	}
	vb := &Binder{cat: b.cat, stmt: st, viewDepth: b.viewDepth + 1, views: append(slices.Clip(b.views), r.ID)}
	q, err := vb.BindQuery(st.AST.GetSelectStmt())
	if err != nil {
		// A position inside the view's text would point into the
		// client's statement at the wrong place: drop it.
		if e := sqlerr.From(err); e != nil && e.Position != 0 {
			return nil, e.WithPosition(0)
		}
		return nil, err
	}
	// A SQL function inlined through the view is one the statement calls.
	for _, id := range vb.udfDeps {
		if !slices.Contains(b.udfDeps, id) {
			b.udfDeps = append(b.udfDeps, id)
		}
	}
	// The view's stored column names win over the query's.
	sch := append(plan.Schema(nil), q.Schema()...)
	for i := range sch {
		if i < len(r.Columns) {
			sch[i].Name = r.Columns[i].Name
		}
	}
	return renameSchema(q, sch), nil
}

func (b *Binder) lookupCTE(name string) *cteDef {
	for i := len(b.ctes) - 1; i >= 0; i-- {
		if c, ok := b.ctes[i][name]; ok {
			return c
		}
	}
	return nil
}

// bindRangeFunction binds a function in FROM. With left (the FROM items
// before it, joined to it by kind) its arguments may read left's columns;
// if they do, the result is a lateral rel (see rel.lateral and lateralRel).
func (b *Binder) bindRangeFunction(rf *pg.RangeFunction, outer *scope, left *rel, kind plan.JoinKind) (*rel, error) {
	if rf.IsRowsfrom || len(rf.Functions) != 1 {
		return nil, unsupported("this form of function in FROM is not supported")
	}
	argScope := &scope{parent: outer}
	if left != nil {
		argScope = left.sc
	}
	r, err := b.bindRangeFunctionArgs(rf, outer, argScope)
	if err != nil || left == nil {
		return r, err
	}
	return b.lateralRel(left, r, kind, outer)
}

// lateralRel joins left and r, a function in FROM bound over left's
// columns. If its arguments read none of them it is an ordinary FROM item
// (returned alone, for the caller to join); else the join is a ProjectSet
// over left: each left row followed by its function's rows.
func (b *Binder) lateralRel(left, r *rel, kind plan.JoinKind, outer *scope) (*rel, error) {
	readsLeft := false
	tf, isFunc := r.node.(*plan.TableFunc)
	ps, isSet := r.node.(*plan.ProjectSet)
	var args []expr.Expr
	switch {
	case isFunc:
		args = tf.Args
	case isSet:
		for _, c := range ps.Calls {
			args = append(args, c.Args...)
		}
	default:
		if f, ok := r.node.(*plan.Filter); ok {
			args = []expr.Expr{f.Cond}
		}
	}
	for _, a := range args {
		if !plan.WalkBound(a, func(x any) bool {
			if _, ok := x.(*expr.ColumnRef); ok {
				readsLeft = true
			}
			return !readsLeft
		}) {
			return nil, parser.StackDepthError()
		}
	}
	if !readsLeft {
		return r, nil
	}
	if !isFunc && !isSet {
		return nil, unsupported("this function in FROM cannot read the columns of the FROM items before it")
	}
	if kind != plan.InnerJoin && kind != plan.LeftJoin {
		return nil, sqlerr.New(sqlerr.InvalidColumnReference, "invalid reference to the FROM-clause entries on the left: the combining JOIN type must be INNER or LEFT for a LATERAL reference")
	}
	j, err := b.makeJoin(plan.InnerJoin, left, r, nil, outer)
	if err != nil {
		return nil, err
	}
	if isSet {
		j.lateral = &plan.ProjectSet{Calls: ps.Calls, Ordinality: ps.Ordinality, Outer: kind == plan.LeftJoin, Out: ps.Out}
		return j, nil
	}
	j.lateral = &plan.ProjectSet{
		Calls:      []*plan.SRFCall{{Name: tf.Name, Args: tf.Args, Type: tf.Out[0].Type}},
		Ordinality: tf.WithOrdinality,
		Outer:      kind == plan.LeftJoin,
		Out:        tf.Out,
	}
	return j, nil
}

// jsonSRFArgs checks a JSON set-returning function's one argument and
// makes it jsonb (a quoted literal is read as jsonb).
func jsonSRFArgs(name string, args []expr.Expr) ([]expr.Expr, error) {
	if len(args) != 1 {
		return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s with %d arguments does not exist", name, len(args))
	}
	a := args[0]
	switch a.Type().Kind {
	case types.KindJsonb:
		return args, nil
	case types.KindUnknown, types.KindNull:
		c, err := expr.NewCast(a, types.Jsonb, expr.CastImplicit)
		if err != nil {
			return nil, err
		}
		return []expr.Expr{c}, nil
	}
	return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s(%s) does not exist", name, a.Type().Name())
}

// bindJSONFromFunction binds a JSON set-returning function in FROM
// (jsonb_array_elements(j), jsonb_each(j) AS e(k, v), ...) as a ProjectSet
// over one empty row: a lateral one replaces that row by the FROM items
// before it (lateralRel). jsonb_each is two calls in lockstep, its key
// and its value (see expr.JSONEachKey).
func (b *Binder) bindJSONFromFunction(rf *pg.RangeFunction, fc *pg.FuncCall, name, jname string, outer, argScope *scope) (*rel, error) {
	args, err := b.bindList(fc.Args, &exprCtx{sc: argScope, clause: "FROM"})
	if err != nil {
		return nil, err
	}
	if args, err = jsonSRFArgs(name, args); err != nil {
		return nil, b.errAt(err, fc.Location)
	}
	type col struct {
		call, name string
		typ        types.Type
	}
	var cols []col
	switch jname {
	case "jsonb_array_elements":
		cols = []col{{jname, "value", types.Jsonb}}
	case "jsonb_array_elements_text":
		cols = []col{{jname, "value", types.Text}}
	case "jsonb_object_keys":
		cols = []col{{jname, name, types.Text}}
	case "jsonb_each":
		cols = []col{{expr.JSONEachKey, "key", types.Text}, {expr.JSONEachValue, "value", types.Jsonb}}
	default: // jsonb_each_text
		cols = []col{{expr.JSONEachKey, "key", types.Text}, {expr.JSONEachValueText, "value", types.Text}}
	}
	alias := name
	var colnames []string
	if rf.Alias != nil {
		alias = rf.Alias.Aliasname
		colnames = strs(rf.Alias.Colnames)
		if jname == "jsonb_object_keys" {
			cols[0].name = alias // a function without OUT parameters: its column is named by the alias
		}
	}
	n := len(cols)
	if rf.Ordinality {
		n++
	}
	if len(colnames) > n {
		return nil, sqlerr.Errorf(sqlerr.SyntaxError, "table \"%s\" has %d columns available but %d columns specified", alias, n, len(colnames))
	}
	ps := &plan.ProjectSet{Input: &plan.Values{Rows: [][]expr.Expr{{}}, Out: plan.Schema{}}, Ordinality: rf.Ordinality}
	for i, c := range cols {
		ps.Calls = append(ps.Calls, &plan.SRFCall{Name: c.call, Args: args, Type: c.typ})
		if i < len(colnames) {
			c.name = colnames[i]
		}
		ps.Out = append(ps.Out, plan.Column{Name: c.name, Type: c.typ, Table: alias})
	}
	if rf.Ordinality {
		on := "ordinality"
		if len(colnames) > len(cols) {
			on = colnames[len(cols)]
		}
		ps.Out = append(ps.Out, plan.Column{Name: on, Type: types.Int64, Table: alias})
	}
	r := b.leaf(ps, alias, outer)
	if rf.Alias != nil && len(colnames) == 0 && len(cols) == 1 && cols[0].name != alias {
		// PostgreSQL: the alias of a function returning a base type also
		// names its value (a whole-row reference): SELECT x FROM
		// jsonb_array_elements(j) AS x. Hidden, so * does not repeat it.
		r.sc.cols = append(r.sc.cols, scopeCol{table: alias, name: alias, typ: cols[0].typ, hidden: true,
			e: &expr.ColumnRef{Index: 0, Typ: cols[0].typ, Name: qualName(alias, cols[0].name)}})
	}
	return r, nil
}

func (b *Binder) bindRangeFunctionArgs(rf *pg.RangeFunction, outer, argScope *scope) (*rel, error) {
	items := rf.Functions[0].GetList().GetItems()
	fc := items[0].GetFuncCall()
	if fc == nil {
		return nil, unsupported("only function calls are supported in FROM")
	}
	name := fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()
	if name == "unnest" {
		return b.bindUnnest(rf, fc, outer, argScope) // see nullarray.go
	}
	if isTimeWindowFunc(name) {
		return b.bindTimeWindow(rf, fc, name, outer) // see timewindow.go
	}
	if jname, ok := expr.JSONSRFName(name); ok {
		return b.bindJSONFromFunction(rf, fc, name, jname, outer, argScope)
	}
	if name != "generate_series" {
		return nil, b.errorf(fc.Location, sqlerr.FeatureNotSupported, "function %s in FROM is not supported", name)
	}
	// Arguments see the columns of the FROM items before this one
	// (argScope) and those of enclosing queries.
	ec := &exprCtx{sc: argScope, clause: "FROM"}
	var args []expr.Expr
	for _, a := range fc.Args {
		e, err := b.bindExpr(a, ec)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	out, args, err := seriesSignature(args)
	if err != nil {
		return nil, b.errAt(err, fc.Location)
	}
	colName := name
	alias := name
	if rf.Alias != nil {
		alias = rf.Alias.Aliasname
		colName = alias
		if len(rf.Alias.Colnames) > 0 {
			colName = rf.Alias.Colnames[0].GetString_().GetSval()
		}
	}
	sch := plan.Schema{{Name: colName, Type: out, Table: alias}}
	if rf.Ordinality {
		on := "ordinality"
		if rf.Alias != nil && len(rf.Alias.Colnames) > 1 {
			on = rf.Alias.Colnames[1].GetString_().GetSval()
		}
		sch = append(sch, plan.Column{Name: on, Type: types.Int64, Table: alias})
	}
	return b.leaf(&plan.TableFunc{Name: name, Args: args, Out: sch, WithOrdinality: rf.Ordinality}, alias, outer), nil
}

// seriesSignature resolves generate_series's overload and coerces args.
func seriesSignature(args []expr.Expr) (types.Type, []expr.Expr, error) {
	if len(args) < 2 || len(args) > 3 {
		return types.Type{}, nil, sqlerr.New(sqlerr.UndefinedFunction, "function generate_series does not exist")
	}
	t0, t1 := args[0].Type(), args[1].Type()
	kinds := func(k types.Kind) bool {
		for _, a := range args[:2] {
			if a.Type().Kind != k && a.Type().Kind != types.KindUnknown && a.Type().Kind != types.KindNull {
				return false
			}
		}
		return true
	}
	var target types.Type
	switch {
	case t0.Kind == types.KindTimestamptz || t1.Kind == types.KindTimestamptz:
		target = types.Timestamptz
	case t0.Kind == types.KindTimestamp || t1.Kind == types.KindTimestamp || t0.Kind == types.KindDate || t1.Kind == types.KindDate:
		target = types.Timestamp
		if t0.Kind == types.KindDate || t1.Kind == types.KindDate {
			target = types.Timestamptz // date promotes to timestamptz, PostgreSQL's preferred type
		}
	case t0.Kind == types.KindNumeric || t1.Kind == types.KindNumeric || (len(args) > 2 && args[2].Type().Kind == types.KindNumeric):
		target = types.Numeric
	case (t0.Kind == types.KindInt64 || t1.Kind == types.KindInt64) || (len(args) > 2 && args[2].Type().Kind == types.KindInt64):
		target = types.Int64
	case kinds(types.KindInt32) || kinds(types.KindInt16):
		target = types.Int32
	case t0.Kind == types.KindUnknown && t1.Kind == types.KindUnknown:
		return types.Type{}, nil, sqlerr.New(sqlerr.AmbiguousFunction, "function generate_series(unknown, unknown) is not unique")
	default:
		return types.Type{}, nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function generate_series(%s, %s) does not exist", t0.Name(), t1.Name())
	}
	out := make([]expr.Expr, len(args))
	for i, a := range args {
		want := target
		if i == 2 && (target.Kind == types.KindTimestamp || target.Kind == types.KindTimestamptz) {
			want = types.Interval
		}
		c, err := expr.NewCast(a, want, expr.CastImplicit)
		if err != nil {
			return types.Type{}, nil, err
		}
		out[i] = c
	}
	return target, out, nil
}

func (b *Binder) bindJoinExpr(j *pg.JoinExpr, outer *scope) (*rel, error) {
	l, err := b.bindFromItem(j.Larg, outer)
	if err != nil {
		return nil, err
	}
	var kind plan.JoinKind
	switch j.Jointype {
	case pg.JoinType_JOIN_INNER:
		kind = plan.InnerJoin
	case pg.JoinType_JOIN_LEFT:
		kind = plan.LeftJoin
	case pg.JoinType_JOIN_RIGHT:
		kind = plan.RightJoin
	case pg.JoinType_JOIN_FULL:
		kind = plan.FullJoin
	default:
		return nil, unsupported("join type %s is not supported", j.Jointype)
	}
	var r *rel
	if rf := j.Rarg.GetRangeFunction(); rf != nil {
		r, err = b.bindRangeFunction(rf, outer, l, kind)
	} else {
		r, err = b.bindFromItem(j.Rarg, outer)
	}
	if err != nil {
		return nil, err
	}
	if r.lateral != nil {
		return b.lateralJoin(j, r)
	}
	var using []string
	if j.IsNatural {
		for _, lc := range l.sc.star {
			name := l.sc.cols[lc].name
			for _, rc := range r.sc.star {
				if r.sc.cols[rc].name == name {
					using = append(using, name)
					break
				}
			}
		}
	} else {
		using = strs(j.UsingClause)
	}
	for _, u := range using {
		for side, s := range []*scope{l.sc, r.sc} {
			_, ok, err := s.lookup("", u)
			if err != nil {
				return nil, sqlerr.Errorf(sqlerr.AmbiguousColumn, "common column name \"%s\" appears more than once in %s table", u, [...]string{"left", "right"}[side])
			}
			if !ok {
				return nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "column \"%s\" specified in USING clause does not exist in %s table", u, [...]string{"left", "right"}[side])
			}
		}
	}
	jr, err := b.makeJoin(kind, l, r, using, outer)
	if err != nil {
		return nil, err
	}
	if j.Quals != nil {
		jr.on = append(jr.on, conjuncts(j.Quals)...)
	}
	if j.Alias != nil && j.Alias.Aliasname != "" {
		// A join alias hides the tables inside it.
		name := j.Alias.Aliasname
		jr.sc = requalify(jr.sc, name, strs(j.Alias.Colnames))
		jr.tables[name] = true
	}
	return jr, nil
}

// lateralJoin finishes l [LEFT] JOIN LATERAL f(l...) ON quals, r being
// the lateral rel: an inner join's quals filter its rows; a LEFT join
// keeps every left row, which only ON true leaves the same as the
// ProjectSet's padding (other conditions are refused).
func (b *Binder) lateralJoin(j *pg.JoinExpr, r *rel) (*rel, error) {
	if j.IsNatural || len(j.UsingClause) > 0 {
		return nil, unsupported("NATURAL and USING joins with a function reading the other side's columns are not supported")
	}
	if j.Quals != nil {
		if r.lateral.Outer {
			if c := j.Quals.GetAConst(); c == nil || !c.GetBoolval().GetBoolval() {
				return nil, unsupported("LEFT JOIN LATERAL with a function is supported only with ON true")
			}
		} else {
			r.on = append(r.on, conjuncts(j.Quals)...)
		}
	}
	if j.Alias != nil && j.Alias.Aliasname != "" {
		r.sc = requalify(r.sc, j.Alias.Aliasname, strs(j.Alias.Colnames))
		r.tables[j.Alias.Aliasname] = true
	}
	return r, nil
}

// requalify gives every visible column of s the table name and hides the
// old qualifiers (JOIN ... AS alias).
func requalify(s *scope, name string, colnames []string) *scope {
	ns := &scope{parent: s.parent, width: s.width}
	t := scopeTable{name: name}
	for k, i := range s.star {
		c := s.cols[i]
		c.table = name
		c.qualifiedOnly, c.unqualifiedOnly = false, false
		if k < len(colnames) {
			c.name = colnames[k]
		}
		ns.cols = append(ns.cols, c)
		ns.star = append(ns.star, len(ns.cols)-1)
		t.cols = append(t.cols, len(ns.cols)-1)
	}
	ns.tables = []scopeTable{t}
	return ns
}

// makeJoin joins two rels; its scope has the left columns, then the right
// columns shifted by the left width, and for USING the merged columns
// (which unqualified names and * refer to).
func (b *Binder) makeJoin(kind plan.JoinKind, l, r *rel, using []string, outer *scope) (*rel, error) {
	for t := range r.tables {
		if l.tables[t] && t != "" {
			return nil, sqlerr.Errorf("42712", "table name \"%s\" specified more than once", t)
		}
	}
	sc := &scope{parent: outer, width: l.width + r.width}
	tables := map[string]bool{}
	for t := range l.tables {
		tables[t] = true
	}
	for t := range r.tables {
		tables[t] = true
	}
	usingSet := map[string]bool{}
	for _, u := range using {
		usingSet[u] = true
	}
	// Merged USING columns come first for *.
	for _, u := range using {
		lc, _, _ := l.sc.lookup("", u)
		rc, _, _ := r.sc.lookup("", u)
		re := shiftExpr(rc.e, l.width)
		var e expr.Expr
		var err error
		typ := lc.typ
		switch kind {
		case plan.RightJoin:
			e, typ = re, rc.typ
		case plan.FullJoin:
			e, err = newCoalesce([]expr.Expr{lc.e, re})
			if err != nil {
				return nil, err
			}
			typ = e.Type()
		default:
			e = lc.e
		}
		sc.cols = append(sc.cols, scopeCol{name: u, typ: typ, e: e, unqualifiedOnly: true})
		sc.star = append(sc.star, len(sc.cols)-1)
	}
	add := func(src *scope, off int) {
		base := len(sc.cols)
		for _, c := range src.cols {
			c.e = shiftExpr(c.e, off)
			if usingSet[c.name] && !c.qualifiedOnly && !c.unqualifiedOnly {
				c.qualifiedOnly = true
			}
			if c.unqualifiedOnly && usingSet[c.name] {
				// a merged column of an inner USING join is superseded.
				c.qualifiedOnly = true
			}
			sc.cols = append(sc.cols, c)
		}
		for _, i := range src.star {
			c := src.cols[i]
			if usingSet[c.name] {
				continue
			}
			sc.star = append(sc.star, base+i)
		}
		for _, t := range src.tables {
			nt := scopeTable{name: t.name}
			for _, i := range t.cols {
				nt.cols = append(nt.cols, base+i)
			}
			sc.tables = append(sc.tables, nt)
		}
	}
	add(l.sc, 0)
	add(r.sc, l.width)
	return &rel{kind: kind, left: l, right: r, using: using, sc: sc, tables: tables, width: l.width + r.width}, nil
}

// shiftExpr returns e with column references moved by off. Only the
// expressions the binder itself creates for scopes occur here: column
// references and COALESCE over them (rebuilt).
func shiftExpr(e expr.Expr, off int) expr.Expr {
	if off == 0 {
		return e
	}
	switch x := e.(type) {
	case *expr.ColumnRef:
		return &expr.ColumnRef{Index: x.Index + off, Typ: x.Typ, Name: x.Name}
	case *mergedCol:
		args := make([]expr.Expr, len(x.args))
		for i, a := range x.args {
			args[i] = shiftExpr(a, off)
		}
		m, _ := newCoalesce(args)
		return m
	}
	return e
}
