package binder

import (
	"slices"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// UDFCatalog is optionally implemented by a Catalog that holds
// user-defined SQL functions (CREATE FUNCTION ... LANGUAGE sql).
type UDFCatalog interface {
	// ResolveUDFs returns the functions named name in schema ("" for the
	// search path); none is not an error.
	ResolveUDFs(schema, name string) []*catalog.Function
}

// maxUDFNesting bounds how deep SQL functions may call SQL functions.
const maxUDFNesting = 32

// A SQL function is inlined: its body, with each reference to a parameter
// ($n, the parameter's name, or function.name) replaced by the call's
// argument cast to the parameter's type, is bound in place of the call.
// A body that is one expression (SELECT expr with nothing else, or RETURN
// expr) becomes that expression; any other SELECT becomes a scalar
// subquery, as PostgreSQL's scalar SQL functions return the first row of
// their last query. Inlining keeps views incremental (the body is planned
// with the rest of the query) and needs no runtime of its own.

// udfCandidates returns the SQL functions fc may call (nil when the
// catalog has none of that name).
func (b *Binder) udfCandidates(fc *pg.FuncCall) []*catalog.Function {
	uc, ok := b.cat.(UDFCatalog)
	if !ok {
		return nil
	}
	schema := ""
	if len(fc.Funcname) == 2 {
		schema = fc.Funcname[0].GetString_().GetSval()
	}
	if len(fc.Funcname) > 2 {
		return nil
	}
	return uc.ResolveUDFs(schema, fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval())
}

// pickUDF chooses the function whose parameters the arguments fit: an
// exact match of types, else the only one they convert to implicitly.
func pickUDF(cands []*catalog.Function, args []types.Type) (*catalog.Function, error) {
	var fits []*catalog.Function
	for _, f := range cands {
		if len(f.ArgTypes) != len(args) {
			continue
		}
		exact, ok := true, true
		for i, a := range args {
			p := f.ArgTypes[i]
			if a.Kind == p.Kind && a.Text == p.Text {
				continue
			}
			exact = false
			if !expr.CanCoerce(a, p, expr.CastImplicit) {
				ok = false
				break
			}
		}
		if exact {
			return f, nil
		}
		if ok {
			fits = append(fits, f)
		}
	}
	if len(fits) > 1 {
		// PostgreSQL's rule for unknown-typed arguments (quoted
		// literals): at each such position prefer the candidates that take
		// a string type there, if any does.
		for i, a := range args {
			if a.Kind != types.KindUnknown {
				continue
			}
			var str []*catalog.Function
			for _, f := range fits {
				if f.ArgTypes[i].Kind == types.KindVarchar {
					str = append(str, f)
				}
			}
			if len(str) > 0 {
				fits = str
			}
		}
	}
	switch len(fits) {
	case 0:
		return nil, nil
	case 1:
		return fits[0], nil
	}
	return nil, sqlerr.Errorf(sqlerr.AmbiguousFunction, "function %s is not unique", fits[0].Name)
}

// tryUDF binds fc as a call of the candidate its bound arguments fit;
// ok is false when none fits.
func (b *Binder) tryUDF(cands []*catalog.Function, fc *pg.FuncCall, args []expr.Expr, ec *exprCtx) (e expr.Expr, ok bool, err error) {
	if fc.AggStar || fc.AggDistinct || len(fc.AggOrder) > 0 || fc.AggFilter != nil || fc.AggWithinGroup {
		return nil, true, b.errAt(sqlerr.Errorf(sqlerr.WrongObjectType, "%s is not an aggregate function", cands[0].Name), fc.Location)
	}
	if fc.FuncVariadic {
		return nil, true, b.errAt(sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s with a VARIADIC argument does not exist", cands[0].Name), fc.Location)
	}
	for _, a := range fc.Args {
		if a.GetNamedArgExpr() != nil {
			return nil, true, b.errAt(unsupported("named arguments in calls of SQL functions are not supported"), fc.Location)
		}
	}
	ts := make([]types.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	f, err := pickUDF(cands, ts)
	if f == nil || err != nil {
		return nil, err != nil, b.errAt(err, fc.Location)
	}
	e, err = b.callUDF(f, fc, ec)
	return e, true, err
}

// UDFDeps returns the SQL functions the bound statement calls.
func (b *Binder) UDFDeps() []catalog.ObjectID { return b.udfDeps }

// callUDF binds a call of f: its body with the arguments substituted.
func (b *Binder) callUDF(f *catalog.Function, fc *pg.FuncCall, ec *exprCtx) (expr.Expr, error) {
	e, err := b.inlineUDF(f, fc, ec, true)
	if err == nil && !slices.Contains(b.udfDeps, f.ID) {
		b.udfDeps = append(b.udfDeps, f.ID)
	}
	return e, err
}

// inlineUDF binds f's body with fc's arguments substituted, cast to the
// result type when castResult.
func (b *Binder) inlineUDF(f *catalog.Function, fc *pg.FuncCall, ec *exprCtx, castResult bool) (expr.Expr, error) {
	if f.ID != 0 && slices.Contains(b.udfs, f.ID) {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "SQL function %s calls itself: recursive SQL functions are not supported", f.Name)
	}
	if len(b.udfs) >= maxUDFNesting {
		return nil, parser.StackDepthError()
	}
	body, err := udfBody(f)
	if err != nil {
		return nil, err
	}
	// Each argument is bound where it is used in the body, but in the
	// caller's scope (see bindUDFArg): a column name in it never resolves
	// to a column of the body's FROM.
	if len(fc.Args) != len(f.ArgTypes) {
		return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s takes %d arguments, not %d", f.Name, len(f.ArgTypes), len(fc.Args))
	}
	args := make([]*pg.Node, len(fc.Args))
	for i, a := range fc.Args {
		if args[i], err = castNode(b.udfArgMarker(a, ec), f.ArgTypes[i]); err != nil {
			return nil, err
		}
	}
	shadowed := b.columnNamesOf(body)
	sub := func(n *pg.Node) *pg.Node {
		if p := n.GetParamRef(); p != nil {
			if i := int(p.Number) - 1; i >= 0 && i < len(args) {
				return proto.Clone(args[i]).(*pg.Node)
			}
			return nil
		}
		cr := n.GetColumnRef()
		if cr == nil {
			return nil
		}
		var name string
		switch len(cr.Fields) {
		case 1:
			name = cr.Fields[0].GetString_().GetSval()
			if shadowed[name] {
				return nil // a column of the body's FROM wins, as in PostgreSQL
			}
		case 2:
			if cr.Fields[0].GetString_().GetSval() != f.Name {
				return nil
			}
			name = cr.Fields[1].GetString_().GetSval()
		default:
			return nil
		}
		for i, an := range f.ArgNames {
			if an != "" && an == name {
				return proto.Clone(args[i]).(*pg.Node)
			}
		}
		return nil
	}
	walkNodes(body.ProtoReflect(), sub)
	e := singleExpr(body.GetSelectStmt())
	if e == nil {
		// A scalar SQL function returns the first row of its query (NULL
		// when there is none), never an error for more.
		if sel := body.GetSelectStmt(); sel.LimitCount == nil {
			sel.LimitCount = &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Val: &pg.A_Const_Ival{Ival: &pg.Integer{Ival: 1}}, Location: -1}}}
			sel.LimitOption = pg.LimitOption_LIMIT_OPTION_COUNT
		}
		e = &pg.Node{Node: &pg.Node_SubLink{SubLink: &pg.SubLink{SubLinkType: pg.SubLinkType_EXPR_SUBLINK, Subselect: body, Location: -1}}}
	}
	if castResult {
		if e, err = castNode(e, f.Return); err != nil {
			return nil, err
		}
	}
	if f.Strict && len(args) > 0 {
		// STRICT: NULL when any argument is NULL, the body unevaluated.
		var anyNull []*pg.Node
		for _, a := range args {
			anyNull = append(anyNull, &pg.Node{Node: &pg.Node_NullTest{NullTest: &pg.NullTest{
				Arg: proto.Clone(a).(*pg.Node), Nulltesttype: pg.NullTestType_IS_NULL, Location: -1}}})
		}
		cond := anyNull[0]
		if len(anyNull) > 1 {
			cond = &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_OR_EXPR, Args: anyNull, Location: -1}}}
		}
		null := &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Isnull: true, Location: -1}}}
		if castResult {
			if null, err = castNode(null, f.Return); err != nil {
				return nil, err
			}
		}
		e = &pg.Node{Node: &pg.Node_CaseExpr{CaseExpr: &pg.CaseExpr{
			Args:      []*pg.Node{{Node: &pg.Node_CaseWhen{CaseWhen: &pg.CaseWhen{Expr: cond, Result: null, Location: -1}}}},
			Defresult: e, Location: -1}}}
	}
	b.udfs = append(b.udfs, f.ID)
	bound, err := b.bindExpr(e, ec)
	b.udfs = b.udfs[:len(b.udfs)-1]
	if err != nil {
		return nil, udfError(f, err)
	}
	return bound, nil
}

