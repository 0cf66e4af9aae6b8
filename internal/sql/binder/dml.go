package binder

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Insert is INSERT INTO table [(cols)] VALUES ... | SELECT ...
//
// Source yields one row per row to insert with every column of Table in
// catalog order: values already converted with assignment casts, defaults
// filled in, NOT NULL checked (23502 at execution). Hidden columns (the
// generated _row_id) are NULL: the write path assigns them.
type Insert struct {
	Table      *catalog.Relation
	Source     plan.Node
	OnConflict *OnConflict
	// Returning is bound against a full stored row of Table.
	Returning       []expr.Expr
	ReturningSchema plan.Schema
	// ReturningReads: RETURNING holds a subquery (it reads relations).
	ReturningReads bool
}

// ConflictAction is ON CONFLICT's action.
type ConflictAction uint8

const (
	DoNothing ConflictAction = iota
	DoUpdate
)

// OnConflict is ON CONFLICT (pk) DO NOTHING | DO UPDATE SET ... [WHERE].
// Set and Where are bound against the existing row followed by the
// proposed row ("excluded"), both full rows of the table.
type OnConflict struct {
	Action ConflictAction
	Cols   []int       // columns assigned by DO UPDATE
	Set    []expr.Expr // new values, cast and NOT NULL checked
	Where  expr.Expr   // nil when absent
}

// Update is UPDATE table SET ... [FROM ...] [WHERE ...].
//
// Plan yields, for each affected row, the old row followed by the new row
// (each every column of Table in catalog order, hidden ones included), so
// row i is old = row[:n], new = row[n:] with n = len(Table.Columns).
type Update struct {
	Table           *catalog.Relation
	Plan            plan.Node
	Returning       []expr.Expr // bound against the new row
	ReturningSchema plan.Schema
	ReturningReads  bool // RETURNING holds a subquery
}

// Delete is DELETE FROM table [USING ...] [WHERE ...]. Plan yields the old
// rows (every column, hidden ones included), each once.
type Delete struct {
	Table           *catalog.Relation
	Plan            plan.Node
	Returning       []expr.Expr // bound against the old row
	ReturningSchema plan.Schema
	ReturningReads  bool // RETURNING holds a subquery
}

// Copy is COPY table [(cols)] FROM STDIN / TO STDOUT, or COPY (query) TO.
type Copy struct {
	Table   *catalog.Relation // nil for COPY (query) TO
	Columns []int             // target columns (all visible when omitted)
	From    bool
	Query   plan.Node // COPY (query) TO, or SELECT of Columns for COPY table TO
	// Filename is "" for STDIN/STDOUT.
	Filename  string
	Format    string // "text", "csv" or "binary"
	Delimiter string
	Null      string
	Header    bool
	Quote     string
	Escape    string
}

func (*Insert) boundStmt() {}
func (*Update) boundStmt() {}
func (*Delete) boundStmt() {}
func (*Copy) boundStmt()   {}

func (s *Insert) ReturningColumns() plan.Schema { return s.ReturningSchema }
func (s *Update) ReturningColumns() plan.Schema { return s.ReturningSchema }
func (s *Delete) ReturningColumns() plan.Schema { return s.ReturningSchema }

// returningReads reports whether a RETURNING list holds a subquery.
func returningReads(list []*pg.Node) bool {
	found := false
	for _, n := range list {
		walkAST(n, func(x *pg.Node) bool {
			if x.GetSubLink() != nil {
				found = true
			}
			return !found
		})
	}
	return found
}

// notNullCheck fails with 23502 when its input is NULL.
type notNullCheck struct {
	e          expr.Expr
	col, table string
}

func (n *notNullCheck) Type() types.Type { return n.e.Type() }
func (n *notNullCheck) String() string   { return n.e.String() }
func (n *notNullCheck) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	d, err := n.e.Eval(ctx, row)
	if err != nil {
		return d, err
	}
	if d.IsNull() {
		return d, sqlerr.Errorf(sqlerr.NotNullViolation, "null value in column \"%s\" of relation \"%s\" violates not-null constraint", n.col, n.table)
	}
	return d, nil
}

