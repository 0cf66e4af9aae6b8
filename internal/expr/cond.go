package expr

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// When is one WHEN ... THEN ... arm of a CASE.
type When struct {
	Cond   Expr // a boolean condition, or the comparison value for CASE x WHEN v
	Result Expr
}

type caseArm struct {
	cond   Expr
	result Expr
}

// CaseExpr is a searched or simple CASE.
type CaseExpr struct {
	arms  []caseArm
	elseE Expr
	typ   types.Type
}

// NewCase builds CASE [operand] WHEN ... THEN ... [ELSE ...] END. With an
// operand, each WHEN value is compared with operand using "=" resolved as
// for operand = value.
func NewCase(operand Expr, whens []When, elseE Expr) (Expr, error) {
	if len(whens) == 0 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "CASE must have at least one WHEN clause")
	}
	results := make([]Expr, 0, len(whens)+1)
	for _, w := range whens {
		results = append(results, w.Result)
	}
	if elseE == nil {
		elseE = &Const{Value: types.NullDatum, Typ: types.Null}
	}
	results = append(results, elseE)
	coerced, typ, err := CoerceToCommon(results, "CASE")
	if err != nil {
		return nil, err
	}
	c := &CaseExpr{typ: typ, elseE: coerced[len(coerced)-1]}
	for i, w := range whens {
		var cond Expr
		if operand != nil {
			cond, err = NewBinaryOp("=", operand, w.Cond)
			if err != nil {
				return nil, err
			}
			if cond.Type().Kind != types.KindBool {
				return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "argument of CASE/WHEN must be type boolean, not type %s", cond.Type().Name())
			}
		} else {
			cond, err = coerceBool(w.Cond, "CASE/WHEN")
			if err != nil {
				return nil, err
			}
		}
		c.arms = append(c.arms, caseArm{cond: cond, result: coerced[i]})
	}
	return c, nil
}

func (c *CaseExpr) Type() types.Type { return c.typ }
func (c *CaseExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	for _, a := range c.arms {
		v, err := a.cond.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		if !v.IsNull() && v.Bool() {
			return a.result.Eval(ctx, row)
		}
	}
	return c.elseE.Eval(ctx, row)
}
func (c *CaseExpr) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, a := range c.arms {
		b.WriteString(" WHEN " + a.cond.String() + " THEN " + a.result.String())
	}
	b.WriteString(" ELSE " + c.elseE.String() + " END")
	return b.String()
}

// listExpr implements COALESCE, GREATEST and LEAST.
type listExpr struct {
	name string
	args []Expr
	typ  types.Type
	// sign: 0 for COALESCE, +1 GREATEST, -1 LEAST
	sign int
}

func newListExpr(name string, args []Expr, sign int) (Expr, error) {
	if len(args) == 0 {
		return nil, sqlerr.Errorf(sqlerr.SyntaxError, "syntax error: %s requires at least one argument", name)
	}
	coerced, typ, err := CoerceToCommon(args, name)
	if err != nil {
		return nil, err
	}
	if sign != 0 {
		if _, err := NewBinaryOp("<", &Const{Typ: typ}, &Const{Typ: typ}); err != nil {
			return nil, sqlerr.Errorf(sqlerr.UndefinedFunction, "could not identify a comparison function for type %s", typ.Name())
		}
	}
	return &listExpr{name: name, args: coerced, typ: typ, sign: sign}, nil
}

// NewCoalesce returns the first non-NULL argument (later ones are not
// evaluated).
func NewCoalesce(args []Expr) (Expr, error) { return newListExpr("COALESCE", args, 0) }

// NewGreatest returns the largest non-NULL argument (NULL if all are).
func NewGreatest(args []Expr) (Expr, error) { return newListExpr("GREATEST", args, 1) }

// NewLeast returns the smallest non-NULL argument (NULL if all are).
func NewLeast(args []Expr) (Expr, error) { return newListExpr("LEAST", args, -1) }

