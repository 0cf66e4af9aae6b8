package binder

import (
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// exprCtx is what an expression may see and contain where it is bound.
type exprCtx struct {
	sc *scope
	// clause names the clause for "not allowed in" errors ("WHERE").
	clause string
	// agg is set above an Aggregate (select list, HAVING, ORDER BY of an
	// aggregating query).
	agg *aggCtx
	// win is set where window functions are allowed.
	win *winCtx
	// inAggArgs is set while binding an aggregate's arguments.
	inAggArgs bool
}

func (ec *exprCtx) plain() *exprCtx {
	return &exprCtx{sc: ec.sc, clause: ec.clause}
}

// mergedCol is COALESCE(l, r) for a FULL JOIN USING column; it keeps its
// arguments so that the binder can move it when joins nest.
type mergedCol struct {
	expr.Expr
	args []expr.Expr
}

func newCoalesce(args []expr.Expr) (expr.Expr, error) {
	e, err := expr.NewCoalesce(args)
	if err != nil {
		return nil, err
	}
	return &mergedCol{Expr: e, args: args}, nil
}

func commonType(ts []types.Type, context string) (types.Type, error) {
	return expr.CommonType(ts, context)
}

// approx_count_distinct is bound as count(DISTINCT x) (bindAggCall).
func isAggregateName(name string) bool {
	return expr.IsAggregateName(name) || name == "approx_count_distinct" || name == "approx_percentile"
}

var windowOnly = map[string]bool{
	"row_number": true, "rank": true, "dense_rank": true, "percent_rank": true, "cume_dist": true,
	"ntile": true, "lag": true, "lead": true, "first_value": true, "last_value": true, "nth_value": true,
}

// bindExpr binds an expression AST node.
func (b *Binder) bindExpr(n *pg.Node, ec *exprCtx) (expr.Expr, error) {
	if n == nil {
		return nil, sqlerr.New(sqlerr.InternalError, "missing expression")
	}
	if ec.agg != nil && !ec.inAggArgs {
		if e, ok, err := b.aggHook(n, ec); ok || err != nil {
			return e, err
		}
	}
	e, err := b.bindExprInner(n, ec)
	if err != nil {
		return nil, b.errAt(err, ownErrorLocation(n))
	}
	return foldConstant(n, e), nil
}

func (b *Binder) bindExprInner(n *pg.Node, ec *exprCtx) (expr.Expr, error) {
	switch {
	case n.GetColumnRef() != nil:
		return b.bindColumnRef(n.GetColumnRef(), ec)
	case n.GetAConst() != nil:
		return bindConst(n.GetAConst())
	case n.GetParamRef() != nil:
		return b.bindParam(n.GetParamRef())
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		t, err := ResolveTypeName(tc.TypeName)
		if err != nil {
			if tc.TypeName != nil && len(tc.TypeName.ArrayBounds) > 0 {
				return b.bindNullArrayCast(tc, ec) // regrole[] and such: see nullarray.go
			}
			return nil, err
		}
		if ae := tc.Arg.GetAArrayExpr(); ae != nil && t.Kind == types.KindArray {
			return b.bindArrayExpr(ae, t, ec) // ARRAY[]::int[]: see array.go
		}
		if e, ok, err := bindIntervalRangeLiteral(tc, t); ok || err != nil {
			return e, err
		}
		if pr := tc.Arg.GetParamRef(); pr != nil {
			b.inferParam(pr.Number, t)
		}
		arg, err := b.bindExpr(tc.Arg, ec)
		if err != nil {
			return nil, err
		}
		if e, ok, err := b.bindRegCast(tc.TypeName, arg); ok || err != nil {
			return e, err // see regcast.go
		}
		return expr.NewCast(arg, t, expr.CastExplicit)
	case n.GetAExpr() != nil:
		return b.bindAExpr(n.GetAExpr(), ec)
	case n.GetAIndirection() != nil:
		return b.bindNullArraySubscript(n.GetAIndirection(), ec) // see nullarray.go
	case n.GetBoolExpr() != nil:
		be := n.GetBoolExpr()
		args, err := b.bindList(be.Args, ec)
		if err != nil {
			return nil, err
		}
		switch be.Boolop {
		case pg.BoolExprType_NOT_EXPR:
			return expr.NewUnaryOp("NOT", args[0])
		case pg.BoolExprType_AND_EXPR:
			return foldBool("AND", args)
		default:
			return foldBool("OR", args)
		}
	case n.GetNullTest() != nil:
		nt := n.GetNullTest()
		arg, err := b.bindExpr(nt.Arg, ec)
		if err != nil {
			return nil, err
		}
		return expr.NewIsNull(arg, nt.Nulltesttype == pg.NullTestType_IS_NOT_NULL)
	case n.GetBooleanTest() != nil:
		bt := n.GetBooleanTest()
		arg, err := b.bindExpr(bt.Arg, ec)
		if err != nil {
			return nil, err
		}
		switch bt.Booltesttype {
		case pg.BoolTestType_IS_TRUE:
			return expr.NewBoolTest(arg, expr.TestTrue, false)
		case pg.BoolTestType_IS_NOT_TRUE:
			return expr.NewBoolTest(arg, expr.TestTrue, true)
		case pg.BoolTestType_IS_FALSE:
			return expr.NewBoolTest(arg, expr.TestFalse, false)
		case pg.BoolTestType_IS_NOT_FALSE:
			return expr.NewBoolTest(arg, expr.TestFalse, true)
		case pg.BoolTestType_IS_UNKNOWN:
			return expr.NewBoolTest(arg, expr.TestUnknown, false)
		default:
			return expr.NewBoolTest(arg, expr.TestUnknown, true)
		}
	case n.GetCaseExpr() != nil:
		ce := n.GetCaseExpr()
		var operand expr.Expr
		var err error
		if ce.Arg != nil {
			if operand, err = b.bindExpr(ce.Arg, ec); err != nil {
				return nil, err
			}
		}
		var whens []expr.When
		for _, w := range ce.Args {
			cw := w.GetCaseWhen()
			c, err := b.bindExpr(cw.Expr, ec)
			if err != nil {
				return nil, err
			}
			r, err := b.bindExpr(cw.Result, ec)
			if err != nil {
				return nil, err
			}
			whens = append(whens, expr.When{Cond: c, Result: r})
		}
		var els expr.Expr
		if ce.Defresult != nil {
			if els, err = b.bindExpr(ce.Defresult, ec); err != nil {
				return nil, err
			}
		}
		return expr.NewCase(operand, whens, els)
	case n.GetCoalesceExpr() != nil:
		args, err := b.bindList(n.GetCoalesceExpr().Args, ec)
		if err != nil {
			return nil, err
		}
		return expr.NewCoalesce(args)
	case n.GetMinMaxExpr() != nil:
		mm := n.GetMinMaxExpr()
		args, err := b.bindList(mm.Args, ec)
		if err != nil {
			return nil, err
		}
		if mm.Op == pg.MinMaxOp_IS_GREATEST {
			return expr.NewGreatest(args)
		}
		return expr.NewLeast(args)
	case n.GetFuncCall() != nil:
		return b.bindFuncCall(n.GetFuncCall(), ec)
	case n.GetSubLink() != nil:
		return b.bindSubLink(n.GetSubLink(), ec)
	case n.GetSqlvalueFunction() != nil:
		return b.bindSQLValueFunction(n.GetSqlvalueFunction())
	case n.GetAArrayExpr() != nil:
		return b.bindArrayExpr(n.GetAArrayExpr(), types.Type{}, ec) // see array.go
	case n.GetRowExpr() != nil:
		return nil, unsupported("row constructors are not supported")
	case n.GetGroupingFunc() != nil:
		// Above an Aggregate, aggHook binds it (grouping.go).
		if ec.inAggArgs && ec.clause != "FILTER" {
			return nil, sqlerr.New(sqlerr.GroupingError, "aggregate function calls cannot be nested")
		}
		return nil, sqlerr.Errorf(sqlerr.GroupingError, "grouping operations are not allowed in %s", ec.clause)
	case n.GetCollateClause() != nil:
		cc := n.GetCollateClause()
		coll := strings.TrimPrefix(strings.Join(strs(cc.Collname), "."), "pg_catalog.")
		if coll != "C" && coll != "default" && coll != "POSIX" {
			return nil, sqlerr.Errorf(sqlerr.UndefinedObject, "collation \"%s\" for encoding \"UTF8\" does not exist", coll)
		}
		return b.bindExpr(cc.Arg, ec)
	}
	return nil, unsupportedExpr(n)
}

func foldBool(op string, args []expr.Expr) (expr.Expr, error) {
	out := args[0]
	for _, a := range args[1:] {
		var err error
		if out, err = expr.NewBinaryOp(op, out, a); err != nil {
			return nil, err
		}
	}
	if len(args) == 1 {
		return expr.CoerceBool(out, op)
	}
	return out, nil
}

func (b *Binder) bindList(ns []*pg.Node, ec *exprCtx) ([]expr.Expr, error) {
	out := make([]expr.Expr, 0, len(ns))
	for _, n := range ns {
		e, err := b.bindExpr(n, ec)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// bindIntervalRangeLiteral binds a string literal cast to an interval type
// with a field range (INTERVAL '2' HOUR, '1 day 3' :: INTERVAL DAY TO
// HOUR): its fields count in the range's units (types.ParseIntervalRange).
// ok is false for anything else.
func bindIntervalRangeLiteral(tc *pg.TypeCast, t types.Type) (expr.Expr, bool, error) {
	if t.Kind != types.KindInterval || tc.TypeName == nil || len(tc.TypeName.Typmods) == 0 {
		return nil, false, nil
	}
	c := tc.Arg.GetAConst()
	if c == nil || c.Isnull || c.GetSval() == nil {
		return nil, false, nil
	}
	mask := tc.TypeName.Typmods[0].GetAConst().GetIval().GetIval()
	iv, err := types.ParseIntervalRange(c.GetSval().Sval, mask)
	if err != nil {
		return nil, true, err
	}
	return &expr.Const{Value: types.DInterval(iv), Typ: types.Interval}, true, nil
}

func bindConst(c *pg.A_Const) (expr.Expr, error) {
	if c.Isnull {
		return &expr.Const{Value: types.NullDatum, Typ: types.Null}, nil
	}
	switch v := c.Val.(type) {
	case *pg.A_Const_Ival:
		return &expr.Const{Value: types.DInt32(v.Ival.Ival), Typ: types.Int32}, nil
	case *pg.A_Const_Fval:
		s := v.Fval.Fval
		// Integer literals too large for int4 arrive as Float: they are
		// int8 if they fit, else numeric.
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			// PostgreSQL's make_const: an integer that fits int4 is int4
			// (only -2147483648 gets here, its minus folded in).
			if i >= -1<<31 && i < 1<<31 {
				return &expr.Const{Value: types.DInt32(int32(i)), Typ: types.Int32}, nil
			}
			return &expr.Const{Value: types.DInt64(i), Typ: types.Int64}, nil
		}
		d, _, err := apd.NewFromString(s)
		if err != nil {
			return nil, sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "invalid input syntax for type numeric: \"%s\"", s)
		}
		return &expr.Const{Value: types.DNumeric(d), Typ: types.Numeric}, nil
	case *pg.A_Const_Boolval:
		return &expr.Const{Value: types.DBool(v.Boolval.Boolval), Typ: types.Bool}, nil
	case *pg.A_Const_Sval:
		return &expr.Const{Value: types.DUnknown(v.Sval.Sval), Typ: types.Unknown}, nil
	case *pg.A_Const_Bsval:
		return nil, unsupported("bit string literals are not supported")
	}
	return nil, unsupported("unsupported constant")
}

// bindParam returns $n with its declared or inferred type (Unknown while
// not yet known; see inferParam).
func (b *Binder) bindParam(p *pg.ParamRef) (expr.Expr, error) {
	n := int(p.Number)
	if n < 1 || n > 65535 {
		return nil, sqlerr.Errorf(sqlerr.UndefinedParameter, "there is no parameter $%d", n)
	}
	for len(b.params) < n {
		b.params = append(b.params, types.Unknown)
	}
	return &plan.Param{N: n, Typ: b.params[n-1]}, nil
}

// inferParam fixes the type of $n if it is still unknown.
func (b *Binder) inferParam(n int32, t types.Type) {
	if t.Kind == types.KindUnknown || t.Kind == types.KindNull {
		return
	}
	for len(b.params) < int(n) {
		b.params = append(b.params, types.Unknown)
	}
	if b.params[n-1].Kind == types.KindUnknown {
		b.params[n-1] = t
	}
}

// retypeParam gives an untyped parameter e the type t (from the other
// operand of a comparison or an assignment target).
func (b *Binder) retypeParam(e expr.Expr, t types.Type) expr.Expr {
	p, ok := e.(*plan.Param)
	if !ok || p.Typ.Kind != types.KindUnknown || t.Kind == types.KindUnknown || t.Kind == types.KindNull {
		return e
	}
	b.inferParam(int32(p.N), t)
	return &plan.Param{N: p.N, Typ: b.params[p.N-1]}
}

func opName(names []*pg.Node) string {
	s := strs(names)
	if len(s) == 2 && s[0] == "pg_catalog" {
		return s[1]
	}
	return strings.Join(s, ".")
}

func (b *Binder) bindBinary(op string, ln, rn *pg.Node, ec *exprCtx) (expr.Expr, error) {
	l, err := b.bindExpr(ln, ec)
	if err != nil {
		return nil, err
	}
	r, err := b.bindExpr(rn, ec)
	if err != nil {
		return nil, err
	}
	l = b.retypeParam(l, r.Type())
	r = b.retypeParam(r, l.Type())
	e, err := expr.NewBinaryOp(op, l, r)
	if err != nil && strings.HasPrefix(sqlerr.Code(err), "22") {
		// A literal that does not convert: PostgreSQL points at it.
		for _, n := range []*pg.Node{rn, ln} {
			if c := n.GetAConst(); c != nil && c.GetSval() != nil {
				return nil, b.errAt(err, c.Location)
			}
		}
	}
	return e, err
}

// bindRowCompare binds (a, b) = (x, y) as a = x AND b = y, and <> as the
// OR of the pairwise <>, which is PostgreSQL's row comparison semantics
// (NULLs included).
func (b *Binder) bindRowCompare(op string, l, r []*pg.Node, ec *exprCtx) (expr.Expr, error) {
	if len(l) != len(r) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "unequal number of entries in row expressions")
	}
	if len(l) == 0 {
		// As PostgreSQL; folding zero comparisons indexed an empty list
		// (ROW() = ROW() was a panic that closed the session).
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "cannot compare rows of zero length")
	}
	var parts []expr.Expr
	for i := range l {
		e, err := b.bindBinary(op, l[i], r[i], ec)
		if err != nil {
			return nil, err
		}
		parts = append(parts, e)
	}
	if op == "=" {
		return foldBool("AND", parts)
	}
	return foldBool("OR", parts)
}

