package binder

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Catalog resolves names for the binder. The session layer implements it
// over its catalog snapshot and search_path.
type Catalog interface {
	// ResolveRelation finds a relation; schema is "" for an unqualified
	// name (search_path applies). A missing relation is 42P01
	// `relation "name" does not exist`.
	ResolveRelation(schema, name string) (*catalog.Relation, error)
}

// FunctionCatalog is optionally implemented by a Catalog to provide
// functions that need the session or the catalog (current_user,
// current_database, pg_table_is_visible, pg_get_userbyid, format_type,
// ...). The binder asks it before internal/expr's built-in functions;
// handled is false to fall through to them. name is lower-case without a
// pg_catalog qualifier.
type FunctionCatalog interface {
	ResolveFunction(name string, args []expr.Expr) (e expr.Expr, handled bool, err error)
}

// ArgTyped is implemented by a call a FunctionCatalog returns whose
// parameters have declared types: an untyped $n passed as argument i
// takes ArgTypes()[i] (pg_cancel_backend($1) gives $1 int4, as in
// PostgreSQL, so a driver can send the pid as an integer).
type ArgTyped interface {
	ArgTypes() []types.Type
}

// Binder binds one statement. It is not safe for concurrent use.
type Binder struct {
	cat  Catalog
	stmt *parser.Statement
	// params holds the type of $n at index n-1; Unknown until inferred.
	params []types.Type
	// ctes is the stack of WITH scopes, innermost last.
	ctes []map[string]*cteDef
	// views are the plain views being expanded around this binder,
	// outermost first (see expandView).
	views []catalog.ObjectID
	// viewDepth guards against views that (through a bug elsewhere) refer
	// to themselves.
	viewDepth int // len(views)
	// udfs is the stack of SQL functions being inlined (see udf.go);
	// udfDeps every SQL function the statement calls.
	udfs    []catalog.ObjectID
	udfDeps []catalog.ObjectID
	// udfArgs are the arguments of inlined calls (see bindUDFArg).
	udfArgs []udfArg
	// srcText, when set, is the text the AST's locations refer to instead
	// of stmt.Text (CREATE SOURCE: parsed with its RisingWave clauses cut).
	srcText string
	// dmlScope is the scope of an UPDATE's target joined with FROM.
	dmlScope *scope
	// deps are the relations named by the statement (see
	// CreateView.DependsOn).
	deps []catalog.ObjectID
}

type cteDef struct {
	node    plan.Node
	colName []string
}

// New returns a binder for stmt. paramTypes are the types the client
// declared for $1..$n (Unknown or zero Type for "infer").
func New(cat Catalog, stmt *parser.Statement, paramTypes []types.Type) *Binder {
	b := &Binder{cat: cat, stmt: stmt}
	for _, t := range paramTypes {
		if t.Kind == types.KindNull {
			t = types.Unknown
		}
		b.params = append(b.params, t)
	}
	return b
}

// ParamTypes returns the final parameter types: those still unknown after
// binding become text, as in PostgreSQL.
func (b *Binder) ParamTypes() []types.Type {
	out := make([]types.Type, len(b.params))
	for i, t := range b.params {
		if t.Kind == types.KindUnknown || t.Kind == types.KindNull {
			t = types.Text
		}
		out[i] = t
	}
	return out
}

// errAt attaches the position of AST location loc to err if it is a
// *sqlerr.Error without one.
// callFunction builds a scalar function call, consulting the catalog's
// session functions first.
func (b *Binder) callFunction(name string, args []expr.Expr) (expr.Expr, error) {
	if fc, ok := b.cat.(FunctionCatalog); ok {
		e, handled, err := fc.ResolveFunction(name, args)
		if handled && err == nil {
			if at, ok := e.(ArgTyped); ok {
				for i, t := range at.ArgTypes() {
					if i < len(args) {
						b.retypeParam(args[i], t)
					}
				}
			}
		}
		if handled || err != nil {
			return e, err
		}
	}
	return expr.NewFuncCall(name, args)
}

func (b *Binder) errAt(err error, loc int32) error {
	e := sqlerr.From(err)
	if e == nil || e.Position != 0 || b.stmt == nil || loc < 0 {
		return err
	}
	return e.WithPosition(b.stmt.Position(loc))
}

func (b *Binder) errorf(loc int32, code, format string, args ...any) error {
	return b.errAt(sqlerr.Errorf(code, format, args...), loc)
}

// BindQuery binds a SELECT (or VALUES, or set operation) statement.
func (b *Binder) BindQuery(sel *pg.SelectStmt) (plan.Node, error) {
	n, err := b.bindSelect(sel, nil)
	if err != nil {
		return nil, err
	}
	return b.finishOutput(n)
}