func (l *listExpr) Type() types.Type { return l.typ }
func (l *listExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	best := types.NullDatum
	for _, a := range l.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		if v.IsNull() {
			continue
		}
		if l.sign == 0 {
			return v, nil
		}
		if best.IsNull() || types.Compare(v, best)*l.sign > 0 {
			best = v
		}
	}
	return best, nil
}
func (l *listExpr) String() string {
	parts := make([]string, len(l.args))
	for i, a := range l.args {
		parts[i] = a.String()
	}
	return l.name + "(" + strings.Join(parts, ", ") + ")"
}

// nullIfExpr is NULLIF(a, b): NULL when a = b, else a.
type nullIfExpr struct {
	a  Expr
	eq *binaryExpr
}

// NewNullIf builds NULLIF(a, b); the result has a's type.
func NewNullIf(a, b Expr) (Expr, error) {
	if isUnknown(a.Type()) && isUnknown(b.Type()) {
		var err error
		if a, err = ResolveUnknown(a); err != nil {
			return nil, err
		}
	}
	eq, err := NewBinaryOp("=", a, b)
	if err != nil {
		return nil, err
	}
	be, ok := eq.(*binaryExpr)
	if !ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "NULLIF is not supported for these types")
	}
	if isUnknown(a.Type()) {
		if a, err = coerceTo(a, be.l.Type(), CastImplicit); err != nil {
			return nil, err
		}
	}
	return &nullIfExpr{a: a, eq: be}, nil
}

func (n *nullIfExpr) Type() types.Type { return n.a.Type() }
func (n *nullIfExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	v, err := n.a.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	e, err := n.eq.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	if !e.IsNull() && e.Bool() {
		return types.NullDatum, nil
	}
	return v, nil
}
func (n *nullIfExpr) String() string {
	return "NULLIF(" + n.eq.l.String() + ", " + n.eq.r.String() + ")"
}

// BoolTest selects the predicate of NewBoolTest.
type BoolTest uint8

const (
	TestNull BoolTest = iota
	TestTrue
	TestFalse
	TestUnknown
)

type boolTestExpr struct {
	e    Expr
	test BoolTest
	not  bool
}

// NewIsNull builds e IS [NOT] NULL.
func NewIsNull(e Expr, not bool) (Expr, error) {
	if isUnknown(e.Type()) {
		var err error
		if e, err = ResolveUnknown(e); err != nil {
			return nil, err
		}
	}
	return &boolTestExpr{e: e, test: TestNull, not: not}, nil
}

// NewIsTrue builds e IS [NOT] TRUE.
func NewIsTrue(e Expr, not bool) (Expr, error) { return NewBoolTest(e, TestTrue, not) }

// NewIsFalse builds e IS [NOT] FALSE.
func NewIsFalse(e Expr, not bool) (Expr, error) { return NewBoolTest(e, TestFalse, not) }

// NewIsUnknown builds e IS [NOT] UNKNOWN.
func NewIsUnknown(e Expr, not bool) (Expr, error) { return NewBoolTest(e, TestUnknown, not) }

// NewBoolTest builds e IS [NOT] {NULL|TRUE|FALSE|UNKNOWN}.
func NewBoolTest(e Expr, test BoolTest, not bool) (Expr, error) {
	if test == TestNull {
		return NewIsNull(e, not)
	}
	name := map[BoolTest]string{TestTrue: "IS TRUE", TestFalse: "IS FALSE", TestUnknown: "IS UNKNOWN"}[test]
	if not {
		name = strings.Replace(name, "IS ", "IS NOT ", 1)
	}
	b, err := coerceBool(e, name)
	if err != nil {
		return nil, err
	}
	return &boolTestExpr{e: b, test: test, not: not}, nil
}

func (t *boolTestExpr) Type() types.Type { return types.Bool }
func (t *boolTestExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	v, err := t.e.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	var r bool
	switch t.test {
	case TestNull, TestUnknown:
		r = v.IsNull()
	case TestTrue:
		r = !v.IsNull() && v.Bool()
	case TestFalse:
		r = !v.IsNull() && !v.Bool()
	}
	return types.DBool(r != t.not), nil
}
func (t *boolTestExpr) String() string {
	name := [...]string{"NULL", "TRUE", "FALSE", "UNKNOWN"}[t.test]
	if t.not {
		name = "NOT " + name
	}
	return "(" + t.e.String() + " IS " + name + ")"
}

