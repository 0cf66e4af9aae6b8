package plan

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// SubqueryKind is how a subquery's rows become a value.
type SubqueryKind uint8

const (
	// ScalarSubquery: the single column of the single row (NULL for no
	// row; more than one row is error 21000).
	ScalarSubquery SubqueryKind = iota
	// ExistsSubquery: whether there is a row.
	ExistsSubquery
	// AnySubquery: Test op ANY (subquery); IN is "= ANY".
	AnySubquery
	// AllSubquery: Test op ALL (subquery); NOT IN is "<> ALL".
	AllSubquery
)

// Subquery is an expression whose value comes from running Plan. It is
// evaluated by the SubqueryRunner found in the EvalContext's context
// (installed by the executor that runs the enclosing plan), which keeps
// this package free of execution code.
//
// Correlated subqueries read the enclosing row through OuterRef; the runner
// makes the current row visible to them while Plan runs.
type Subquery struct {
	Kind SubqueryKind
	Plan Node
	// Test is the left operand of ANY/ALL, bound against the enclosing row.
	Test expr.Expr
	// Cmp compares for ANY/ALL: it is bound against the two-column row
	// (Test's value, the subquery's column).
	Cmp        expr.Expr
	Correlated bool
	Typ        types.Type
	// Label is the SQL-ish text for EXPLAIN.
	Label string
}

// SubqueryRunner evaluates subqueries for one execution.
type SubqueryRunner interface {
	EvalSubquery(ctx *expr.EvalContext, s *Subquery, row types.Row) (types.Datum, error)
}

type runnerKey struct{}

// WithSubqueryRunner returns ctx carrying r.
func WithSubqueryRunner(ctx context.Context, r SubqueryRunner) context.Context {
	return context.WithValue(ctx, runnerKey{}, r)
}

// SubqueryRunnerFrom returns the runner ctx carries (nil: none).
func SubqueryRunnerFrom(ctx context.Context) SubqueryRunner {
	if ctx == nil {
		return nil
	}
	r, _ := ctx.Value(runnerKey{}).(SubqueryRunner)
	return r
}

func (s *Subquery) Type() types.Type { return s.Typ }
func (s *Subquery) String() string   { return s.Label }
func (s *Subquery) Eval(ctx *expr.EvalContext, row types.Row) (types.Datum, error) {
	var r SubqueryRunner
	if ctx != nil && ctx.Ctx != nil {
		r, _ = ctx.Ctx.Value(runnerKey{}).(SubqueryRunner)
	}
	if r == nil {
		return types.NullDatum, sqlerr.New(sqlerr.InternalError, "subquery evaluated without a runner")
	}
	return r.EvalSubquery(ctx, s, row)
}

// OuterRef reads column Index of the row of the query Depth levels out
// (1: the immediately enclosing query).
type OuterRef struct {
	Depth int
	Index int
	Typ   types.Type
	Name  string
}

type outerKey struct{}

// OuterRows is the stack of enclosing rows, innermost last.
type OuterRows []types.Row

// WithOuterRow returns ctx with row pushed as the innermost enclosing row.
func WithOuterRow(ctx context.Context, row types.Row) context.Context {
	prev, _ := ctx.Value(outerKey{}).(OuterRows)
	next := make(OuterRows, len(prev)+1)
	copy(next, prev)
	next[len(prev)] = row
	return context.WithValue(ctx, outerKey{}, next)
}

func (o *OuterRef) Type() types.Type { return o.Typ }
func (o *OuterRef) String() string {
	if o.Name != "" {
		return "outer." + o.Name
	}
	return fmt.Sprintf("outer(%d).$%d", o.Depth, o.Index)
}
func (o *OuterRef) Eval(ctx *expr.EvalContext, _ types.Row) (types.Datum, error) {
	var rows OuterRows
	if ctx != nil && ctx.Ctx != nil {
		rows, _ = ctx.Ctx.Value(outerKey{}).(OuterRows)
	}
	i := len(rows) - o.Depth
	if i < 0 || o.Index >= len(rows[i]) {
		return types.NullDatum, sqlerr.New(sqlerr.InternalError, "outer reference without an outer row")
	}
	return rows[i][o.Index], nil
}

// StatementConstant reports whether e is the same for every row of a
// statement: a literal, a parameter, or a cast of one (a key prefix or a
// time bound a scan can use before reading).
func StatementConstant(e expr.Expr) bool {
	switch e := e.(type) {
	case *expr.Const, *Param:
		return true
	case *expr.CastExpr:
		return StatementConstant(e.E)
	}
	return false
}

// Param is the statement parameter $N (1-based), read from the context.
type Param struct {
	N   int
	Typ types.Type
}

type paramsKey struct{}

// WithParams returns ctx carrying the statement's parameter values.
func WithParams(ctx context.Context, params []types.Datum) context.Context {
	return context.WithValue(ctx, paramsKey{}, params)
}

func (p *Param) Type() types.Type { return p.Typ }
func (p *Param) String() string   { return fmt.Sprintf("$%d", p.N) }
func (p *Param) Eval(ctx *expr.EvalContext, _ types.Row) (types.Datum, error) {
	var ps []types.Datum
	if ctx != nil && ctx.Ctx != nil {
		ps, _ = ctx.Ctx.Value(paramsKey{}).([]types.Datum)
	}
	if p.N < 1 || p.N > len(ps) {
		return types.NullDatum, sqlerr.Errorf(sqlerr.UndefinedParameter, "there is no parameter $%d", p.N)
	}
	d := ps[p.N-1]
	if p.Typ.Kind == types.KindUnknown && !d.IsNull() && d.Kind() != types.KindUnknown && d.Kind() != types.KindVarchar {
		// This occurrence was bound before the parameter's type was
		// inferred from a later one ($1 in "SELECT $1, $1 + 1"): it
		// expects an untyped literal, so give it the value's text.
		return types.DUnknown(types.FormatText(d, types.Type{Kind: d.Kind(), Mod: -1}, nil)), nil
	}
	return d, nil
}
