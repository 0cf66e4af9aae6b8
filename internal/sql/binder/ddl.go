package binder

import (
	"slices"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// ColumnDef is a bound column of CREATE TABLE.
type ColumnDef struct {
	Name    string
	Type    types.Type
	NotNull bool
	// Default is the bound DEFAULT expression (already assignment-cast to
	// Type), nil when absent; DefaultText is its SQL text for the catalog.
	Default     expr.Expr
	DefaultText string
}

// CreateTable is CREATE TABLE (and CREATE SOURCE-like tables WITH
// (connector = ...)).
type CreateTable struct {
	Schema, Name string
	IfNotExists  bool
	Columns      []ColumnDef
	// PK lists primary-key column indices in key order; nil means the
	// table gets a hidden _row_id key (the session layer adds it).
	PK []int
	// Options are WITH (...) options, lower-cased keys, values as text.
	Options map[string]string
	// AppendOnly is set by WITH (appendonly = true) or APPEND ONLY.
	AppendOnly bool
	// Source is CREATE SOURCE: a connector-fed relation without storage.
	Source bool
	// Watermark is WATERMARK FOR col AS expr, nil when absent.
	Watermark *WatermarkDef
	// Format and Encode are FORMAT x ENCODE y [(EncodeOptions)],
	// upper-cased, "" when absent.
	Format, Encode string
	EncodeOptions  map[string]string
	// FromSource and FromTable are CREATE TABLE ... FROM source TABLE
	// 'upstream' (a CDC table of a shared source), "" when absent.
	FromSource, FromTable string
	// StarColumns: the column list began with * (the upstream table's
	// columns and key come first; see parser.CreateSource).
	StarColumns bool
}

// CreateTableAs is CREATE TABLE name [(columns)] AS query [WITH [NO]
// DATA]: Table (its columns the query's, named by the column list, with
// no primary key) is created, then filled with the query's rows unless
// WithData is false. Query is the query's text as the user wrote it.
type CreateTableAs struct {
	Table    *CreateTable
	Query    string
	WithData bool
}

func (*CreateTableAs) boundStmt() {}

func (b *Binder) bindCreateTableAs(c *pg.CreateTableAsStmt) (Statement, error) {
	if c.IsSelectInto {
		return nil, unsupported("SELECT INTO is not supported; use CREATE TABLE ... AS")
	}
	if c.Into.Rel.Relpersistence == "t" {
		return nil, unsupported("temporary tables are not supported")
	}
	if len(c.Into.Options) > 0 {
		return nil, unsupported("CREATE TABLE ... WITH (options) AS is not supported")
	}
	s, err := b.bindCreateView(c.Into.Rel, c.Into.ColNames, c.Query, false, c.IfNotExists, false)
	if err != nil {
		return nil, err
	}
	cv := s.(*CreateView)
	ct := &CreateTable{Schema: cv.Schema, Name: cv.Name, IfNotExists: c.IfNotExists}
	for _, col := range cv.Columns {
		t := col.Type
		if t.Kind == types.KindUnknown {
			t = types.Text
		}
		ct.Columns = append(ct.Columns, ColumnDef{Name: col.Name, Type: t})
	}
	return &CreateTableAs{Table: ct, Query: cv.Query, WithData: !c.Into.SkipData}, nil
}

// WatermarkDef is a bound WATERMARK FOR clause.
type WatermarkDef struct {
	Column int
	// Expr is bound against a row of the table's columns; it has the
	// column's type.
	Expr expr.Expr
	// Text is the expression's SQL text.
	Text string
}

// ObjectType is what DROP / SHOW drops or lists.
type ObjectType uint8

const (
	ObjTable ObjectType = iota
	ObjView
	ObjMaterializedView
	ObjSource
	ObjDatabase
	ObjSchema
	ObjUser
	ObjIndex
)

func (o ObjectType) String() string {
	return [...]string{"table", "view", "materialized view", "source", "database", "schema", "user", "index"}[o]
}

// QualName is [schema.]name.
type QualName struct{ Schema, Name string }

// Drop is DROP TABLE / VIEW / MATERIALIZED VIEW / SOURCE / DATABASE /
// SCHEMA / USER.
type Drop struct {
	Type     ObjectType
	Names    []QualName
	IfExists bool
	Cascade  bool
}

// CreateView is CREATE [MATERIALIZED] VIEW.
type CreateView struct {
	Schema, Name string
	Materialized bool
	IfNotExists  bool
	OrReplace    bool
	// Columns are the view's output columns (aliases applied; hidden
	// columns of the plan excluded).
	Columns plan.Schema
	Plan    plan.Node
	// Query is the defining SELECT as the user wrote it (a slice of the
	// statement's text, checked to parse to the same tree).
	Query string
	// DependsOn lists the relations the query names directly (tables,
	// views, materialized views; a view's own dependencies are its own),
	// each once, in first-use order.
	DependsOn []catalog.ObjectID
	// Functions lists the SQL functions the query calls (inlined; also
	// through plain views it reads), each once.
	Functions []catalog.ObjectID
	// EmitOnWindowClose: the view emits a row once its window closes
	// (Plan is then wrapped in plan.EmitOnWindowClose).
	EmitOnWindowClose bool
}

// CreateDatabase is CREATE DATABASE.
type CreateDatabase struct{ Name string }

// CreateSchema is CREATE SCHEMA [IF NOT EXISTS].
type CreateSchema struct {
	Name        string
	IfNotExists bool
}

// CreateUser is CREATE USER / ROLE and ALTER USER / ROLE.
type CreateUser struct {
	Alter bool
	Name  string
	// Password is nil when not given; PasswordNull is PASSWORD NULL.
	Password     *string
	PasswordNull bool
	// Flags holds SUPERUSER / LOGIN / CREATEDB ... options: name -> value.
	Flags map[string]bool
}

// SetVar is SET name = value / SET name TO DEFAULT / RESET name / RESET ALL.
type SetVar struct {
	Name string // lower-cased; "" for RESET ALL
	// Value is the setting's text (list items joined by ", "); Default
	// means SET ... TO DEFAULT or RESET.
	Value   string
	Default bool
	Local   bool
}

// ShowVar is SHOW name (SHOW ALL: Name "all").
type ShowVar struct{ Name string }

// TxnKind is BEGIN / COMMIT / ROLLBACK / a savepoint statement.
type TxnKind uint8

const (
	TxnBegin TxnKind = iota
	TxnCommit
	TxnRollback
	TxnSavepoint // SAVEPOINT, RELEASE [SAVEPOINT], ROLLBACK TO [SAVEPOINT]
)

// Transaction is BEGIN / START TRANSACTION / COMMIT / END / ROLLBACK /
// ABORT (Runnel accepts them; there are no multi-statement write
// transactions).
type Transaction struct{ Kind TxnKind }

func (*CreateTable) boundStmt()    {}
func (*Drop) boundStmt()           {}
func (*CreateView) boundStmt()     {}
func (*CreateDatabase) boundStmt() {}
func (*CreateSchema) boundStmt()   {}
func (*CreateUser) boundStmt()     {}
func (*SetVar) boundStmt()         {}
func (*ShowVar) boundStmt()        {}
func (*Transaction) boundStmt()    {}

// definitionText returns what parser.ViewQueryText / ColumnExprText cut
// from the statement's text after checking that it parses to the same tree
// as want (so that the stored text means what was bound). The text is the
// user's own: no tree is ever printed back to SQL by C code (I9).
func definitionText(text string, ok bool, want *pg.Node, what string) (string, error) {
	if ok {
		var got *pg.Node
		if want.GetSelectStmt() != nil {
			if st, err := parser.ParseOne(text); err == nil {
				got = st.AST
			}
		} else if e, err := parseExprText(text); err == nil {
			got = e
		}
		if got != nil && parser.SameTree(got, want) {
			return text, nil
		}
	}
	return "", sqlerr.Errorf(sqlerr.FeatureNotSupported, "cannot store the text of this %s", what)
}

// astText is the text the locations of the statement's AST refer to.
func (b *Binder) astText() string {
	if b.srcText != "" {
		return b.srcText
	}
	if b.stmt != nil {
		return b.stmt.Text
	}
	return ""
}

// defElemString returns a DefElem's argument as text.
func defElemString(d *pg.DefElem) string {
	a := d.Arg
	switch {
	case a == nil:
		return "true"
	case a.GetString_() != nil:
		return a.GetString_().Sval
	case a.GetInteger() != nil:
		return strconv.Itoa(int(a.GetInteger().Ival))
	case a.GetFloat() != nil:
		return a.GetFloat().Fval
	case a.GetBoolean() != nil:
		return strconv.FormatBool(a.GetBoolean().Boolval)
	case a.GetTypeName() != nil:
		return strings.Join(strs(a.GetTypeName().Names), ".")
	case a.GetAConst() != nil:
		c := a.GetAConst()
		switch {
		case c.GetSval() != nil:
			return c.GetSval().Sval
		case c.GetIval() != nil:
			return strconv.Itoa(int(c.GetIval().Ival))
		case c.GetFval() != nil:
			return c.GetFval().Fval
		case c.GetBoolval() != nil:
			return strconv.FormatBool(c.GetBoolval().Boolval)
		}
	case a.GetList() != nil:
		return strings.Join(strs(a.GetList().Items), ",")
	}
	return ""
}

func (b *Binder) bindCreateTable(cs *pg.CreateStmt) (Statement, error) {
	if len(cs.InhRelations) > 0 || cs.Partspec != nil || cs.OfTypename != nil {
		return nil, unsupported("table inheritance and partitioning are not supported")
	}
	if cs.Relation.Relpersistence == "t" {
		return nil, unsupported("temporary tables are not supported")
	}
	ct := &CreateTable{Schema: cs.Relation.Schemaname, Name: cs.Relation.Relname, IfNotExists: cs.IfNotExists}
	names := map[string]bool{}
	var tableCons []*pg.Constraint
	for _, e := range cs.TableElts {
		if c := e.GetConstraint(); c != nil {
			tableCons = append(tableCons, c)
			continue
		}
		cd := e.GetColumnDef()
		if cd == nil {
			return nil, unsupported("unsupported table element")
		}
		if names[cd.Colname] {
			return nil, b.errorf(cd.Location, sqlerr.DuplicateColumn, "column \"%s\" specified more than once", cd.Colname)
		}
		names[cd.Colname] = true
		t, err := ResolveTypeName(cd.TypeName)
		if err != nil {
			return nil, b.errAt(err, cd.TypeName.Location)
		}
		col := ColumnDef{Name: cd.Colname, Type: t, NotNull: cd.IsNotNull}
		idx := len(ct.Columns)
		for k, cn := range cd.Constraints {
			c := cn.GetConstraint()
			switch c.Contype {
			case pg.ConstrType_CONSTR_NOTNULL:
				col.NotNull = true
			case pg.ConstrType_CONSTR_NULL:
			case pg.ConstrType_CONSTR_DEFAULT:
				limit := -1 // the DEFAULT expression ends before the next constraint
				if k+1 < len(cd.Constraints) {
					limit = int(cd.Constraints[k+1].GetConstraint().GetLocation())
				}
				def, text, err := b.bindDefault(c.RawExpr, t, cd.Colname, int(c.Location), limit)
				if err != nil {
					return nil, err
				}
				col.Default, col.DefaultText = def, text
			case pg.ConstrType_CONSTR_PRIMARY:
				if ct.PK != nil {
					return nil, b.errorf(c.Location, sqlerr.InvalidTableDefinition, "multiple primary keys for table \"%s\" are not allowed", ct.Name)
				}
				ct.PK = []int{idx}
				col.NotNull = true
			default:
				return nil, b.errorf(c.Location, sqlerr.FeatureNotSupported, "column constraint %s is not supported", strings.TrimPrefix(c.Contype.String(), "CONSTR_"))
			}
		}
		if cd.RawDefault != nil {
			def, text, err := b.bindDefault(cd.RawDefault, t, cd.Colname, -1, -1)
			if err != nil {
				return nil, err
			}
			col.Default, col.DefaultText = def, text
		}
		ct.Columns = append(ct.Columns, col)
	}
	tableCons = append(tableCons, constraintsOf(cs.Constraints)...)
	for _, c := range tableCons {
		switch c.Contype {
		case pg.ConstrType_CONSTR_PRIMARY:
			if ct.PK != nil {
				return nil, b.errorf(c.Location, sqlerr.InvalidTableDefinition, "multiple primary keys for table \"%s\" are not allowed", ct.Name)
			}
			for _, k := range strs(c.Keys) {
				i := -1
				for j, col := range ct.Columns {
					if col.Name == k {
						i = j
					}
				}
				if i < 0 {
					return nil, b.errorf(c.Location, sqlerr.UndefinedColumn, "column \"%s\" named in key does not exist", k)
				}
				for _, p := range ct.PK {
					if p == i {
						return nil, b.errorf(c.Location, sqlerr.DuplicateColumn, "column \"%s\" appears twice in primary key constraint", k)
					}
				}
				ct.PK = append(ct.PK, i)
				ct.Columns[i].NotNull = true
			}
		default:
			return nil, b.errorf(c.Location, sqlerr.FeatureNotSupported, "table constraint %s is not supported", strings.TrimPrefix(c.Contype.String(), "CONSTR_"))
		}
	}
	if len(cs.Options) > 0 {
		ct.Options = map[string]string{}
		for _, o := range cs.Options {
			d := o.GetDefElem()
			key := strings.ToLower(d.Defname)
			if d.Defnamespace != "" {
				key = strings.ToLower(d.Defnamespace) + "." + key
			}
			ct.Options[key] = defElemString(d)
		}
		if v, ok := ct.Options["appendonly"]; ok {
			ct.AppendOnly = v == "true" || v == "on" || v == "1"
		}
	}
	return ct, nil
}

func (b *Binder) bindCreateSource(cs *parser.CreateSource) (Statement, error) {
	b.srcText = cs.Text
	// PRIMARY KEY (col) may name an INCLUDE column (RisingWave's upsert
	// form: INCLUDE key AS k ... PRIMARY KEY (k)); such a key is resolved
	// once the INCLUDE columns exist.
	var includePK *pg.Constraint
	if len(cs.Includes) > 0 {
		inc := map[string]bool{}
		for _, i := range cs.Includes {
			inc[includeColumn(i)] = true
		}
		var elts []*pg.Node
		for _, e := range cs.Create.TableElts {
			if c := e.GetConstraint(); c != nil && c.Contype == pg.ConstrType_CONSTR_PRIMARY && slices.ContainsFunc(strs(c.Keys), func(k string) bool { return inc[k] }) {
				includePK = c
				continue
			}
			elts = append(elts, e)
		}
		cs.Create.TableElts = elts
	}
	st, err := b.bindCreateTable(cs.Create)
	if err != nil {
		return nil, err
	}
	ct := st.(*CreateTable)
	ct.Source = cs.IsSource
	ct.AppendOnly = ct.AppendOnly || cs.AppendOnly || cs.IsSource
	ct.Format, ct.Encode, ct.EncodeOptions = cs.Format, cs.Encode, cs.EncodeOptions
	if err := bindIncludes(ct, cs.Includes); err != nil {
		return nil, err
	}
	if c := includePK; c != nil {
		if ct.PK != nil {
			return nil, b.errorf(c.Location, sqlerr.InvalidTableDefinition, "multiple primary keys for table \"%s\" are not allowed", ct.Name)
		}
		for _, k := range strs(c.Keys) {
			i := slices.IndexFunc(ct.Columns, func(col ColumnDef) bool { return col.Name == k })
			if i < 0 {
				return nil, b.errorf(c.Location, sqlerr.UndefinedColumn, "column \"%s\" named in key does not exist", k)
			}
			if slices.Contains(ct.PK, i) {
				return nil, b.errorf(c.Location, sqlerr.DuplicateColumn, "column \"%s\" appears twice in primary key constraint", k)
			}
			ct.PK = append(ct.PK, i)
			ct.Columns[i].NotNull = true
		}
	}
	ct.FromSource, ct.FromTable = cs.FromSource, cs.FromTable
	ct.StarColumns = cs.StarColumns
	if cs.TimeIndex != "" { // GreptimeDB's TIME INDEX: a time-series table (internal/tsdb)
		if ct.Options == nil {
			ct.Options = map[string]string{}
		}
		ct.Options["time_index"] = cs.TimeIndex
	}
	if wm := cs.Watermark; wm != nil {
		col := -1
		sch := make(plan.Schema, len(ct.Columns))
		for i, c := range ct.Columns {
			sch[i] = plan.Column{Name: c.Name, Type: c.Type, Table: ct.Name}
			if c.Name == wm.Column {
				col = i
			}
		}
		if col < 0 {
			return nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "column \"%s\" named in WATERMARK does not exist", wm.Column)
		}
		t := ct.Columns[col].Type
		if t.Kind != types.KindTimestamp && t.Kind != types.KindTimestamptz {
			return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "WATERMARK column \"%s\" must be a timestamp, not %s", wm.Column, t.Name())
		}
		sc := &scope{width: len(sch)}
		sc.addTable(ct.Name, sch, 0)
		e, err := b.bindExpr(wm.Expr, &exprCtx{sc: sc, clause: "WATERMARK"})
		if err != nil {
			return nil, err
		}
		if e, err = expr.NewCast(e, t, expr.CastImplicit); err != nil {
			return nil, err
		}
		ct.Watermark = &WatermarkDef{Column: col, Expr: e, Text: wm.Text}
	}
	return ct, nil
}