// assign converts e for storing into column c of rel.
func (b *Binder) assign(e expr.Expr, rel *catalog.Relation, c int, loc int32) (expr.Expr, error) {
	col := rel.Columns[c]
	e = b.retypeParam(e, col.Type)
	out, err := expr.NewCast(e, col.Type, expr.CastAssignment)
	if err != nil {
		if sqlerr.Code(err) == sqlerr.InternalError || strings.HasPrefix(sqlerr.Code(err), "42") {
			return nil, b.errAt(sqlerr.Errorf(sqlerr.DatatypeMismatch, "column \"%s\" is of type %s but expression is of type %s", col.Name, col.Type.Name(), e.Type().Name()).
				WithHint("You will need to rewrite or cast the expression."), loc)
		}
		return nil, b.errAt(err, loc) // a literal that is no valid value of the column's type
	}
	if col.NotNull && !col.Hidden {
		out = &notNullCheck{e: out, col: col.Name, table: rel.Name}
	}
	return out, nil
}

// defaultFor returns the DEFAULT of column c (NULL when none), checked.
func (b *Binder) defaultFor(rel *catalog.Relation, c int) (expr.Expr, error) {
	col := rel.Columns[c]
	var e expr.Expr = &expr.Const{Value: types.NullDatum, Typ: col.Type}
	if col.Default != "" {
		d, err := BindDefault(col.Default, col.Type)
		if err != nil {
			return nil, sqlerr.Wrap(err, sqlerr.InternalError, "bad stored DEFAULT of column "+col.Name)
		}
		e = d
	}
	if col.NotNull && !col.Hidden {
		e = &notNullCheck{e: e, col: col.Name, table: rel.Name}
	}
	return e, nil
}

func parseExprText(text string) (*pg.Node, error) {
	st, err := parser.ParseOne("SELECT " + text)
	if err != nil {
		return nil, err
	}
	sel := st.AST.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "invalid expression")
	}
	return sel.TargetList[0].GetResTarget().Val, nil
}

func (b *Binder) resolveTarget(rv *pg.RangeVar, what string) (*catalog.Relation, error) {
	rel, err := b.cat.ResolveRelation(rv.Schemaname, rv.Relname)
	if err != nil {
		return nil, b.errAt(err, rv.Location)
	}
	if rel.Kind != catalog.KindTable {
		return nil, b.errorf(rv.Location, sqlerr.WrongObjectType, "cannot %s %s \"%s\"", what, rel.Kind, rel.Name)
	}
	return rel, nil
}