func (b *Binder) bindAExpr(a *pg.A_Expr, ec *exprCtx) (expr.Expr, error) {
	switch a.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		op := opName(a.Name)
		if l, r := a.Lexpr.GetRowExpr(), a.Rexpr.GetRowExpr(); l != nil && r != nil && (op == "=" || op == "<>") {
			return b.bindRowCompare(op, l.Args, r.Args, ec)
		}
		if a.Lexpr == nil {
			e, err := b.bindExpr(a.Rexpr, ec)
			if err != nil {
				return nil, err
			}
			return expr.NewUnaryOp(op, e)
		}
		return b.bindBinary(op, a.Lexpr, a.Rexpr, ec)
	case pg.A_Expr_Kind_AEXPR_DISTINCT:
		return b.bindBinary("IS DISTINCT FROM", a.Lexpr, a.Rexpr, ec)
	case pg.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		return b.bindBinary("IS NOT DISTINCT FROM", a.Lexpr, a.Rexpr, ec)
	case pg.A_Expr_Kind_AEXPR_NULLIF:
		l, err := b.bindExpr(a.Lexpr, ec)
		if err != nil {
			return nil, err
		}
		r, err := b.bindExpr(a.Rexpr, ec)
		if err != nil {
			return nil, err
		}
		return expr.NewNullIf(l, r)
	case pg.A_Expr_Kind_AEXPR_IN:
		l, err := b.bindExpr(a.Lexpr, ec)
		if err != nil {
			return nil, err
		}
		list, err := b.bindList(a.Rexpr.GetList().GetItems(), ec)
		if err != nil {
			return nil, err
		}
		for i := range list {
			list[i] = b.retypeParam(list[i], l.Type())
		}
		return expr.NewIn(l, list, opName(a.Name) == "<>")
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE:
		op := opName(a.Name)
		return b.bindBinary(op, a.Lexpr, a.Rexpr, ec)
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN,
		pg.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
		e, err := b.bindExpr(a.Lexpr, ec)
		if err != nil {
			return nil, err
		}
		bounds, err := b.bindList(a.Rexpr.GetList().GetItems(), ec)
		if err != nil {
			return nil, err
		}
		not := a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN || a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM
		sym := a.Kind == pg.A_Expr_Kind_AEXPR_BETWEEN_SYM || a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM
		return expr.NewBetween(e, b.retypeParam(bounds[0], e.Type()), b.retypeParam(bounds[1], e.Type()), not, sym)
	case pg.A_Expr_Kind_AEXPR_OP_ANY, pg.A_Expr_Kind_AEXPR_OP_ALL:
		return b.bindNullArrayOp(a, ec) // see nullarray.go
	case pg.A_Expr_Kind_AEXPR_SIMILAR:
		// The grammar already wrapped the pattern in similar_to_escape();
		// the operator is ~ (SIMILAR TO) or !~ (NOT SIMILAR TO).
		return b.bindBinary(opName(a.Name), a.Lexpr, a.Rexpr, ec)
	}
	return nil, unsupported("unsupported operator expression")
}