// udfArgMarkerName is the first field of the ColumnRef that stands for a
// SQL function's argument in its inlined body; no SQL name can hold NUL.
const udfArgMarkerName = "\x00udfarg"

// udfArg is an argument of an inlined SQL function call and the context
// of the call.
type udfArg struct {
	node *pg.Node
	ec   *exprCtx
}

func (b *Binder) udfArgMarker(n *pg.Node, ec *exprCtx) *pg.Node {
	b.udfArgs = append(b.udfArgs, udfArg{node: n, ec: ec})
	idx := strconv.Itoa(len(b.udfArgs) - 1)
	return &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Location: -1, Fields: []*pg.Node{
		{Node: &pg.Node_String_{String_: &pg.String{Sval: udfArgMarkerName}}},
		{Node: &pg.Node_String_{String_: &pg.String{Sval: idx}}}}}}}
}

// bindUDFArg binds the argument a marker stands for. Where the body uses
// it at the call's own level, it is bound in the call's context (so an
// aggregate or window call in it means what it does in the caller). Inside
// a subquery of the body it is bound against a chain of scopes that have
// the subqueries' levels but none of their columns, ending in the
// caller's scope: its columns become outer references of the right depth
// and mark the subqueries correlated, exactly as if the caller had written
// the subquery with the argument in place, minus the capture.
func (b *Binder) bindUDFArg(cr *pg.ColumnRef, ec *exprCtx) (expr.Expr, error) {
	idx, err := strconv.Atoi(cr.Fields[1].GetString_().GetSval())
	if err != nil || idx < 0 || idx >= len(b.udfArgs) {
		return nil, sqlerr.New(sqlerr.InternalError, "binder: bad SQL function argument reference")
	}
	a := b.udfArgs[idx]
	// The call's level is the scope with the call's parent: a subquery
	// sees a copy of its enclosing level's scope (with its own correlated
	// flag), not the scope itself.
	depth := 0
	s := ec.sc
	for s != nil && s.parent != a.ec.sc.parent {
		s, depth = s.parent, depth+1
	}
	if s == nil {
		return nil, sqlerr.New(sqlerr.InternalError, "binder: SQL function argument used outside its call")
	}
	if depth == 0 {
		return b.bindExpr(a.node, a.ec)
	}
	var head, prev *scope
	for s, k := ec.sc, 0; k < depth; s, k = s.parent, k+1 {
		cp := &scope{correlated: s.correlated, width: s.width, flatParent: s.flatParent}
		if prev == nil {
			head = cp
		} else {
			prev.parent = cp
		}
		prev = cp
	}
	prev.parent = s
	return b.bindExpr(a.node, &exprCtx{sc: head, clause: a.ec.clause})
}

