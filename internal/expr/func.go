package expr

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// NewFuncCall resolves and builds a call of a built-in scalar function by
// name (case-insensitive, optionally "pg_catalog."-qualified). Overloads
// are chosen with PostgreSQL's rules (see resolveOverload); an unknown
// name or signature is 42883 "function foo(integer) does not exist" with
// PostgreSQL's hint. COALESCE, NULLIF, GREATEST and LEAST are accepted
// here too.
func NewFuncCall(name string, args []Expr) (Expr, error) {
	lname := strings.ToLower(strings.TrimPrefix(strings.ToLower(name), "pg_catalog."))
	switch lname {
	case "coalesce":
		return NewCoalesce(args)
	case "greatest":
		return NewGreatest(args)
	case "least":
		return NewLeast(args)
	case "nullif":
		if len(args) != 2 {
			return nil, undefinedFunction(lname, exprTypes(args))
		}
		return NewNullIf(args[0], args[1])
	}
	if b, ok := specialFuncs[lname]; ok {
		return b(args)
	}
	cands := funcRegistry[lname]
	ts := exprTypes(args)
	if len(cands) == 0 {
		if IsAggregateName(lname) {
			return nil, sqlerr.Errorf(sqlerr.GroupingError, "aggregate function calls are not allowed here: %s", lname)
		}
		return nil, undefinedFunction(lname, ts)
	}
	o, ambiguous := resolveOverload(cands, ts, resolveFunc)
	if o == nil {
		if ambiguous {
			return nil, ambiguousFunction(lname, ts)
		}
		return nil, undefinedFunction(lname, ts)
	}
	return bindOverload(lname, o, args, false)
}

// specialFuncs are functions whose typing is not a fixed signature.
var specialFuncs = map[string]func(args []Expr) (Expr, error){}

// FunctionExists reports whether name is a known scalar function.
func FunctionExists(name string) bool {
	n := strings.ToLower(name)
	_, ok := funcRegistry[n]
	_, ok2 := specialFuncs[n]
	switch n {
	case "coalesce", "greatest", "least", "nullif":
		return true
	}
	return ok || ok2
}