// bindColumnRef resolves a (possibly qualified) column name, looking
// through enclosing scopes for correlated references.
func (b *Binder) bindColumnRef(cr *pg.ColumnRef, ec *exprCtx) (expr.Expr, error) {
	fields := cr.Fields
	if len(fields) == 2 && fields[0].GetString_().GetSval() == udfArgMarkerName {
		return b.bindUDFArg(cr, ec)
	}
	if fields[len(fields)-1].GetAStar() != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "* is not allowed here")
	}
	names := strs(fields)
	var table, name string
	switch len(names) {
	case 1:
		name = names[0]
	case 2:
		table, name = names[0], names[1]
	case 3:
		table, name = names[1], names[2]
	default:
		return nil, sqlerr.Errorf(sqlerr.SyntaxError, "improper qualified name (too many dotted names): %s", strings.Join(names, "."))
	}
	depth := 0
	for s := ec.sc; s != nil; s = s.parent {
		c, ok, err := s.lookup(table, name)
		if err != nil {
			return nil, err
		}
		if ok {
			if depth == 0 {
				return c.e, nil
			}
			if depth == 1 && ec.sc.flatParent {
				return c.e, nil
			}
			ref, isRef := c.e.(*expr.ColumnRef)
			if !isRef {
				return nil, unsupported("correlated reference to a merged USING column is not supported")
			}
			// Every subquery boundary crossed becomes correlated; the flag
			// of the subquery whose body is at level k-1 lives on level k.
			for m, k := ec.sc.parent, 1; k <= depth && m != nil; m, k = m.parent, k+1 {
				if m.correlated != nil {
					*m.correlated = true
				}
			}
			return &plan.OuterRef{Depth: depth, Index: ref.Index, Typ: c.typ, Name: qualName(c.table, name)}, nil
		}
		if table != "" && s.hasTable(table) && depth == 0 {
			return nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "column %s.%s does not exist", table, name)
		}
		depth++
	}
	if table != "" {
		found := false
		for s := ec.sc; s != nil; s = s.parent {
			found = found || s.hasTable(table)
		}
		if found {
			return nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "column %s.%s does not exist", table, name)
		}
		return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "missing FROM-clause entry for table \"%s\"", table)
	}
	return nil, sqlerr.Errorf(sqlerr.UndefinedColumn, "column \"%s\" does not exist", name)
}

