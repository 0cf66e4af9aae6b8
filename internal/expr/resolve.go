package expr

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// overload is one signature of a function or operator.
type overload struct {
	args []types.Type
	// variadic: the last entry of args may repeat zero or more times.
	variadic bool
	// anyArgs: accepts any number of arguments of any types ("any");
	// unknown literals become text.
	anyArgs bool
	ret     types.Type
	// retFn, when set, computes the result type from the coerced arguments
	// (typmods, polymorphic results).
	retFn func(args []Expr) types.Type
	// nonStrict functions are called with NULL arguments; strict ones return
	// NULL if any argument is NULL.
	nonStrict bool
	// volatile functions (random, now) are never folded.
	volatile bool
	// uncataloged signatures are left out of pg_proc (Builtins) because
	// PostgreSQL declares the function differently: a text[] or name
	// parameter Runnel takes as text, or parameter defaults Runnel
	// implements as shorter overloads.
	uncataloged bool
	fn          func(ctx *EvalContext, args []types.Datum) (types.Datum, error)
	// fn2 is a fast path for binary operators (no argument slice).
	fn2 func(a, b types.Datum) (types.Datum, error)
	// fn1 is a fast path for unary operators and one-argument functions.
	fn1 func(a types.Datum) (types.Datum, error)
}

func (o *overload) paramType(i int) types.Type {
	if i >= len(o.args) {
		return o.args[len(o.args)-1]
	}
	return o.args[i]
}

func (o *overload) accepts(n int) bool {
	if o.anyArgs {
		return true
	}
	if o.variadic {
		return n >= len(o.args)-1
	}
	return n == len(o.args)
}

var (
	funcRegistry  = map[string][]*overload{}
	binopRegistry = map[string][]*overload{}
	unopRegistry  = map[string][]*overload{}
)

func regFunc(name string, o *overload)  { funcRegistry[name] = append(funcRegistry[name], o) }
func regBinop(name string, o *overload) { binopRegistry[name] = append(binopRegistry[name], o) }
func regUnop(name string, o *overload)  { unopRegistry[name] = append(unopRegistry[name], o) }

type resolveKind uint8

const (
	resolveFunc resolveKind = iota
	resolveBinop
	resolveUnop
)

