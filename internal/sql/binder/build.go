package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// conjuncts splits an AND tree into its parts; an OR whose branches share
// conjuncts gives them as parts of their own (factorOr).
func conjuncts(n *pg.Node) []*pg.Node {
	if be := n.GetBoolExpr(); be != nil && be.Boolop == pg.BoolExprType_AND_EXPR {
		var out []*pg.Node
		for _, a := range be.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	} else if be != nil && be.Boolop == pg.BoolExprType_OR_EXPR {
		// factorOr's parts are split already (the shared ones are
		// conjuncts of the branches, the rest is one OR whose branches'
		// inner ORs were factored): splitting them again would walk the
		// deeper levels once more per level, exponential in the nesting.
		if f := factorOr(be); f != nil {
			return f
		}
	}
	return []*pg.Node{n}
}

// refTables returns the range variables of r that conjunct n references,
// and whether n may be moved at all (it contains no subquery, aggregate,
// window function or volatile-looking call).
func (b *Binder) refTables(n *pg.Node, r *rel) (map[string]bool, bool) {
	out := map[string]bool{}
	movable := true
	walkAST(n, func(x *pg.Node) bool {
		switch {
		case x.GetSubLink() != nil:
			movable = false
			return false
		case x.GetFuncCall() != nil:
			fc := x.GetFuncCall()
			name := fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()
			if fc.Over != nil || isAggregateName(name) || name == "random" || name == "nextval" {
				movable = false
				return false
			}
		case x.GetColumnRef() != nil:
			fields := x.GetColumnRef().Fields
			if fields[len(fields)-1].GetAStar() != nil {
				movable = false
				return false
			}
			names := strs(fields)
			var c *scopeCol
			var ok bool
			var err error
			switch len(names) {
			case 1:
				c, ok, err = r.sc.lookup("", names[0])
			case 2:
				c, ok, err = r.sc.lookup(names[0], names[1])
			default:
				movable = false
				return false
			}
			if err != nil {
				movable = false
				return false
			}
			if !ok {
				return false // an outer reference: constant here
			}
			if c.table != "" && !c.unqualifiedOnly {
				out[c.table] = true
			} else {
				// a merged USING column: belongs to the whole join.
				movable = false
			}
		}
		return true
	})
	return out, movable
}