func (b *Binder) bindSQLValueFunction(f *pg.SQLValueFunction) (expr.Expr, error) {
	name := ""
	switch f.Op {
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
		name = "current_date"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
		name = "now"
	case pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
		name = "localtimestamp"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N:
		name = "current_time"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_USER, pg.SQLValueFunctionOp_SVFOP_USER, pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:
		name = "current_user"
	case pg.SQLValueFunctionOp_SVFOP_SESSION_USER:
		name = "session_user"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
		name = "current_schema"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
		name = "current_database"
	default:
		return nil, unsupported("%s is not supported", f.Op)
	}
	return b.callFunction(name, nil)
}

func (b *Binder) bindFuncCall(fc *pg.FuncCall, ec *exprCtx) (expr.Expr, error) {
	name := strings.ToLower(fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval())
	if len(fc.Funcname) == 2 {
		if sch := fc.Funcname[0].GetString_().GetSval(); sch != "pg_catalog" {
			if cands := b.udfCandidates(fc); len(cands) > 0 && fc.Over == nil {
				args, err := b.bindList(fc.Args, ec)
				if err != nil {
					return nil, err
				}
				if e, ok, err := b.tryUDF(cands, fc, args, ec); ok || err != nil {
					return e, err
				}
			}
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s.%s does not exist", sch, name)
		}
	}
	if fc.Over != nil {
		if ec.win == nil {
			if ec.inAggArgs {
				return nil, sqlerr.New(sqlerr.GroupingError, "aggregate function calls cannot contain window function calls")
			}
			return nil, sqlerr.Errorf(sqlerr.WindowingError, "window functions are not allowed in %s", ec.clause)
		}
		return b.bindWindowCall(fc, name, ec)
	}
	if windowOnly[name] {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "window function %s requires an OVER clause", name)
	}
	if isAggregateName(name) {
		if ec.inAggArgs {
			return nil, sqlerr.New(sqlerr.GroupingError, "aggregate function calls cannot be nested")
		}
		return nil, sqlerr.Errorf(sqlerr.GroupingError, "aggregate functions are not allowed in %s", ec.clause)
	}
	if fc.AggStar || fc.AggDistinct || len(fc.AggOrder) > 0 || fc.AggFilter != nil {
		return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "%s is not an aggregate function", name)
	}
	args, err := b.bindCallArgs(name, fc.Args, ec) // see namedargs.go
	if err != nil {
		return nil, err
	}
	if _, isJSON := expr.JSONSRFName(name); isJSON || name == "generate_series" || name == "unnest" {
		return nil, unsupported("set-returning functions are only supported in FROM and at the top level of a select list")
	}
	if name == "pg_typeof" && len(args) == 1 {
		// The argument's type is known here; its value is never needed.
		// (PostgreSQL returns regtype, which prints as this name.)
		t := args[0].Type()
		t.Mod = -1
		return &expr.Const{Value: types.DVarchar(t.Name()), Typ: types.Text}, nil
	}
	e, err := b.callFunction(name, args)
	if se := sqlerr.From(err); se != nil && se.Code == sqlerr.UndefinedFunction {
		// Built-in functions come first (pg_catalog is first on the
		// search path), then the user's SQL functions.
		if cands := b.udfCandidates(fc); len(cands) > 0 {
			if ue, ok, uerr := b.tryUDF(cands, fc, args, ec); ok || uerr != nil {
				return ue, uerr
			}
		}
	}
	return e, err
}