// resolveOverload picks the overload to call for the argument types, with
// PostgreSQL's rules (func_select_candidate / oper_select_candidate):
//
//  1. an exact match wins (for a binary operator with one unknown argument,
//     the unknown is assumed to have the other argument's type);
//  2. keep candidates every argument can be implicitly coerced to;
//  3. keep those with the most exact matches;
//  4. keep those taking preferred types at the most positions;
//  5. for unknown arguments, choose a type category per position (string
//     if any candidate takes one, else the only category), preferring
//     preferred types;
//  6. if all known arguments share a type, assume unknowns have it too.
//
// It returns nil and no error when nothing matches; an ambiguity error
// when several candidates remain.
func resolveOverload(cands []*overload, args []types.Type, kind resolveKind) (*overload, bool) {
	n := len(args)
	var live []*overload
	for _, c := range cands {
		if c.accepts(n) {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil, false
	}
	// 1. exact match.
	exactArgs := args
	if kind == resolveBinop && n == 2 {
		if isUnknown(args[0]) && !isUnknown(args[1]) {
			exactArgs = []types.Type{args[1], args[1]}
		} else if isUnknown(args[1]) && !isUnknown(args[0]) {
			exactArgs = []types.Type{args[0], args[0]}
		}
	}
	for _, c := range live {
		if c.anyArgs {
			continue
		}
		ok := true
		for i, a := range exactArgs {
			if !sameBase(a, c.paramType(i)) {
				ok = false
				break
			}
		}
		if ok {
			return c, false
		}
	}
	// 2. implicit coercibility.
	var cs []*overload
	for _, c := range live {
		if c.anyArgs {
			cs = append(cs, c)
			continue
		}
		ok := true
		for i, a := range args {
			if !CanCoerce(a, c.paramType(i), CastImplicit) {
				ok = false
				break
			}
		}
		if ok {
			cs = append(cs, c)
		}
	}
	if len(cs) <= 1 {
		if len(cs) == 1 {
			return cs[0], false
		}
		return nil, false
	}
	// 3. most exact matches.
	cs = keepMax(cs, func(c *overload) int {
		m := 0
		for i, a := range args {
			if !isUnknown(a) && !c.anyArgs && sameBase(a, c.paramType(i)) {
				m++
			}
		}
		return m
	})
	if len(cs) == 1 {
		return cs[0], false
	}
	// 4. preferred types where conversion is needed.
	cs = keepMax(cs, func(c *overload) int {
		m := 0
		for i, a := range args {
			if isUnknown(a) || c.anyArgs {
				continue
			}
			p := c.paramType(i)
			if sameBase(a, p) || isPreferred(p) {
				m++
			}
		}
		return m
	})
	if len(cs) == 1 {
		return cs[0], false
	}
	// 5. unknown arguments: choose categories.
	hasUnknown := false
	for _, a := range args {
		if isUnknown(a) {
			hasUnknown = true
		}
	}
	if hasUnknown {
		type slot struct {
			cat       byte
			preferred bool
			conflict  bool
		}
		slots := make([]slot, n)
		for i, a := range args {
			if !isUnknown(a) {
				continue
			}
			s := &slots[i]
			for _, c := range cs {
				if c.anyArgs {
					continue
				}
				p := c.paramType(i)
				cat := typeCategory(p)
				switch {
				case s.cat == 0:
					s.cat = cat
					s.preferred = isPreferred(p)
				case s.cat == cat:
					s.preferred = s.preferred || isPreferred(p)
				case cat == catString:
					s.cat = cat
					s.preferred = isPreferred(p)
					s.conflict = false
				case s.cat != catString:
					s.conflict = true
				}
			}
			if s.conflict && s.cat != catString {
				return nil, len(cs) > 1
			}
		}
		var next []*overload
		for _, c := range cs {
			ok := true
			for i, a := range args {
				if !isUnknown(a) || c.anyArgs {
					continue
				}
				p := c.paramType(i)
				if typeCategory(p) != slots[i].cat || (slots[i].preferred && !isPreferred(p)) {
					ok = false
					break
				}
			}
			if ok {
				next = append(next, c)
			}
		}
		if len(next) == 1 {
			return next[0], false
		}
		if len(next) > 0 {
			cs = next
		}
		// 6. unknowns take the common type of the known arguments.
		var common types.Type
		same, any := true, false
		for _, a := range args {
			if isUnknown(a) {
				continue
			}
			if !any {
				common, any = a, true
			} else if !sameBase(a, common) {
				same = false
			}
		}
		if any && same {
			var last *overload
			cnt := 0
			for _, c := range cs {
				ok := true
				for i, a := range args {
					if isUnknown(a) && !c.anyArgs && !CanCoerce(common, c.paramType(i), CastImplicit) {
						ok = false
					}
				}
				if ok {
					last = c
					cnt++
				}
			}
			if cnt == 1 {
				return last, false
			}
		}
	}
	return nil, true
}

func keepMax(cs []*overload, score func(*overload) int) []*overload {
	best := -1
	var out []*overload
	for _, c := range cs {
		s := score(c)
		switch {
		case s > best:
			best = s
			out = append(out[:0:0], c)
		case s == best:
			out = append(out, c)
		}
	}
	return out
}

func typeList(ts []types.Type) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Name())
	}
	return b.String()
}

func exprTypes(es []Expr) []types.Type {
	ts := make([]types.Type, len(es))
	for i, e := range es {
		ts[i] = e.Type()
	}
	return ts
}

func undefinedFunction(name string, args []types.Type) error {
	return sqlerr.Errorf(sqlerr.UndefinedFunction, "function %s(%s) does not exist", name, typeList(args)).
		WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
}

func ambiguousFunction(name string, args []types.Type) error {
	return sqlerr.Errorf(sqlerr.AmbiguousFunction, "function %s(%s) is not unique", name, typeList(args)).
		WithHint("Could not choose a best candidate function. You might need to add explicit type casts.")
}

