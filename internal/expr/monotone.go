package expr

import "github.com/runneldb/runnel/internal/types"

// MonotoneIn reports whether e is a non-decreasing function of column col
// alone (constants aside): e(row) ≤ e(row') whenever row[col] ≤ row'[col].
// Streaming uses it to carry a watermark on col through e: evaluating e
// over a row holding only the watermark gives a watermark of e's column.
//
// Recognised, conservatively: the column itself; col + c, c + col and
// col − c for a constant c, over timestamps, dates and integers
// (timestamp ± interval included: adding a fixed interval never reorders
// times, month arithmetic clamps monotonically); window_start and
// window_end of TUMBLE (TimeWindowBound) over a monotone argument. Casts
// are not: timestamp → timestamptz can reorder around a DST change.
func MonotoneIn(e Expr, col int) bool {
	return monotoneBy(e, func(x Expr) bool {
		c, ok := x.(*ColumnRef)
		return ok && c.Index == col
	})
}

// MonotoneInNow reports whether e is a non-decreasing function of now()
// alone (now() itself, ± constants, by MonotoneIn's rules): a temporal
// filter's bound, which must never move back as epochs pass.
func MonotoneInNow(e Expr) bool {
	return monotoneBy(e, func(x Expr) bool {
		f, ok := x.(*FuncExpr)
		return ok && len(f.Args) == 0 && f.Volatile() && statementTimeFuncs[f.Name]
	})
}

// statementTimeFuncs return the statement's (in a view: the epoch's) time.
var statementTimeFuncs = map[string]bool{"now": true, "current_timestamp": true, "transaction_timestamp": true, "statement_timestamp": true}

// monotoneBy reports whether e is a non-decreasing function of the leaves
// leaf accepts, constants aside.
func monotoneBy(e Expr, leaf func(Expr) bool) bool {
	if leaf(e) {
		return true
	}
	switch e := e.(type) {
	case *TimeWindowBound:
		return monotoneBy(e.Arg, leaf)
	case *binaryExpr:
		return monotoneArith(e.name, e.l, e.r, e.typ, leaf)
	case *FuncExpr:
		if len(e.Args) == 2 {
			return monotoneArith(e.Name, e.Args[0], e.Args[1], e.typ, leaf)
		}
	}
	return false
}

func monotoneArith(op string, l, r Expr, typ types.Type, leaf func(Expr) bool) bool {
	switch typ.Kind {
	case types.KindTimestamp, types.KindTimestamptz, types.KindDate,
		types.KindInt16, types.KindInt32, types.KindInt64:
	default:
		return false
	}
	switch op {
	case "+":
		return (monotoneBy(l, leaf) && isConstant(r)) || (isConstant(l) && monotoneBy(r, leaf))
	case "-":
		return monotoneBy(l, leaf) && isConstant(r)
	}
	return false
}

// isConstant: a literal, a cast of one, or an operator or stable function
// over constants (INTERVAL '1 day' * 365, as RisingWave's temporal filters
// write a long bound).
func isConstant(e Expr) bool {
	return isConstantDepth(e, 0)
}

// maxConstantDepth bounds the recursion of isConstantDepth; deeper
// expressions are simply not treated as constants.
const maxConstantDepth = 64

func isConstantDepth(e Expr, depth int) bool {
	if depth > maxConstantDepth {
		return false
	}
	switch e := e.(type) {
	case *Const:
		return true
	case *CastExpr:
		return isConstantDepth(e.E, depth+1)
	case *binaryExpr:
		return isConstantDepth(e.l, depth+1) && isConstantDepth(e.r, depth+1)
	case *FuncExpr:
		if e.Volatile() || len(e.Args) == 0 {
			return false
		}
		for _, a := range e.Args {
			if !isConstantDepth(a, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// MonotoneColumn returns the column e is a non-decreasing function of
// (see MonotoneIn), if there is one.
func MonotoneColumn(e Expr) (int, bool) {
	col := -1
	switch x := e.(type) {
	case *ColumnRef:
		return x.Index, true
	case *TimeWindowBound:
		return MonotoneColumn(x.Arg)
	case *binaryExpr:
		col = arithColumn(x.l, x.r)
	case *FuncExpr:
		if len(x.Args) == 2 {
			col = arithColumn(x.Args[0], x.Args[1])
		}
	}
	if col >= 0 && MonotoneIn(e, col) {
		return col, true
	}
	return -1, false
}

func arithColumn(l, r Expr) int {
	if isConstant(r) {
		if c, ok := MonotoneColumn(l); ok {
			return c
		}
	}
	if isConstant(l) {
		if c, ok := MonotoneColumn(r); ok {
			return c
		}
	}
	return -1
}

// Conjuncts splits e at its top-level ANDs.
func Conjuncts(e Expr) []Expr {
	if a, ok := e.(*andOrExpr); ok && a.and {
		return append(Conjuncts(a.l), Conjuncts(a.r)...)
	}
	return []Expr{e}
}

// Comparison reports whether e is l op r for op one of <, <=, >, >=.
func Comparison(e Expr) (op string, l, r Expr, ok bool) {
	switch x := e.(type) {
	case *binaryExpr:
		op, l, r = x.name, x.l, x.r
	case *FuncExpr:
		if len(x.Args) != 2 {
			return "", nil, nil, false
		}
		op, l, r = x.Name, x.Args[0], x.Args[1]
	default:
		return "", nil, nil, false
	}
	switch op {
	case "<", "<=", ">", ">=":
		return op, l, r, true
	}
	return "", nil, nil, false
}