// targetColumns resolves an INSERT/COPY column list (all visible columns
// when empty).
func (b *Binder) targetColumns(rel *catalog.Relation, cols []*pg.Node) ([]int, error) {
	if len(cols) == 0 {
		return rel.VisibleColumns(), nil
	}
	var out []int
	seen := map[int]bool{}
	for _, c := range cols {
		rt := c.GetResTarget()
		var name string
		if rt != nil {
			name = rt.Name
		} else {
			name = c.GetString_().GetSval()
		}
		if rt != nil && len(rt.Indirection) > 0 {
			return nil, unsupported("assignment to a field or subscript is not supported")
		}
		i := rel.ColumnIndex(name)
		if i < 0 || rel.Columns[i].Hidden {
			loc := int32(-1)
			if rt != nil {
				loc = rt.Location
			}
			return nil, b.errorf(loc, sqlerr.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", name, rel.Name)
		}
		if seen[i] {
			return nil, sqlerr.Errorf(sqlerr.DuplicateColumn, "column \"%s\" specified more than once", name)
		}
		seen[i] = true
		out = append(out, i)
	}
	return out, nil
}

func (b *Binder) bindInsert(is *pg.InsertStmt) (Statement, error) {
	if is.WithClause != nil {
		return nil, unsupported("WITH in INSERT is not supported")
	}
	rel, err := b.resolveTarget(is.Relation, "insert into")
	if err != nil {
		return nil, err
	}
	cols, err := b.targetColumns(rel, is.Cols)
	if err != nil {
		return nil, err
	}
	if len(is.Cols) == 0 {
		// Without a column list the targets are the first N columns,
		// N being the number of values given (the rest get defaults).
		if n := insertWidth(is.SelectStmt.GetSelectStmt()); n >= 0 && n < len(cols) {
			cols = cols[:n]
		}
	}
	pos := map[int]int{} // table column -> index in the target list
	for i, c := range cols {
		pos[c] = i
	}
	ins := &Insert{Table: rel}
	full := func(vals []expr.Expr) ([]expr.Expr, error) {
		row := make([]expr.Expr, len(rel.Columns))
		for c := range rel.Columns {
			if i, ok := pos[c]; ok && vals[i] != nil {
				row[c] = vals[i]
				continue
			}
			d, err := b.defaultFor(rel, c)
			if err != nil {
				return nil, err
			}
			row[c] = d
		}
		return row, nil
	}
	sel := is.SelectStmt.GetSelectStmt()
	switch {
	case sel == nil:
		// INSERT ... DEFAULT VALUES
		row, err := full(make([]expr.Expr, len(cols)))
		if err != nil {
			return nil, err
		}
		ins.Source = &plan.Values{Rows: [][]expr.Expr{row}, Out: relSchema(rel, "")}
	case len(sel.ValuesLists) > 0 && sel.Op == pg.SetOperation_SETOP_NONE && len(sel.SortClause) == 0 && sel.LimitCount == nil && sel.WithClause == nil:
		ec := &exprCtx{sc: &scope{}, clause: "VALUES"}
		v := &plan.Values{Out: relSchema(rel, "")}
		for _, l := range sel.ValuesLists {
			items := l.GetList().GetItems()
			if len(items) > len(cols) {
				return nil, b.errorf(location(items[len(cols)]), sqlerr.SyntaxError, "INSERT has more expressions than target columns")
			}
			if len(items) < len(cols) {
				return nil, b.errorf(location(items[0]), sqlerr.SyntaxError, "INSERT has more target columns than expressions")
			}
			vals := make([]expr.Expr, len(cols))
			for i, it := range items {
				if it.GetSetToDefault() != nil {
					continue // filled by full()
				}
				e, err := b.bindExpr(it, ec)
				if err != nil {
					return nil, err
				}
				if vals[i], err = b.assign(e, rel, cols[i], location(it)); err != nil {
					return nil, err
				}
			}
			row, err := full(vals)
			if err != nil {
				return nil, err
			}
			v.Rows = append(v.Rows, row)
		}
		ins.Source = v
	default:
		q, err := b.bindSelect(sel, nil)
		if err != nil {
			return nil, err
		}
		if len(visible(q.Schema())) != len(q.Schema()) {
			q = projectVisible(q)
		}
		qs := q.Schema()
		if len(qs) > len(cols) {
			return nil, sqlerr.New(sqlerr.SyntaxError, "INSERT has more expressions than target columns")
		}
		if len(qs) < len(cols) {
			return nil, sqlerr.New(sqlerr.SyntaxError, "INSERT has more target columns than expressions")
		}
		vals := make([]expr.Expr, len(cols))
		for i, c := range qs {
			if vals[i], err = b.assign(&expr.ColumnRef{Index: i, Typ: c.Type, Name: c.Name}, rel, cols[i], -1); err != nil {
				return nil, err
			}
		}
		row, err := full(vals)
		if err != nil {
			return nil, err
		}
		ins.Source = &plan.Project{Input: q, Exprs: row, Out: relSchema(rel, "")}
	}
	if oc := is.OnConflictClause; oc != nil {
		if ins.OnConflict, err = b.bindOnConflict(rel, oc); err != nil {
			return nil, err
		}
	}
	ins.ReturningReads = returningReads(is.ReturningList)
	if ins.Returning, ins.ReturningSchema, err = b.bindReturning(rel, is.ReturningList); err != nil {
		return nil, err
	}
	return ins, nil
}

func relSchema(rel *catalog.Relation, alias string) plan.Schema {
	if alias == "" {
		alias = rel.Name
	}
	sch := make(plan.Schema, len(rel.Columns))
	for i, c := range rel.Columns {
		sch[i] = plan.Column{Name: c.Name, Type: c.Type, Table: alias, Hidden: c.Hidden}
	}
	return sch
}

func (b *Binder) bindOnConflict(rel *catalog.Relation, oc *pg.OnConflictClause) (*OnConflict, error) {
	out := &OnConflict{}
	if oc.Infer != nil {
		if oc.Infer.Conname != "" {
			return nil, unsupported("ON CONFLICT ON CONSTRAINT is not supported")
		}
		var target []int
		for _, ie := range oc.Infer.IndexElems {
			el := ie.GetIndexElem()
			if el.Name == "" {
				return nil, unsupported("ON CONFLICT with expressions is not supported")
			}
			i := rel.ColumnIndex(el.Name)
			if i < 0 {
				return nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "column \"%s\" does not exist", el.Name)
			}
			target = append(target, i)
		}
		if !sameSet(target, rel.PK) || rel.Columns[rel.PK[0]].Hidden {
			return nil, b.errorf(oc.Location, sqlerr.InvalidColumnReference, "there is no unique or exclusion constraint matching the ON CONFLICT specification")
		}
	} else if oc.Action == pg.OnConflictAction_ONCONFLICT_UPDATE {
		return nil, b.errorf(oc.Location, sqlerr.SyntaxError, "ON CONFLICT DO UPDATE requires inference specification or constraint name")
	}
	if oc.Action == pg.OnConflictAction_ONCONFLICT_NOTHING {
		return out, nil
	}
	out.Action = DoUpdate
	// existing row (table name) ++ proposed row ("excluded").
	sc := &scope{width: 2 * len(rel.Columns)}
	sc.addTable(rel.Name, relSchema(rel, rel.Name), 0)
	sc.addTable("excluded", relSchema(rel, "excluded"), len(rel.Columns))
	ec := &exprCtx{sc: sc, clause: "ON CONFLICT DO UPDATE"}
	cols, set, err := b.bindSetList(rel, oc.TargetList, ec)
	if err != nil {
		return nil, err
	}
	for _, c := range cols {
		for _, p := range rel.PK {
			if c == p {
				return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "ON CONFLICT DO UPDATE cannot change primary key column \"%s\"", rel.Columns[c].Name)
			}
		}
	}
	out.Cols, out.Set = cols, set
	if oc.WhereClause != nil {
		w, err := b.bindExpr(oc.WhereClause, ec)
		if err != nil {
			return nil, err
		}
		if out.Where, err = expr.CoerceBool(w, "WHERE"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[int]bool{}
	for _, x := range a {
		m[x] = true
	}
	for _, x := range b {
		if !m[x] {
			return false
		}
	}
	return true
}

// bindSetList binds SET col = expr, (a, b) = (x, y) assignments.
func (b *Binder) bindSetList(rel *catalog.Relation, list []*pg.Node, ec *exprCtx) ([]int, []expr.Expr, error) {
	var cols []int
	var vals []expr.Expr
	seen := map[int]bool{}
	for _, n := range list {
		rt := n.GetResTarget()
		if len(rt.Indirection) > 0 {
			return nil, nil, unsupported("assignment to a field or subscript is not supported")
		}
		c := rel.ColumnIndex(rt.Name)
		if c < 0 || rel.Columns[c].Hidden {
			return nil, nil, b.errorf(rt.Location, sqlerr.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", rt.Name, rel.Name)
		}
		if seen[c] {
			return nil, nil, b.errorf(rt.Location, sqlerr.SyntaxError, "multiple assignments to same column \"%s\"", rt.Name)
		}
		seen[c] = true
		src := rt.Val
		if mr := src.GetMultiAssignRef(); mr != nil {
			row := mr.Source.GetRowExpr()
			if row == nil {
				return nil, nil, unsupported("multiple-column assignment from a subquery is not supported")
			}
			if int(mr.Ncolumns) != len(row.Args) {
				return nil, nil, sqlerr.New(sqlerr.SyntaxError, "number of columns does not match number of values")
			}
			src = row.Args[mr.Colno-1]
		}
		var e expr.Expr
		var err error
		if src.GetSetToDefault() != nil {
			if e, err = b.defaultFor(rel, c); err != nil {
				return nil, nil, err
			}
		} else {
			if e, err = b.bindExpr(src, ec); err != nil {
				return nil, nil, err
			}
			if e, err = b.assign(e, rel, c, location(src)); err != nil {
				return nil, nil, err
			}
		}
		cols = append(cols, c)
		vals = append(vals, e)
	}
	return cols, vals, nil
}

func (b *Binder) bindReturning(rel *catalog.Relation, list []*pg.Node) ([]expr.Expr, plan.Schema, error) {
	if len(list) == 0 {
		return nil, nil, nil
	}
	sc := &scope{width: len(rel.Columns)}
	sc.addTable(rel.Name, relSchema(rel, rel.Name), 0)
	items, err := b.expandTargets(list, sc)
	if err != nil {
		return nil, nil, err
	}
	ec := &exprCtx{sc: sc, clause: "RETURNING"}
	var out []expr.Expr
	var sch plan.Schema
	for _, it := range items {
		e := it.e
		if e == nil {
			if e, err = b.bindExpr(it.ast, ec); err != nil {
				return nil, nil, err
			}
		}
		if e.Type().Kind == types.KindUnknown {
			if e, err = expr.ResolveUnknown(e); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, e)
		sch = append(sch, plan.Column{Name: it.name, Type: e.Type()})
	}
	return out, sch, nil
}

// bindTargetRel binds the DML target with extra FROM/USING items joined to
// it and the WHERE clause pushed down; the target's columns come first in
// the result rows.
func (b *Binder) bindTargetRel(rv *pg.RangeVar, extra []*pg.Node, where *pg.Node, what string) (*catalog.Relation, plan.Node, error) {
	rel, err := b.resolveTarget(rv, what)
	if err != nil {
		return nil, nil, err
	}
	alias := rel.Name
	if rv.Alias != nil && rv.Alias.Aliasname != "" {
		alias = rv.Alias.Aliasname
	}
	r := b.leaf(&plan.Scan{Rel: rel, Alias: alias, Out: relSchema(rel, alias)}, alias, nil)
	for _, it := range extra {
		o, err := b.bindFromItem(it, nil)
		if err != nil {
			return nil, nil, err
		}
		if r, err = b.makeJoin(plan.InnerJoin, r, o, nil, nil); err != nil {
			return nil, nil, err
		}
	}
	if where != nil {
		if containsAggregate(where) {
			return nil, nil, b.errorf(aggregateLocation(where), sqlerr.GroupingError, "aggregate functions are not allowed in WHERE")
		}
		for _, c := range conjuncts(where) {
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
		return nil, nil, err
	}
	b.dmlScope = r.sc
	return rel, node, nil
}

func (b *Binder) bindUpdate(us *pg.UpdateStmt) (Statement, error) {
	if us.WithClause != nil {
		return nil, unsupported("WITH in UPDATE is not supported")
	}
	rel, node, err := b.bindTargetRel(us.Relation, us.FromClause, us.WhereClause, "update")
	if err != nil {
		return nil, err
	}
	ec := &exprCtx{sc: b.dmlScope, clause: "UPDATE"}
	cols, vals, err := b.bindSetList(rel, us.TargetList, ec)
	if err != nil {
		return nil, err
	}
	n := len(rel.Columns)
	exprs := make([]expr.Expr, 2*n)
	sch := make(plan.Schema, 2*n)
	rs := relSchema(rel, "")
	for i := 0; i < n; i++ {
		exprs[i] = &expr.ColumnRef{Index: i, Typ: rel.Columns[i].Type, Name: rel.Columns[i].Name}
		exprs[n+i] = exprs[i]
		sch[i], sch[n+i] = rs[i], rs[i]
	}
	for k, c := range cols {
		exprs[n+c] = vals[k]
	}
	var out plan.Node = &plan.Project{Input: node, Exprs: exprs, Out: sch}
	if len(us.FromClause) > 0 {
		// A target row joined to several FROM rows is updated once.
		out = &plan.Distinct{Input: out, On: exprs[:n]}
	}
	up := &Update{Table: rel, Plan: out}
	up.ReturningReads = returningReads(us.ReturningList)
	if up.Returning, up.ReturningSchema, err = b.bindReturning(rel, us.ReturningList); err != nil {
		return nil, err
	}
	return up, nil
}

func (b *Binder) bindDelete(ds *pg.DeleteStmt) (Statement, error) {
	if ds.WithClause != nil {
		return nil, unsupported("WITH in DELETE is not supported")
	}
	rel, node, err := b.bindTargetRel(ds.Relation, ds.UsingClause, ds.WhereClause, "delete from")
	if err != nil {
		return nil, err
	}
	n := len(rel.Columns)
	exprs := make([]expr.Expr, n)
	for i := range exprs {
		exprs[i] = &expr.ColumnRef{Index: i, Typ: rel.Columns[i].Type, Name: rel.Columns[i].Name}
	}
	var out plan.Node = node
	if len(ds.UsingClause) > 0 {
		out = &plan.Distinct{Input: &plan.Project{Input: node, Exprs: exprs, Out: relSchema(rel, "")}}
	}
	del := &Delete{Table: rel, Plan: out}
	del.ReturningReads = returningReads(ds.ReturningList)
	if del.Returning, del.ReturningSchema, err = b.bindReturning(rel, ds.ReturningList); err != nil {
		return nil, err
	}
	return del, nil
}

func (b *Binder) bindCopy(cs *pg.CopyStmt) (Statement, error) {
	if cs.IsProgram {
		return nil, unsupported("COPY ... PROGRAM is not supported")
	}
	if cs.WhereClause != nil {
		return nil, unsupported("COPY ... WHERE is not supported")
	}
	c := &Copy{From: cs.IsFrom, Filename: cs.Filename, Format: "text", Delimiter: "\t", Null: `\N`, Quote: `"`}
	for _, o := range cs.Options {
		d := o.GetDefElem()
		v := defElemString(d)
		switch d.Defname {
		case "format":
			c.Format = strings.ToLower(v)
			if c.Format == "csv" {
				c.Delimiter, c.Null = ",", ""
			}
		case "delimiter":
			c.Delimiter = v
		case "null":
			c.Null = v
		case "header":
			c.Header = v == "true" || v == "on" || v == "1"
		case "quote":
			c.Quote = v
		case "escape":
			c.Escape = v
		case "encoding":
			if !strings.EqualFold(v, "utf8") && !strings.EqualFold(v, "utf-8") {
				return nil, unsupported("COPY encoding %s is not supported", v)
			}
		default:
			return nil, sqlerr.Errorf(sqlerr.SyntaxError, "option \"%s\" not recognized", d.Defname)
		}
	}
	switch c.Format {
	case "text", "csv", "binary":
	default:
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "COPY format \"%s\" not recognized", c.Format)
	}
	if c.Escape == "" {
		c.Escape = c.Quote
	}
	if cs.Query != nil {
		if cs.IsFrom {
			return nil, sqlerr.New(sqlerr.SyntaxError, "COPY FROM does not support a query")
		}
		q, err := b.BindQuery(cs.Query.GetSelectStmt())
		if err != nil {
			return nil, err
		}
		c.Query = q
		return c, nil
	}
	what := "copy to"
	if cs.IsFrom {
		what = "copy from"
	}
	rel, err := b.cat.ResolveRelation(cs.Relation.Schemaname, cs.Relation.Relname)
	if err != nil {
		return nil, b.errAt(err, cs.Relation.Location)
	}
	if cs.IsFrom && rel.Kind != catalog.KindTable {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "cannot %s %s \"%s\"", what, rel.Kind, rel.Name)
	}
	c.Table = rel
	if c.Columns, err = b.targetColumns(rel, cs.Attlist); err != nil {
		return nil, err
	}
	if !cs.IsFrom {
		scan := &plan.Scan{Rel: rel, Alias: rel.Name, Out: relSchema(rel, "")}
		exprs := make([]expr.Expr, len(c.Columns))
		out := make(plan.Schema, len(c.Columns))
		for i, k := range c.Columns {
			exprs[i] = &expr.ColumnRef{Index: k, Typ: rel.Columns[k].Type, Name: rel.Columns[k].Name}
			out[i] = plan.Column{Name: rel.Columns[k].Name, Type: rel.Columns[k].Type}
		}
		c.Query = &plan.Project{Input: scan, Exprs: exprs, Out: out}
	}
	return c, nil
}

// insertWidth is the number of values an INSERT's source provides per row
// when it can be read from the syntax (VALUES rows, a simple select list
// without *), else -1.
func insertWidth(sel *pg.SelectStmt) int {
	if sel == nil {
		return -1
	}
	if len(sel.ValuesLists) > 0 {
		return len(sel.ValuesLists[0].GetList().GetItems())
	}
	if sel.Op != pg.SetOperation_SETOP_NONE {
		return insertWidth(sel.Larg)
	}
	for _, t := range sel.TargetList {
		if isStar(t.GetResTarget().Val) {
			return -1
		}
	}
	return len(sel.TargetList)
}
