package binder

import pg "github.com/pganalyze/pg_query_go/v6"

// location is the query-text location an error about expression n points
// at, as PostgreSQL's exprLocation computes it for raw parse trees: an
// operator's location is that of its leftmost operand, so the caret of
// `1 + 'a'` points at 1 and that of `'x'::int` at the literal, not at the
// operator. -1 means unknown.
func location(n *pg.Node) int32 {
	if n == nil {
		return -1
	}
	switch {
	case n.GetAExpr() != nil:
		a := n.GetAExpr()
		return leftmost(a.Location, location(a.Lexpr))
	case n.GetColumnRef() != nil:
		return n.GetColumnRef().Location
	case n.GetFuncCall() != nil:
		return n.GetFuncCall().Location
	case n.GetAConst() != nil:
		return n.GetAConst().Location
	case n.GetBoolExpr() != nil:
		be := n.GetBoolExpr()
		loc := be.Location
		if len(be.Args) > 0 {
			loc = leftmost(loc, location(be.Args[0]))
		}
		return loc
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		loc := leftmost(tc.Location, location(tc.Arg))
		if tc.TypeName != nil {
			loc = leftmost(loc, tc.TypeName.Location)
		}
		return loc
	case n.GetSubLink() != nil:
		sl := n.GetSubLink()
		return leftmost(sl.Location, location(sl.Testexpr))
	case n.GetNullTest() != nil:
		nt := n.GetNullTest()
		return leftmost(nt.Location, location(nt.Arg))
	case n.GetBooleanTest() != nil:
		bt := n.GetBooleanTest()
		return leftmost(bt.Location, location(bt.Arg))
	case n.GetParamRef() != nil:
		return n.GetParamRef().Location
	case n.GetCaseExpr() != nil:
		return n.GetCaseExpr().Location
	case n.GetCoalesceExpr() != nil:
		return n.GetCoalesceExpr().Location
	case n.GetMinMaxExpr() != nil:
		return n.GetMinMaxExpr().Location
	case n.GetCollateClause() != nil:
		cc := n.GetCollateClause()
		return leftmost(cc.Location, location(cc.Arg))
	case n.GetResTarget() != nil:
		return n.GetResTarget().Location
	}
	return -1
}

// ownErrorLocation is where an error raised while binding n itself (not
// one of its operands, whose errors carry their own position) points: the
// operator of an operator expression ("operator does not exist"), as in
// PostgreSQL's make_op, and location(n) otherwise.
func ownErrorLocation(n *pg.Node) int32 {
	if a := n.GetAExpr(); a != nil && a.Location >= 0 {
		return a.Location
	}
	return location(n)
}

// leftmost is the smaller of two locations, ignoring unknown (-1) ones.
func leftmost(a, b int32) int32 {
	if a < 0 {
		return b
	}
	if b < 0 || a < b {
		return a
	}
	return b
}

// aggregateLocation is the location of the first aggregate call in n
// (outside subqueries), where PostgreSQL points "aggregate functions are
// not allowed in ..." errors; -1 if there is none.
func aggregateLocation(n *pg.Node) int32 {
	loc := int32(-1)
	walkAST(n, func(x *pg.Node) bool {
		if fc := x.GetFuncCall(); fc != nil && fc.Over == nil && loc < 0 {
			if isAggregateName(fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()) {
				loc = fc.Location
			}
		}
		return loc < 0
	})
	return loc
}

// windowLocation is the location of the first window function call in n.
func windowLocation(n *pg.Node) int32 {
	loc := int32(-1)
	walkAST(n, func(x *pg.Node) bool {
		if fc := x.GetFuncCall(); fc != nil && fc.Over != nil && loc < 0 {
			loc = fc.Location
		}
		return loc < 0
	})
	return loc
}