// inExpr is e [NOT] IN (list): true if some element equals e, NULL if none
// does but e or some element is NULL, false otherwise (negated for NOT).
//
// When e and the list share a common type PostgreSQL builds an array and a
// ScalarArrayOpExpr: e and every element are evaluated before any
// comparison. Otherwise it is an OR of "=" comparisons evaluated left to
// right. Both are reproduced because they differ in which errors surface.
type inExpr struct {
	eqs   []*binaryExpr
	not   bool
	array bool
}

// NewIn builds e [NOT] IN (list...).
func NewIn(e Expr, list []Expr, not bool) (Expr, error) {
	if len(list) == 0 {
		return nil, sqlerr.New(sqlerr.SyntaxError, "IN list must not be empty")
	}
	all := append([]Expr{e}, list...)
	array := false
	if coerced, _, err := CoerceToCommon(all, "IN"); err == nil && !isUnknown(coerced[0].Type()) {
		all, array = coerced, true
	}
	in := &inExpr{not: not, array: array}
	for _, el := range all[1:] {
		eq, err := NewBinaryOp("=", all[0], el)
		if err != nil {
			return nil, err
		}
		be, ok := eq.(*binaryExpr)
		if !ok {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "IN is not supported for these types")
		}
		if be.typ.Kind != types.KindBool {
			return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "operator = must return type boolean")
		}
		in.eqs = append(in.eqs, be)
	}
	return in, nil
}

func (in *inExpr) Type() types.Type { return types.Bool }
func (in *inExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	if in.array {
		return in.evalArray(ctx, row)
	}
	sawNull := false
	for _, eq := range in.eqs {
		v, err := eq.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		if v.IsNull() {
			sawNull = true
			continue
		}
		if v.Bool() {
			return types.DBool(!in.not), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(in.not), nil
}

func (in *inExpr) evalArray(ctx *EvalContext, row types.Row) (types.Datum, error) {
	l, err := in.eqs[0].l.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	var buf [8]types.Datum
	vals := buf[:0]
	for _, eq := range in.eqs {
		v, err := eq.r.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		vals = append(vals, v)
	}
	if l.IsNull() {
		return types.NullDatum, nil
	}
	sawNull := false
	for i, v := range vals {
		if v.IsNull() {
			sawNull = true
			continue
		}
		r, err := in.eqs[i].fn(l, v)
		if err != nil {
			return types.NullDatum, err
		}
		if r.Bool() {
			return types.DBool(!in.not), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(in.not), nil
}

func (in *inExpr) String() string {
	parts := make([]string, len(in.eqs))
	for i, eq := range in.eqs {
		parts[i] = eq.r.String()
	}
	op := " IN ("
	if in.not {
		op = " NOT IN ("
	}
	return "(" + in.eqs[0].l.String() + op + strings.Join(parts, ", ") + "))"
}

// NewBetween builds e [NOT] BETWEEN [SYMMETRIC] lo AND hi as PostgreSQL
// expands it: e >= lo AND e <= hi (NOT: e < lo OR e > hi); SYMMETRIC also
// accepts the bounds in either order.
func NewBetween(e, lo, hi Expr, not, symmetric bool) (Expr, error) {
	build := func(lo, hi Expr) (Expr, error) {
		op1, op2, join := ">=", "<=", "AND"
		if not {
			op1, op2, join = "<", ">", "OR"
		}
		a, err := NewBinaryOp(op1, e, lo)
		if err != nil {
			return nil, err
		}
		b, err := NewBinaryOp(op2, e, hi)
		if err != nil {
			return nil, err
		}
		return NewBinaryOp(join, a, b)
	}
	x, err := build(lo, hi)
	if err != nil || !symmetric {
		return x, err
	}
	y, err := build(hi, lo)
	if err != nil {
		return nil, err
	}
	if not {
		return NewBinaryOp("AND", x, y)
	}
	return NewBinaryOp("OR", x, y)
}