// bindAggCall binds an aggregate call's arguments (against the input of
// the Aggregate) and resolves the aggregate.
func (b *Binder) bindAggCall(fc *pg.FuncCall, name string, ec *exprCtx) (*plan.AggCall, error) {
	in := &exprCtx{sc: ec.sc, clause: "aggregate function calls", inAggArgs: true}
	if ec.agg != nil {
		in.sc = ec.agg.input
	}
	var args []expr.Expr
	if !fc.AggStar {
		var err error
		if args, err = b.bindList(fc.Args, in); err != nil {
			return nil, err
		}
	}
	distinct := fc.AggDistinct
	if name == "approx_percentile" {
		// RisingWave's approx_percentile(q [, relative_error]) WITHIN
		// GROUP (ORDER BY x) is computed exactly, as percentile_cont(q)
		// over x as double precision: within any relative error.
		if !fc.AggWithinGroup || len(fc.AggOrder) != 1 || len(args) < 1 || len(args) > 2 || distinct {
			return nil, b.errorf(fc.Location, sqlerr.UndefinedFunction, "approx_percentile takes (fraction [, relative_error]) WITHIN GROUP (ORDER BY expression)")
		}
		if len(args) == 2 {
			if c, ok := args[1].(*expr.Const); !ok || c.Value.IsNull() {
				return nil, b.errorf(fc.Location, sqlerr.InvalidParameterValue, "approx_percentile: relative_error must be a constant")
			}
			args = args[:1]
		}
		name = "percentile_cont"
		fc = &pg.FuncCall{Funcname: fc.Funcname, Args: fc.Args[:1], AggFilter: fc.AggFilter, AggWithinGroup: fc.AggWithinGroup,
			AggOrder: fc.AggOrder, Location: fc.Location}
	}
	lookup := name
	switch {
	case fc.AggWithinGroup || expr.IsOrderedSetAggregate(name):
		// f(direct) WITHIN GROUP (ORDER BY v) is the call f(v, direct,
		// desc) (expr/agg_ordered_set.go).
		if !fc.AggWithinGroup || !expr.IsOrderedSetAggregate(name) || len(fc.AggOrder) != 1 || distinct {
			return nil, b.errorf(fc.Location, sqlerr.UndefinedFunction, "WITHIN GROUP is supported for percentile_cont, percentile_disc and mode with one ORDER BY expression")
		}
		sb := fc.AggOrder[0].GetSortBy()
		if name != "percentile_cont" {
			// mode and percentile_disc take anyelement: an untyped
			// literal has no type to give it (PostgreSQL's 42804).
			if e, err := b.bindExpr(sb.Node, in); err == nil && e.Type().Kind == types.KindUnknown {
				return nil, b.errorf(fc.Location, sqlerr.DatatypeMismatch, "could not determine polymorphic type because input has type unknown")
			}
		}
		k, err := b.bindSortKey(sb, in)
		if err != nil {
			return nil, err
		}
		args = append([]expr.Expr{k.Expr}, args...)
		args = append(args, &expr.Const{Value: types.DBool(k.Desc), Typ: types.Bool})
		fc = &pg.FuncCall{Funcname: fc.Funcname, Args: fc.Args, AggFilter: fc.AggFilter, Location: fc.Location}
	case name == "approx_count_distinct":
		// RisingWave's estimate, computed exactly: count(DISTINCT x).
		lookup, distinct = "count", true
	}
	argTypes := make([]types.Type, len(args))
	for i, a := range args {
		argTypes[i] = a.Type()
	}
	agg, err := expr.LookupAggregate(lookup, argTypes, distinct)
	if err != nil {
		return nil, b.errAt(err, fc.Location)
	}
	if args, err = expr.BindAggregateArgs(agg, args); err != nil {
		return nil, b.errAt(err, fc.Location)
	}
	call := &plan.AggCall{Name: lookup, Args: args, Distinct: distinct, Type: agg.ResultType, Func: agg}
	if fc.AggFilter != nil {
		f, err := b.bindExpr(fc.AggFilter, &exprCtx{sc: in.sc, clause: "FILTER", inAggArgs: true})
		if err != nil {
			return nil, err
		}
		if call.Filter, err = expr.CoerceBool(f, "FILTER"); err != nil {
			return nil, err
		}
	}
	for _, s := range fc.AggOrder {
		k, err := b.bindSortKey(s.GetSortBy(), in)
		if err != nil {
			return nil, err
		}
		call.OrderBy = append(call.OrderBy, k)
	}
	if fc.AggDistinct && len(call.OrderBy) == 0 && call.Type.IsArray() {
		// PostgreSQL sorts a DISTINCT aggregate's input, so
		// array_agg(DISTINCT x) lists the values in ascending order.
		call.OrderBy = []plan.SortKey{{Expr: args[0]}}
	}
	return call, nil
}