// udfError names the function an error inside its body comes from; its
// position, if any, pointed into the body, not the client's statement.
func udfError(f *catalog.Function, err error) error {
	e := sqlerr.From(err)
	if e == nil {
		return err
	}
	if strings.Contains(e.Message, "SQL function") {
		return e.WithPosition(0)
	}
	ne := *e.WithPosition(0)
	ne.Message = e.Message + " (in SQL function \"" + f.Name + "\")"
	return &ne
}

// udfBody parses a function's body into a SELECT statement node, with
// every location unknown (they point into the body's text).
func udfBody(f *catalog.Function) (*pg.Node, error) {
	text := f.Body
	if f.BodyIsExpr {
		text = "SELECT " + text
	}
	st, err := parser.ParseOne(text)
	if err != nil || st.AST == nil || st.AST.GetSelectStmt() == nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidFunctionDefinition, "SQL function %s has an invalid body", f.Name)
	}
	clearLocations(st.AST.ProtoReflect())
	return st.AST, nil
}

// singleExpr is the expression of a SELECT that is nothing but one
// expression (no FROM, WHERE, grouping, set operation, ordering or limit).
func singleExpr(s *pg.SelectStmt) *pg.Node {
	if s == nil || len(s.TargetList) != 1 || len(s.FromClause) != 0 || s.WhereClause != nil ||
		len(s.GroupClause) != 0 || s.HavingClause != nil || len(s.WindowClause) != 0 || len(s.ValuesLists) != 0 ||
		len(s.SortClause) != 0 || s.LimitCount != nil || s.LimitOffset != nil || s.Op != pg.SetOperation_SETOP_NONE ||
		len(s.DistinctClause) != 0 || s.WithClause != nil {
		return nil
	}
	rt := s.TargetList[0].GetResTarget()
	if rt == nil || rt.Val.GetColumnRef() != nil && hasStar(rt.Val.GetColumnRef()) {
		return nil
	}
	return rt.Val
}