func constraintsOf(ns []*pg.Node) []*pg.Constraint {
	var out []*pg.Constraint
	for _, n := range ns {
		if c := n.GetConstraint(); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// bindDefault binds a DEFAULT expression (no column references allowed)
// and casts it to the column type.
// from is the byte offset of its DEFAULT keyword (or CONSTRAINT name) in
// the statement, limit that of the column's next constraint (-1: none).
func (b *Binder) bindDefault(n *pg.Node, t types.Type, col string, from, limit int) (expr.Expr, string, error) {
	walkErr := error(nil)
	walkAST(n, func(x *pg.Node) bool {
		if x.GetColumnRef() != nil && walkErr == nil {
			walkErr = b.errorf(location(x), sqlerr.FeatureNotSupported, "cannot use column reference in DEFAULT expression")
		}
		if x.GetSubLink() != nil && walkErr == nil {
			walkErr = b.errorf(location(x), sqlerr.FeatureNotSupported, "cannot use subquery in DEFAULT expression")
		}
		return walkErr == nil
	})
	if walkErr != nil {
		return nil, "", walkErr
	}
	e, err := b.bindExpr(n, &exprCtx{sc: &scope{}, clause: "DEFAULT expressions"})
	if err != nil {
		return nil, "", err
	}
	c, err := expr.NewCast(e, t, expr.CastAssignment)
	if se := sqlerr.From(err); se != nil && se.Code != "42846" && se.Code != sqlerr.DatatypeMismatch {
		// A literal that does not read as the type ('x' for int): 22P02
		// as in PostgreSQL.
		return nil, "", b.errAt(err, location(n))
	}
	if err != nil {
		return nil, "", b.errorf(location(n), sqlerr.DatatypeMismatch, "column \"%s\" is of type %s but default expression is of type %s", col, t.Name(), e.Type().Name())
	}
	text, ok := parser.ColumnExprText(b.astText(), from, limit)
	text, err = definitionText(text, ok, n, "DEFAULT expression")
	if err != nil {
		return nil, "", err
	}
	return c, text, nil
}

// AddColumnDefault binds the DEFAULT expression raw of ALTER TABLE ...
// ADD COLUMN col t in stmt (the constraint starts at from and ends before
// limit, -1 at the end of the column's definition) and returns its SQL
// text for the catalog, checked as CREATE TABLE checks a default.
func AddColumnDefault(cat Catalog, stmt *parser.Statement, raw *pg.Node, t types.Type, col string, from, limit int) (string, error) {
	_, text, err := New(cat, stmt, nil).bindDefault(raw, t, col, from, limit)
	return text, err
}

// BindDefault binds a column's stored DEFAULT text (catalog.Column.Default)
// for INSERT.
func BindDefault(text string, t types.Type) (expr.Expr, error) {
	st, err := parseExprText(text)
	if err != nil {
		return nil, err
	}
	b := &Binder{}
	e, err := b.bindExpr(st, &exprCtx{sc: &scope{}, clause: "DEFAULT expressions"})
	if err != nil {
		return nil, err
	}
	return expr.NewCast(e, t, expr.CastAssignment)
}

func (b *Binder) bindDrop(ds *pg.DropStmt) (Statement, error) {
	d := &Drop{IfExists: ds.MissingOk, Cascade: ds.Behavior == pg.DropBehavior_DROP_CASCADE}
	switch ds.RemoveType {
	case pg.ObjectType_OBJECT_TABLE:
		d.Type = ObjTable
	case pg.ObjectType_OBJECT_VIEW:
		d.Type = ObjView
	case pg.ObjectType_OBJECT_MATVIEW:
		d.Type = ObjMaterializedView
	case pg.ObjectType_OBJECT_SCHEMA:
		d.Type = ObjSchema
	case pg.ObjectType_OBJECT_INDEX:
		d.Type = ObjIndex
	case pg.ObjectType_OBJECT_FOREIGN_TABLE:
		d.Type = ObjSource
	default:
		return nil, unsupported("DROP %s is not supported", strings.TrimPrefix(ds.RemoveType.String(), "OBJECT_"))
	}
	for _, o := range ds.Objects {
		var parts []string
		if l := o.GetList(); l != nil {
			parts = strs(l.Items)
		} else if s := o.GetString_(); s != nil {
			parts = []string{s.Sval}
		}
		switch len(parts) {
		case 1:
			d.Names = append(d.Names, QualName{Name: parts[0]})
		case 2:
			d.Names = append(d.Names, QualName{Schema: parts[0], Name: parts[1]})
		case 3:
			d.Names = append(d.Names, QualName{Schema: parts[1], Name: parts[2]})
		default:
			return nil, sqlerr.New(sqlerr.SyntaxError, "improper qualified name")
		}
	}
	return d, nil
}

func (b *Binder) bindCreateView(name *pg.RangeVar, aliases []*pg.Node, query *pg.Node, mat, ifNotExists, replace bool) (Statement, error) {
	sel := query.GetSelectStmt()
	if sel == nil {
		return nil, unsupported("views must be defined by a SELECT")
	}
	// The stored definition is the user's text, taken before binding.
	text, ok := parser.ViewQueryText(b.astText())
	text, err := definitionText(text, ok, query, "view definition")
	if err != nil {
		return nil, err
	}
	if !mat {
		// A plain view is expanded where it is used: one more level of
		// view nesting than its query has (see maxViewNesting).
		b.viewDepth++
	}
	q, err := b.BindQuery(sel)
	if err != nil {
		return nil, err
	}
	if len(b.params) > 0 {
		return nil, sqlerr.New(sqlerr.UndefinedParameter, "there is no parameter $1")
	}
	cols := visible(q.Schema())
	if len(aliases) > len(cols) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "CREATE VIEW specifies more column names than columns")
	}
	names := strs(aliases)
	seen := map[string]bool{}
	for i := range cols {
		if i < len(names) {
			cols[i].Name = names[i]
		}
		cols[i].Table = ""
		if seen[cols[i].Name] {
			return nil, sqlerr.Errorf(sqlerr.DuplicateColumn, "column \"%s\" specified more than once", cols[i].Name)
		}
		seen[cols[i].Name] = true
	}
	if len(cols) != len(q.Schema()) {
		q = projectVisible(q)
	}
	q = renameSchema(q, cols)
	eowc := b.stmt != nil && b.stmt.EmitOnWindowClose
	if eowc {
		if !mat {
			return nil, unsupported("EMIT ON WINDOW CLOSE is supported only for materialized views")
		}
		q = &plan.EmitOnWindowClose{Input: q}
	}
	return &CreateView{Schema: name.Schemaname, Name: name.Relname, Materialized: mat, IfNotExists: ifNotExists,
		OrReplace: replace, Columns: cols, Plan: q, Query: text, DependsOn: b.deps, Functions: b.udfDeps, EmitOnWindowClose: eowc}, nil
}