func (b *Binder) bindSortKey(sb *pg.SortBy, ec *exprCtx) (plan.SortKey, error) {
	e, err := b.bindExpr(sb.Node, ec)
	if err != nil {
		return plan.SortKey{}, err
	}
	return sortKey(sb, e)
}

// sortKey applies ASC/DESC and NULLS FIRST/LAST (PostgreSQL's default:
// NULLs sort as the largest value, so first for DESC).
func sortKey(sb *pg.SortBy, e expr.Expr) (plan.SortKey, error) {
	if len(sb.UseOp) > 0 {
		return plan.SortKey{}, unsupported("ORDER BY ... USING is not supported")
	}
	if e.Type().Kind == types.KindUnknown {
		var err error
		if e, err = expr.ResolveUnknown(e); err != nil {
			return plan.SortKey{}, err
		}
	}
	k := plan.SortKey{Expr: e, Desc: sb.SortbyDir == pg.SortByDir_SORTBY_DESC}
	switch sb.SortbyNulls {
	case pg.SortByNulls_SORTBY_NULLS_FIRST:
		k.NullsFirst = true
	case pg.SortByNulls_SORTBY_NULLS_LAST:
		k.NullsFirst = false
	default:
		k.NullsFirst = k.Desc
	}
	return k, nil
}