func undefinedOperator(op string, args []types.Type) error {
	var sig string
	if len(args) == 1 {
		sig = op + " " + args[0].Name()
	} else {
		sig = args[0].Name() + " " + op + " " + args[1].Name()
	}
	return sqlerr.Errorf(sqlerr.UndefinedFunction, "operator does not exist: %s", sig).
		WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

func ambiguousOperator(op string, args []types.Type) error {
	var sig string
	if len(args) == 1 {
		sig = op + " " + args[0].Name()
	} else {
		sig = args[0].Name() + " " + op + " " + args[1].Name()
	}
	return sqlerr.Errorf(sqlerr.AmbiguousFunction, "operator is not unique: %s", sig).
		WithHint("Could not choose a best candidate operator. You might need to add explicit type casts.")
}

// bindOverload coerces args to the overload's parameter types and builds
// the call expression.
func bindOverload(name string, o *overload, args []Expr, infix bool) (Expr, error) {
	coerced := make([]Expr, len(args))
	for i, a := range args {
		if o.anyArgs {
			// "any" arguments reach the function as their text output.
			switch {
			case isUnknown(a.Type()):
				c, err := coerceTo(a, types.Text, CastImplicit)
				if err != nil {
					return nil, err
				}
				coerced[i] = c
			case a.Type().Kind == types.KindVarchar:
				coerced[i] = a
			default:
				coerced[i] = &outputText{e: a}
			}
			continue
		}
		c, err := coerceTo(a, o.paramType(i), CastImplicit)
		if err != nil {
			return nil, err
		}
		coerced[i] = c
	}
	ret := o.ret
	if o.retFn != nil {
		ret = o.retFn(coerced)
	}
	switch {
	case len(coerced) == 2 && o.fn2 != nil:
		return &binaryExpr{name: name, l: coerced[0], r: coerced[1], fn: o.fn2, typ: ret, infix: infix}, nil
	case len(coerced) == 1 && o.fn1 != nil:
		return &unaryExpr{name: name, e: coerced[0], fn: o.fn1, typ: ret, prefix: infix}, nil
	}
	return &FuncExpr{Name: name, Args: coerced, o: o, typ: ret, infix: infix && len(coerced) == 2}, nil
}

// binaryExpr is a strict two-argument operator or function.
type binaryExpr struct {
	name  string
	l, r  Expr
	fn    func(a, b types.Datum) (types.Datum, error)
	typ   types.Type
	infix bool
}

func (b *binaryExpr) Type() types.Type { return b.typ }
func (b *binaryExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	l, err := b.l.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	r, err := b.r.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	if l.IsNull() || r.IsNull() {
		return types.NullDatum, nil
	}
	return b.fn(l, r)
}
func (b *binaryExpr) String() string {
	if b.infix {
		return "(" + b.l.String() + " " + b.name + " " + b.r.String() + ")"
	}
	return b.name + "(" + b.l.String() + ", " + b.r.String() + ")"
}

// unaryExpr is a strict one-argument operator or function.
type unaryExpr struct {
	name   string
	e      Expr
	fn     func(a types.Datum) (types.Datum, error)
	typ    types.Type
	prefix bool
}

func (u *unaryExpr) Type() types.Type { return u.typ }
func (u *unaryExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	v, err := u.e.Eval(ctx, row)
	if err != nil || v.IsNull() {
		return types.NullDatum, err
	}
	return u.fn(v)
}
func (u *unaryExpr) String() string {
	if u.prefix {
		return "(" + u.name + " " + u.e.String() + ")"
	}
	return u.name + "(" + u.e.String() + ")"
}

// FuncExpr is a call of a built-in function.
type FuncExpr struct {
	Name string
	Args []Expr
	o    *overload
	typ  types.Type
	// infix: an operator, rendered "a op b" by String.
	infix bool
}

func (f *FuncExpr) Type() types.Type { return f.typ }

// Volatile reports whether the function may return different results for
// the same arguments (random(), now() across statements).
func (f *FuncExpr) Volatile() bool { return f.o.volatile }

func (f *FuncExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	var buf [4]types.Datum
	vals := buf[:0]
	if len(f.Args) > len(buf) {
		vals = make([]types.Datum, 0, len(f.Args))
	}
	anyNull := false
	for _, a := range f.Args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		anyNull = anyNull || v.IsNull()
		vals = append(vals, v)
	}
	if anyNull && !f.o.nonStrict {
		return types.NullDatum, nil
	}
	switch {
	case f.o.fn != nil:
		return f.o.fn(ctx, vals)
	case f.o.fn1 != nil && len(vals) == 1:
		return f.o.fn1(vals[0])
	case f.o.fn2 != nil && len(vals) == 2:
		return f.o.fn2(vals[0], vals[1])
	}
	return types.NullDatum, sqlError(sqlerr.InternalError, "function %s has no implementation for %d arguments", f.Name, len(vals))
}

func (f *FuncExpr) String() string {
	if f.infix {
		return "(" + f.Args[0].String() + " " + f.Name + " " + f.Args[1].String() + ")"
	}
	var b strings.Builder
	b.WriteString(f.Name)
	b.WriteByte('(')
	for i, a := range f.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteByte(')')
	return b.String()
}

// outputText renders a value with its type's output function (bool as
// t/f, unlike the bool -> text cast), as concat() and format() do.
type outputText struct{ e Expr }

func (o *outputText) Type() types.Type { return types.Text }
func (o *outputText) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	v, err := o.e.Eval(ctx, row)
	if err != nil || v.IsNull() {
		return types.NullDatum, err
	}
	return types.DVarchar(types.FormatText(v, o.e.Type(), fmtOpts(ctx))), nil
}
func (o *outputText) String() string { return o.e.String() }