func (b *Binder) bindRole(name string, opts []*pg.Node, alter bool) (Statement, error) {
	u := &CreateUser{Alter: alter, Name: name, Flags: map[string]bool{}}
	for _, o := range opts {
		d := o.GetDefElem()
		switch d.Defname {
		case "password":
			if d.Arg == nil {
				u.PasswordNull = true
				continue
			}
			p := defElemString(d)
			u.Password = &p
		case "superuser", "createdb", "createrole", "canlogin", "inherit", "replication", "bypassrls":
			v := true
			if d.Arg != nil && d.Arg.GetBoolean() != nil {
				v = d.Arg.GetBoolean().Boolval
			} else if d.Arg != nil && d.Arg.GetInteger() != nil {
				v = d.Arg.GetInteger().Ival != 0
			}
			u.Flags[d.Defname] = v
		default:
			return nil, unsupported("role option %s is not supported", d.Defname)
		}
	}
	return u, nil
}

func (b *Binder) bindSet(vs *pg.VariableSetStmt) (Statement, error) {
	s := &SetVar{Name: strings.ToLower(vs.Name), Local: vs.IsLocal}
	switch vs.Kind {
	case pg.VariableSetKind_VAR_SET_VALUE:
		var parts []string
		for _, a := range vs.Args {
			c := a.GetAConst()
			switch {
			case c == nil && a.GetTypeCast() != nil:
				// SET TIME ZONE INTERVAL '...': keep the literal.
				if ac := a.GetTypeCast().Arg.GetAConst(); ac != nil && ac.GetSval() != nil {
					parts = append(parts, ac.GetSval().Sval)
				}
			case c == nil:
				return nil, unsupported("unsupported SET value")
			case c.GetSval() != nil:
				parts = append(parts, c.GetSval().Sval)
			case c.GetIval() != nil:
				parts = append(parts, strconv.Itoa(int(c.GetIval().Ival)))
			case c.GetFval() != nil:
				parts = append(parts, c.GetFval().Fval)
			case c.GetBoolval() != nil:
				parts = append(parts, strconv.FormatBool(c.GetBoolval().Boolval))
			}
		}
		s.Value = strings.Join(parts, ", ")
	case pg.VariableSetKind_VAR_SET_DEFAULT, pg.VariableSetKind_VAR_RESET:
		s.Default = true
	case pg.VariableSetKind_VAR_RESET_ALL:
		s.Name, s.Default = "", true
	case pg.VariableSetKind_VAR_SET_MULTI:
		switch s.Name {
		case "transaction", "session characteristics":
			return &SetVar{Name: "transaction"}, nil
		}
		return nil, unsupported("SET %s is not supported", s.Name)
	default:
		return nil, unsupported("this form of SET is not supported")
	}
	return s, nil
}