func hasStar(cr *pg.ColumnRef) bool {
	for _, f := range cr.Fields {
		if f.GetAStar() != nil {
			return true
		}
	}
	return false
}

// columnNamesOf collects the column names of the relations a body's FROM
// clauses name (at any depth): an unqualified name among them refers to
// the column, not to a parameter of the same name.
func (b *Binder) columnNamesOf(body *pg.Node) map[string]bool {
	out := map[string]bool{}
	walkNodes(body.ProtoReflect(), func(n *pg.Node) *pg.Node {
		rv := n.GetRangeVar()
		if rv == nil {
			return nil
		}
		if r, err := b.cat.ResolveRelation(rv.Schemaname, rv.Relname); err == nil {
			for _, c := range r.Columns {
				out[c.Name] = true
			}
		}
		return nil
	})
	return out
}

// castNode wraps n in CAST(n AS t).
func castNode(n *pg.Node, t types.Type) (*pg.Node, error) {
	tn, err := typeNameNode(t)
	if err != nil {
		return nil, err
	}
	return &pg.Node{Node: &pg.Node_TypeCast{TypeCast: &pg.TypeCast{Arg: n, TypeName: tn, Location: -1}}}, nil
}

// typeNameNode is the parse tree of t's name. Every type a user can name
// prints as a name PostgreSQL's grammar reads back as the same type; one
// that does not (a type added later without a SQL name) is refused with
// 0A000 rather than inlined wrong (I9: never a panic on user input).
func typeNameNode(t types.Type) (*pg.TypeName, error) {
	st, err := parser.ParseOne("SELECT NULL::" + t.Name())
	if err == nil && st.AST != nil {
		if tl := st.AST.GetSelectStmt().GetTargetList(); len(tl) == 1 {
			if tc := tl[0].GetResTarget().GetVal().GetTypeCast(); tc != nil && tc.TypeName != nil {
				if back, err := ResolveTypeName(tc.TypeName); err == nil && back.Kind == t.Kind {
					clearLocations(tc.TypeName.ProtoReflect())
					return tc.TypeName, nil
				}
			}
		}
	}
	return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "type %s cannot be a SQL function's parameter or result type", t.Name())
}

var nodeDesc = (&pg.Node{}).ProtoReflect().Descriptor()

