package expr

// EqualityOperands returns the operands of e when e is an `=` comparison
// (the planner uses it to find key lookups).
func EqualityOperands(e Expr) (l, r Expr, ok bool) {
	switch e := e.(type) {
	case *binaryExpr:
		if e.name == "=" && e.infix {
			return e.l, e.r, true
		}
	case *FuncExpr:
		if e.Name == "=" && e.infix && len(e.Args) == 2 {
			return e.Args[0], e.Args[1], true
		}
	}
	return nil, nil, false
}

// InfixOperator returns the operator of e when e is an infix binary
// operator (`a <> b`), so a planner can tell `= ANY` from `<> ALL` in a
// bound comparison.
func InfixOperator(e Expr) (string, bool) {
	switch e := e.(type) {
	case *binaryExpr:
		return e.name, e.infix
	case *FuncExpr:
		return e.Name, e.infix && len(e.Args) == 2
	}
	return "", false
}