// includeTypes are the types of RisingWave's INCLUDE columns (Kafka's
// record metadata): header 'name' is the named header's value (bytea);
// header alone is every header, as a jsonb object of name → text value;
// payload is the whole JSON value as jsonb.
var includeTypes = map[string]types.Type{
	"key": types.Bytea, "partition": types.Varchar, "offset": types.Varchar,
	"timestamp": types.Timestamptz, "header": types.Jsonb, "payload": types.Jsonb,
}

// includeColumn is the name of an INCLUDE clause's column: its AS name,
// or RisingWave's default _rw_kafka_<kind>[_<header>].
func includeColumn(inc parser.Include) string {
	if inc.Column != "" {
		return inc.Column
	}
	col := "_rw_kafka_" + inc.Kind
	if inc.Header != "" {
		col += "_" + inc.Header
	}
	return col
}

// bindIncludes adds the INCLUDE columns after the declared ones, and names
// them in the options as include.<kind>[.<header>] = column, which the
// connector reads.
func bindIncludes(ct *CreateTable, incs []parser.Include) error {
	for _, inc := range incs {
		typ, ok := includeTypes[inc.Kind]
		if !ok {
			return sqlerr.Errorf(sqlerr.FeatureNotSupported, "INCLUDE %s is not supported (supported: key, partition, offset, timestamp, header, payload)", inc.Kind)
		}
		key := "include." + inc.Kind
		if inc.Header != "" {
			typ = types.Bytea
			key += "." + inc.Header
		}
		col := includeColumn(inc)
		for _, c := range ct.Columns {
			if c.Name == col {
				return sqlerr.Errorf(sqlerr.DuplicateColumn, "column %q specified more than once", col)
			}
		}
		if ct.Options == nil {
			ct.Options = map[string]string{}
		}
		if _, dup := ct.Options[key]; dup {
			return sqlerr.Errorf(sqlerr.DuplicateObject, "INCLUDE %s given more than once", strings.TrimPrefix(key, "include."))
		}
		ct.Options[key] = col
		ct.Columns = append(ct.Columns, ColumnDef{Name: col, Type: typ})
	}
	return nil
}