func subset(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// pushDown places WHERE conjunct n as deep into r as correctness allows:
// through inner joins to the side holding all its tables, into the
// preserved side of outer joins, else onto r itself.
func (b *Binder) pushDown(r *rel, n *pg.Node, tabs map[string]bool) {
	for {
		if r.left == nil {
			r.filters = append(r.filters, n)
			return
		}
		if r.lateral != nil {
			// A filter on the left side's columns commutes with the
			// ProjectSet (each left row keeps its values in every row of its
			// expansion, the padded one of an outer one included).
			if len(tabs) > 0 && subset(tabs, r.left.tables) {
				r = r.left
				continue
			}
			r.filters = append(r.filters, n)
			return
		}
		goLeft := subset(tabs, r.left.tables) && (r.kind == plan.InnerJoin || r.kind == plan.LeftJoin)
		goRight := subset(tabs, r.right.tables) && (r.kind == plan.InnerJoin || r.kind == plan.RightJoin)
		switch {
		case len(tabs) > 0 && goLeft:
			r = r.left
		case len(tabs) > 0 && goRight:
			r = r.right
		case r.kind == plan.InnerJoin && len(tabs) > 0:
			r.on = append(r.on, n)
			return
		default:
			r.filters = append(r.filters, n)
			return
		}
	}
}

// build turns a rel tree into plan nodes.
func (b *Binder) build(r *rel) (plan.Node, error) {
	var node plan.Node
	switch {
	case r.left == nil:
		node = r.node
	case r.lateral != nil:
		l, err := b.build(r.left)
		if err != nil {
			return nil, err
		}
		ps := *r.lateral
		ps.Input = l
		ps.Out = append(append(plan.Schema{}, l.Schema()...), r.lateral.Out...)
		node = &ps
		// An inner join's ON conditions filter the expansion.
		r.filters = append(r.filters, r.on...)
		r.on = nil
	default:
		l, err := b.build(r.left)
		if err != nil {
			return nil, err
		}
		rt, err := b.build(r.right)
		if err != nil {
			return nil, err
		}
		j := &plan.Join{Kind: r.kind, Left: l, Right: rt}
		j.Out = append(append(plan.Schema{}, l.Schema()...), rt.Schema()...)
		for _, u := range r.using {
			lc, _, _ := r.left.sc.lookup("", u)
			rc, _, _ := r.right.sc.lookup("", u)
			if err := b.addEquiKey(j, lc.e, rc.e, "JOIN/USING"); err != nil {
				return nil, err
			}
		}
		var residual []expr.Expr
		for _, c := range r.on {
			ok, err := b.tryEquiKey(j, r, c)
			if err != nil {
				return nil, err
			}
			if ok {
				continue
			}
			e, err := b.bindExpr(c, &exprCtx{sc: r.sc, clause: "JOIN conditions"})
			if err != nil {
				return nil, err
			}
			if e, err = expr.CoerceBool(e, "JOIN/ON"); err != nil {
				return nil, b.errAt(err, location(c))
			}
			residual = append(residual, e)
		}
		if j.Cond, err = andAll(residual); err != nil {
			return nil, err
		}
		node = j
	}
	if len(r.filters) == 0 {
		return node, nil
	}
	var conds []expr.Expr
	for _, f := range r.filters {
		e, err := b.bindExpr(f, &exprCtx{sc: r.sc, clause: "WHERE"})
		if err != nil {
			return nil, err
		}
		if e, err = expr.CoerceBool(e, "WHERE"); err != nil {
			return nil, b.errAt(err, location(f))
		}
		conds = append(conds, e)
	}
	cond, err := andAll(conds)
	if err != nil {
		return nil, err
	}
	if s, ok := node.(*plan.Scan); ok {
		cp := *s
		cp.Filter = cond
		cp.KeyPrefix = keyPrefix(s.Rel, conds)
		cp.Index = b.chooseIndex(s.Rel, conds, len(cp.KeyPrefix)) // indexscan.go
		return &cp, nil
	}
	return &plan.Filter{Input: node, Cond: cond}, nil
}

func andAll(es []expr.Expr) (expr.Expr, error) {
	var out expr.Expr
	for _, e := range es {
		if out == nil {
			out = e
			continue
		}
		var err error
		if out, err = expr.NewBinaryOp("AND", out, e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tryEquiKey makes conjunct c (l = r with each side over one input) an
// equality key of join j.
func (b *Binder) tryEquiKey(j *plan.Join, r *rel, c *pg.Node) (bool, error) {
	ae := c.GetAExpr()
	if ae == nil || ae.Kind != pg.A_Expr_Kind_AEXPR_OP || len(ae.Name) != 1 || ae.Name[0].GetString_().GetSval() != "=" {
		return false, nil
	}
	lt, lok := b.refTables(ae.Lexpr, r)
	rt, rok := b.refTables(ae.Rexpr, r)
	if !lok || !rok || len(lt) == 0 || len(rt) == 0 {
		return false, nil
	}
	lhs, rhs := ae.Lexpr, ae.Rexpr
	switch {
	case subset(lt, r.left.tables) && subset(rt, r.right.tables):
	case subset(rt, r.left.tables) && subset(lt, r.right.tables):
		lhs, rhs = rhs, lhs
	default:
		return false, nil
	}
	// Bind the whole comparison first so that errors and type resolution
	// are exactly those of the condition as written.
	if _, err := b.bindExpr(c, &exprCtx{sc: r.sc, clause: "JOIN conditions"}); err != nil {
		return false, err
	}
	le, err := b.bindExpr(lhs, &exprCtx{sc: r.left.sc, clause: "JOIN conditions"})
	if err != nil {
		return false, err
	}
	re, err := b.bindExpr(rhs, &exprCtx{sc: r.right.sc, clause: "JOIN conditions"})
	if err != nil {
		return false, err
	}
	if err := b.addEquiKey(j, le, re, "JOIN"); err != nil {
		// types that cannot be unified for hashing: keep as a residual.
		return false, nil
	}
	return true, nil
}

// addEquiKey adds l = r as a hash key, casting both sides to one type so
// that equal values hash equally.
func (b *Binder) addEquiKey(j *plan.Join, l, r expr.Expr, context string) error {
	lt, rt := l.Type(), r.Type()
	if !sameKeyType(lt, rt) {
		t, err := commonType([]types.Type{lt, rt}, context)
		if err != nil {
			return err
		}
		if l, err = expr.NewCast(l, t, expr.CastImplicit); err != nil {
			return err
		}
		if r, err = expr.NewCast(r, t, expr.CastImplicit); err != nil {
			return err
		}
	}
	j.LeftKeys = append(j.LeftKeys, l)
	j.RightKeys = append(j.RightKeys, r)
	return nil
}

// sameKeyType reports whether values of a and b hash alike (see
// batch/hashkey.go: integers share an encoding, strings share one).
func sameKeyType(a, b types.Type) bool {
	if a.IsInteger() && b.IsInteger() {
		return true
	}
	return a.Kind == b.Kind
}

// walkAST visits expression nodes depth-first; f returns false to skip a
// node's children. Subquery bodies are not entered.
func walkAST(n *pg.Node, f func(*pg.Node) bool) {
	if n == nil || !f(n) {
		return
	}
	var kids []*pg.Node
	switch {
	case n.GetAExpr() != nil:
		kids = []*pg.Node{n.GetAExpr().Lexpr, n.GetAExpr().Rexpr}
	case n.GetBoolExpr() != nil:
		kids = n.GetBoolExpr().Args
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		kids = append(kids, fc.Args...)
		kids = append(kids, fc.AggFilter)
		for _, s := range fc.AggOrder {
			kids = append(kids, s.GetSortBy().Node)
		}
	case n.GetTypeCast() != nil:
		kids = []*pg.Node{n.GetTypeCast().Arg}
	case n.GetNullTest() != nil:
		kids = []*pg.Node{n.GetNullTest().Arg}
	case n.GetBooleanTest() != nil:
		kids = []*pg.Node{n.GetBooleanTest().Arg}
	case n.GetCaseExpr() != nil:
		ce := n.GetCaseExpr()
		kids = append(kids, ce.Arg, ce.Defresult)
		for _, w := range ce.Args {
			kids = append(kids, w.GetCaseWhen().Expr, w.GetCaseWhen().Result)
		}
	case n.GetCoalesceExpr() != nil:
		kids = n.GetCoalesceExpr().Args
	case n.GetMinMaxExpr() != nil:
		kids = n.GetMinMaxExpr().Args
	case n.GetList() != nil:
		kids = n.GetList().Items
	case n.GetSubLink() != nil:
		kids = []*pg.Node{n.GetSubLink().Testexpr}
	case n.GetResTarget() != nil:
		kids = []*pg.Node{n.GetResTarget().Val}
	case n.GetSortBy() != nil:
		kids = []*pg.Node{n.GetSortBy().Node}
	case n.GetAIndirection() != nil:
		// arr[i], (rec).field: without this, refTables missed the table
		// of con.confkey in "pka.attnum = con.confkey[pos.n]" (pgjdbc's
		// getImportedKeys) and pushed the conjunct to pka's side.
		ind := n.GetAIndirection()
		kids = append(kids, ind.Arg)
		for _, x := range ind.Indirection {
			if ai := x.GetAIndices(); ai != nil {
				kids = append(kids, ai.Lidx, ai.Uidx)
			}
		}
	case n.GetAArrayExpr() != nil:
		kids = n.GetAArrayExpr().Elements
	case n.GetRowExpr() != nil:
		kids = n.GetRowExpr().Args
	case n.GetNullIfExpr() != nil:
		kids = n.GetNullIfExpr().Args
	}
	for _, k := range kids {
		walkAST(k, f)
	}
}

var errNoRows = sqlerr.New(sqlerr.InternalError, "no rows")