// walkNodes visits every Node under m depth first. Where f returns a
// replacement, the Node is replaced and not descended into.
func walkNodes(m protoreflect.Message, f func(*pg.Node) *pg.Node) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		visit := func(child protoreflect.Message) (protoreflect.Message, bool) {
			if child.Descriptor() == nodeDesc {
				if r := f(child.Interface().(*pg.Node)); r != nil {
					return r.ProtoReflect(), true
				}
			}
			walkNodes(child, f)
			return nil, false
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if r, ok := visit(l.Get(i).Message()); ok {
					l.Set(i, protoreflect.ValueOfMessage(r))
				}
			}
		case fd.IsMap():
		default:
			if r, ok := visit(v.Message()); ok {
				m.Set(fd, protoreflect.ValueOfMessage(r))
			}
		}
		return true
	})
}

// clearLocations sets every location under m to -1 (unknown).
func clearLocations(m protoreflect.Message) {
	// A location of 0 is not "populated" in proto3, so Range skips it:
	// set the field by descriptor.
	if fd := m.Descriptor().Fields().ByName("location"); fd != nil && fd.Kind() == protoreflect.Int32Kind {
		m.Set(fd, protoreflect.ValueOfInt32(-1))
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				clearLocations(l.Get(i).Message())
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			clearLocations(v.Message())
		}
		return true
	})
}

// CreateFunction is CREATE [OR REPLACE] FUNCTION ... LANGUAGE sql. Func
// has everything but its ID and schema.
type CreateFunction struct {
	Schema    string
	Func      *catalog.Function
	OrReplace bool
}

// FuncRef names a function in DROP FUNCTION: ArgTypes is nil when the
// statement gave no argument list (the name must then be unique).
type FuncRef struct {
	Schema, Name string
	ArgTypes     []types.Type
	ArgsGiven    bool
}

// DropFunction is DROP FUNCTION.
type DropFunction struct {
	Funcs    []FuncRef
	IfExists bool
	Cascade  bool
}

func (*CreateFunction) boundStmt() {}
func (*DropFunction) boundStmt()   {}

func qualifiedFuncName(parts []*pg.Node) (schema, name string, err error) {
	s := strs(parts)
	switch len(s) {
	case 1:
		return "", s[0], nil
	case 2:
		return s[0], s[1], nil
	case 3:
		return s[1], s[2], nil
	}
	return "", "", sqlerr.New(sqlerr.SyntaxError, "improper qualified name")
}

func (b *Binder) bindCreateFunction(cf *pg.CreateFunctionStmt) (Statement, error) {
	if cf.IsProcedure {
		return nil, unsupported("CREATE PROCEDURE is not supported")
	}
	schema, name, err := qualifiedFuncName(cf.Funcname)
	if err != nil {
		return nil, err
	}
	f := &catalog.Function{Name: name, Definition: b.astText()}
	lang, as := "", []string(nil)
	for _, o := range cf.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		switch d.Defname {
		case "language":
			lang = strings.ToLower(defElemString(d))
		case "as":
			as = strs(d.Arg.GetList().GetItems())
		case "strict":
			f.Strict = d.Arg.GetBoolean().GetBoolval()
		case "window":
			return nil, unsupported("window SQL functions are not supported")
		}
	}
	if lang == "" && cf.SqlBody != nil {
		lang = "sql"
	}
	switch lang {
	case "sql":
	case "":
		return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, "no language specified")
	default:
		return nil, unsupported("functions in language %s are not supported: Runnel runs LANGUAGE sql functions", lang)
	}
	for _, p := range cf.Parameters {
		fp := p.GetFunctionParameter()
		if fp == nil {
			continue
		}
		switch fp.Mode {
		case pg.FunctionParameterMode_FUNC_PARAM_IN, pg.FunctionParameterMode_FUNC_PARAM_DEFAULT:
		case pg.FunctionParameterMode_FUNC_PARAM_TABLE:
			return nil, unsupported("functions returning TABLE are not supported")
		default:
			return nil, unsupported("OUT, INOUT and VARIADIC parameters are not supported")
		}
		if fp.Defexpr != nil {
			return nil, unsupported("parameter defaults are not supported")
		}
		t, err := ResolveTypeName(fp.ArgType)
		if err != nil {
			return nil, err
		}
		t.Mod = -1
		if fp.Name != "" && slices.Contains(f.ArgNames, fp.Name) {
			return nil, sqlerr.Errorf(sqlerr.InvalidFunctionDefinition, "parameter name \"%s\" used more than once", fp.Name)
		}
		f.ArgNames = append(f.ArgNames, fp.Name)
		f.ArgTypes = append(f.ArgTypes, t)
	}
	if cf.ReturnType == nil {
		return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, "function result type must be specified")
	}
	if cf.ReturnType.Setof {
		return nil, unsupported("functions returning SETOF are not supported")
	}
	if f.Return, err = ResolveTypeName(cf.ReturnType); err != nil {
		return nil, err
	}
	switch {
	case cf.SqlBody != nil:
		if cf.SqlBody.GetReturnStmt() == nil {
			return nil, unsupported("BEGIN ATOMIC function bodies are not supported")
		}
		text, ok := parser.FunctionReturnText(b.astText())
		if !ok {
			return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, "cannot find the RETURN expression")
		}
		f.Body, f.BodyIsExpr = text, true
	case len(as) == 1:
		f.Body = strings.TrimSpace(as[0])
	case len(as) == 0:
		return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, "no function body specified")
	default:
		return nil, sqlerr.New(sqlerr.InvalidFunctionDefinition, "only one AS item needed for language \"sql\"")
	}
	if err := b.checkUDF(f); err != nil {
		return nil, err
	}
	return &CreateFunction{Schema: schema, Func: f, OrReplace: cf.Replace}, nil
}

