package expr

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// opAliases maps SQL spellings to the registered operator name.
var opAliases = map[string]string{
	"!=":        "<>",
	"LIKE":      "~~",
	"NOT LIKE":  "!~~",
	"ILIKE":     "~~*",
	"NOT ILIKE": "!~~*",
}

// NewBinaryOp builds l op r. op is an operator symbol (+ - * / % ^ = <> !=
// < <= > >= || ~ ~* !~ !~* -> ->> #> #>> @> <@ ? ?| ?& ~~ !~~ ~~* !~~*) or
// one of the keywords AND, OR, LIKE, NOT LIKE, ILIKE, NOT ILIKE,
// IS DISTINCT FROM, IS NOT DISTINCT FROM (case-insensitive).
func NewBinaryOp(op string, l, r Expr) (Expr, error) {
	up := strings.ToUpper(strings.TrimSpace(op))
	switch up {
	case "AND", "OR":
		return newAndOr(up == "AND", l, r)
	case "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		eq, err := NewBinaryOp("=", l, r)
		if err != nil {
			return nil, err
		}
		return newDistinct(eq, up == "IS NOT DISTINCT FROM")
	}
	name := up
	if a, ok := opAliases[up]; ok {
		name = a
	} else {
		name = op
	}
	if e, ok, err := arrayBinaryOp(name, l, r); ok {
		return e, err
	}
	lt, rt := l.Type(), r.Type()
	cands := binopRegistry[name]
	if len(cands) == 0 {
		return nil, undefinedOperator(op, []types.Type{lt, rt})
	}
	o, ambiguous := resolveOverload(cands, []types.Type{lt, rt}, resolveBinop)
	if o == nil && name == "||" {
		// anytextcat / textanycat: text || non-array value.
		if isStringType(lt) && !isStringType(rt) && !isUnknown(rt) {
			rc, err := coerceTo(r, types.Text, CastAssignment)
			if err == nil {
				return NewBinaryOp("||", l, rc)
			}
		}
		if isStringType(rt) && !isStringType(lt) && !isUnknown(lt) {
			lc, err := coerceTo(l, types.Text, CastAssignment)
			if err == nil {
				return NewBinaryOp("||", lc, r)
			}
		}
		// 'literal' || 1: the untyped literal is text (PostgreSQL's
		// textanycat / anytextcat).
		if isUnknown(lt) != isUnknown(rt) {
			if lc, err := coerceTo(l, types.Text, CastAssignment); err == nil {
				if rc, err := coerceTo(r, types.Text, CastAssignment); err == nil {
					return NewBinaryOp("||", lc, rc)
				}
			}
		}
	}
	if o == nil {
		if ambiguous {
			return nil, ambiguousOperator(op, []types.Type{lt, rt})
		}
		return nil, undefinedOperator(op, []types.Type{lt, rt})
	}
	return bindOverload(displayOp(up, name), o, []Expr{l, r}, true)
}

func displayOp(up, name string) string {
	if _, ok := opAliases[up]; ok && up != "!=" {
		return up
	}
	return name
}

func isStringType(t types.Type) bool { return t.Kind == types.KindVarchar }

// NewUnaryOp builds op e for op in - + NOT (case-insensitive) and ~ (not
// supported: no bit types) .
func NewUnaryOp(op string, e Expr) (Expr, error) {
	up := strings.ToUpper(strings.TrimSpace(op))
	if up == "NOT" {
		b, err := coerceBool(e, "NOT")
		if err != nil {
			return nil, err
		}
		return &notExpr{e: b}, nil
	}
	t := e.Type()
	cands := unopRegistry[up]
	if len(cands) == 0 {
		return nil, undefinedOperator(op, []types.Type{t})
	}
	o, ambiguous := resolveOverload(cands, []types.Type{t}, resolveUnop)
	if o == nil {
		if ambiguous {
			return nil, ambiguousOperator(op, []types.Type{t})
		}
		return nil, undefinedOperator(op, []types.Type{t})
	}
	return bindOverload(up, o, []Expr{e}, true)
}

// coerceBool converts e to boolean for a boolean context (AND, OR, NOT,
// WHERE, CASE WHEN), erroring as PostgreSQL does with 42804.
func coerceBool(e Expr, construct string) (Expr, error) {
	t := e.Type()
	if t.Kind == types.KindBool {
		return e, nil
	}
	if isUnknown(t) {
		return coerceTo(e, types.Bool, CastImplicit)
	}
	return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "argument of %s must be type boolean, not type %s", construct, t.Name())
}

// CoerceBool is coerceBool for the binder's WHERE/HAVING/JOIN ON clauses;
// construct names the clause in the error ("WHERE").
func CoerceBool(e Expr, construct string) (Expr, error) { return coerceBool(e, construct) }

type andOrExpr struct {
	and  bool
	l, r Expr
}

func newAndOr(and bool, l, r Expr) (Expr, error) {
	name := "OR"
	if and {
		name = "AND"
	}
	lb, err := coerceBool(l, name)
	if err != nil {
		return nil, err
	}
	rb, err := coerceBool(r, name)
	if err != nil {
		return nil, err
	}
	return &andOrExpr{and: and, l: lb, r: rb}, nil
}

func (a *andOrExpr) Type() types.Type { return types.Bool }

// Eval implements three-valued logic: for AND, false wins over NULL; for
// OR, true wins over NULL. The right side is not evaluated when the left
// decides the result (PostgreSQL also short-circuits).
func (a *andOrExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	l, err := a.l.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	if !l.IsNull() && l.Bool() != a.and {
		return l, nil
	}
	r, err := a.r.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	if !r.IsNull() && r.Bool() != a.and {
		return r, nil
	}
	if l.IsNull() || r.IsNull() {
		return types.NullDatum, nil
	}
	return types.DBool(a.and), nil
}

func (a *andOrExpr) String() string {
	op := " OR "
	if a.and {
		op = " AND "
	}
	return "(" + a.l.String() + op + a.r.String() + ")"
}

type notExpr struct{ e Expr }

func (n *notExpr) Type() types.Type { return types.Bool }
func (n *notExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	v, err := n.e.Eval(ctx, row)
	if err != nil || v.IsNull() {
		return types.NullDatum, err
	}
	return types.DBool(!v.Bool()), nil
}
func (n *notExpr) String() string { return "(NOT " + n.e.String() + ")" }

// distinctExpr is IS [NOT] DISTINCT FROM: equality where NULL equals NULL
// and the result is never NULL.
type distinctExpr struct {
	eq  *binaryExpr
	not bool
}

func newDistinct(eq Expr, not bool) (Expr, error) {
	b, ok := eq.(*binaryExpr)
	if !ok {
		return nil, sqlError(sqlerr.FeatureNotSupported, "IS DISTINCT FROM is not supported for %s", eq.String())
	}
	return &distinctExpr{eq: b, not: not}, nil
}

func (d *distinctExpr) Type() types.Type { return types.Bool }
func (d *distinctExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	l, err := d.eq.l.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	r, err := d.eq.r.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	var same bool
	switch {
	case l.IsNull() && r.IsNull():
		same = true
	case l.IsNull() || r.IsNull():
		same = false
	default:
		v, err := d.eq.fn(l, r)
		if err != nil {
			return types.NullDatum, err
		}
		same = v.Bool()
	}
	return types.DBool(same == d.not), nil
}
func (d *distinctExpr) String() string {
	op := " IS DISTINCT FROM "
	if d.not {
		op = " IS NOT DISTINCT FROM "
	}
	return "(" + d.eq.l.String() + op + d.eq.r.String() + ")"
}