// finishOutput types still-unknown output columns as text.
func (b *Binder) finishOutput(n plan.Node) (plan.Node, error) {
	sch := n.Schema()
	need := false
	for _, c := range sch {
		if c.Type.Kind == types.KindUnknown {
			need = true
		}
	}
	if !need {
		return n, nil
	}
	return resolveUnknownColumns(n)
}

func strs(nodes []*pg.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.GetString_().GetSval()
	}
	return out
}

func unsupported(format string, args ...any) error {
	return sqlerr.Errorf(sqlerr.FeatureNotSupported, format, args...)
}

// nodeName is the name PostgreSQL gives an output column computed by n
// (FigureColname): the column name, the function name, or "?column?".
func nodeName(n *pg.Node) string {
	switch {
	case n.GetColumnRef() != nil:
		f := n.GetColumnRef().Fields
		if s := f[len(f)-1].GetString_(); s != nil {
			return s.Sval
		}
	case n.GetFuncCall() != nil:
		f := n.GetFuncCall().Funcname
		return f[len(f)-1].GetString_().GetSval()
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		if name := nodeName(tc.Arg); name != "?column?" {
			return name
		}
		names := tc.TypeName.Names
		t := names[len(names)-1].GetString_().GetSval()
		if ty, ok := typeByName(t); ok {
			return pgTypeShortName(ty, t)
		}
		return t
	case n.GetCaseExpr() != nil:
		if d := n.GetCaseExpr().Defresult; d != nil {
			if name := nodeName(d); name != "?column?" {
				return name
			}
		}
		return "case"
	case n.GetAArrayExpr() != nil:
		return "array"
	case n.GetAIndirection() != nil:
		ind := n.GetAIndirection()
		for i := len(ind.Indirection) - 1; i >= 0; i-- {
			if s := ind.Indirection[i].GetString_(); s != nil {
				return s.Sval
			}
		}
		return nodeName(ind.Arg)
	case n.GetCoalesceExpr() != nil:
		return "coalesce"
	case n.GetGroupingFunc() != nil:
		return "grouping"
	case n.GetMinMaxExpr() != nil:
		if n.GetMinMaxExpr().Op == pg.MinMaxOp_IS_GREATEST {
			return "greatest"
		}
		return "least"
	case n.GetAExpr() != nil && n.GetAExpr().Kind == pg.A_Expr_Kind_AEXPR_NULLIF:
		return "nullif"
	case n.GetSubLink() != nil:
		sl := n.GetSubLink()
		switch sl.SubLinkType {
		case pg.SubLinkType_EXISTS_SUBLINK:
			return "exists"
		case pg.SubLinkType_ARRAY_SUBLINK:
			return "array"
		case pg.SubLinkType_EXPR_SUBLINK:
			if s := sl.Subselect.GetSelectStmt(); s != nil && len(s.TargetList) == 1 {
				rt := s.TargetList[0].GetResTarget()
				if rt.Name != "" {
					return rt.Name
				}
				return nodeName(rt.Val)
			}
		}
	case n.GetSqlvalueFunction() != nil:
		switch n.GetSqlvalueFunction().Op {
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
			return "current_date"
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
			return "current_timestamp"
		case pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
			return "localtimestamp"
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_USER:
			return "current_user"
		case pg.SQLValueFunctionOp_SVFOP_SESSION_USER:
			return "session_user"
		case pg.SQLValueFunctionOp_SVFOP_USER:
			return "current_user"
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
			return "current_schema"
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
			return "current_catalog"
		}
	case n.GetBoolExpr() != nil, n.GetNullTest() != nil, n.GetBooleanTest() != nil:
		return "?column?"
	}
	return "?column?"
}

// pgTypeShortName is the column name PostgreSQL gives x::type.
func pgTypeShortName(t types.Type, written string) string {
	switch t.Kind {
	case types.KindInt16:
		return "int2"
	case types.KindInt32:
		return "int4"
	case types.KindInt64:
		return "int8"
	case types.KindFloat32:
		return "float4"
	case types.KindFloat64:
		return "float8"
	case types.KindBool:
		return "bool"
	case types.KindVarchar:
		if t.Text {
			return "text"
		}
		if written == "bpchar" || written == "char" || written == "character" {
			return "bpchar"
		}
		return "varchar"
	case types.KindTimestamptz:
		return "timestamptz"
	case types.KindTimestamp:
		return "timestamp"
	}
	return strings.ToLower(written)
}

func fmtNames(parts []string) string { return strings.Join(parts, ".") }

var _ = fmt.Sprintf