// checkUDF binds f's body for a call with NULL arguments of its parameter
// types: the body must be one SELECT that refers to existing objects and
// returns one column convertible to the result type (as PostgreSQL checks
// at CREATE FUNCTION).
func (b *Binder) checkUDF(f *catalog.Function) error {
	if strings.TrimSpace(f.Body) == "" {
		return sqlerr.New(sqlerr.InvalidFunctionDefinition, "SQL function body is empty")
	}
	sts, err := parser.Parse(f.Body)
	if f.BodyIsExpr {
		sts, err = parser.Parse("SELECT " + f.Body)
	}
	if err != nil {
		if e := sqlerr.From(err); e != nil {
			return e.WithPosition(0)
		}
		return err
	}
	if len(sts) != 1 || sts[0].AST == nil || sts[0].AST.GetSelectStmt() == nil {
		return unsupported("SQL function bodies other than one SELECT statement are not supported")
	}
	fc := &pg.FuncCall{Location: -1}
	for _, t := range f.ArgTypes {
		a, err := castNode(&pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Isnull: true, Location: -1}}}, t)
		if err != nil {
			return err
		}
		fc.Args = append(fc.Args, a)
	}
	e, err := b.inlineUDF(f, fc, &exprCtx{sc: &scope{}, clause: "SQL function body"}, false)
	if err != nil {
		return err
	}
	got := e.Type()
	if got.Kind != types.KindUnknown && !expr.CanCoerce(got, f.Return, expr.CastAssignment) {
		return sqlerr.Errorf(sqlerr.InvalidFunctionDefinition, "return type mismatch in function declared to return %s: the body returns %s",
			f.Return.Name(), got.Name())
	}
	return nil
}

func (b *Binder) bindDropFunction(ds *pg.DropStmt) (Statement, error) {
	d := &DropFunction{IfExists: ds.MissingOk, Cascade: ds.Behavior == pg.DropBehavior_DROP_CASCADE}
	for _, o := range ds.Objects {
		ow := o.GetObjectWithArgs()
		if ow == nil {
			return nil, sqlerr.New(sqlerr.SyntaxError, "improper function name")
		}
		schema, name, err := qualifiedFuncName(ow.Objname)
		if err != nil {
			return nil, err
		}
		r := FuncRef{Schema: schema, Name: name, ArgsGiven: !ow.ArgsUnspecified}
		for _, a := range ow.Objargs {
			t, err := ResolveTypeName(a.GetTypeName())
			if err != nil {
				return nil, err
			}
			t.Mod = -1
			r.ArgTypes = append(r.ArgTypes, t)
		}
		d.Funcs = append(d.Funcs, r)
	}
	return d, nil
}
