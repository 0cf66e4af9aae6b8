package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
)

// semiJoin is a WHERE conjunct [NOT] EXISTS / IN (subquery) rewritten as
// a semi or anti join, applied on top of the FROM clause's plan.
//
// Rewriting (instead of evaluating the subquery per row) makes IN and
// EXISTS hash joins in batch execution, and lets the streaming planner
// maintain them incrementally. The rewrite applies to simple subqueries:
// one SELECT with FROM and WHERE, no aggregation, DISTINCT, LIMIT or set
// operation; correlation only through WHERE conjuncts of the subquery.
// NOT IN is rewritten only when uncorrelated (its NULL semantics need the
// whole right side; see plan.Join.NullAware). Anything else stays a
// plan.Subquery expression, which is always correct.
type semiJoin struct {
	join *plan.Join // Left is filled in when applied
}

// trySemiJoin returns the rewrite of conjunct c, or nil when it does not
// apply.
func (b *Binder) trySemiJoin(c *pg.Node, r *rel) (*semiJoin, error) {
	negated := false
	if be := c.GetBoolExpr(); be != nil && be.Boolop == pg.BoolExprType_NOT_EXPR && len(be.Args) == 1 {
		negated = true
		c = be.Args[0]
	}
	sl := c.GetSubLink()
	if sl == nil {
		return nil, nil
	}
	isIn := false
	switch sl.SubLinkType {
	case pg.SubLinkType_EXISTS_SUBLINK:
	case pg.SubLinkType_ANY_SUBLINK:
		if len(sl.OperName) > 0 && opName(sl.OperName) != "=" {
			return nil, nil
		}
		isIn = true
	default:
		return nil, nil
	}
	sub := sl.Subselect.GetSelectStmt()
	if sub == nil || sub.Op != pg.SetOperation_SETOP_NONE || len(sub.ValuesLists) > 0 || len(sub.GroupClause) > 0 ||
		sub.HavingClause != nil || len(sub.WindowClause) > 0 || len(sub.DistinctClause) > 0 || sub.LimitCount != nil ||
		sub.LimitOffset != nil || sub.WithClause != nil || len(sub.FromClause) == 0 || len(sub.LockingClause) > 0 {
		return nil, nil
	}
	for _, t := range sub.TargetList {
		if containsAggregate(t) || containsWindow(t) || hasSubLink(t) {
			return nil, nil
		}
	}
	if isIn && (len(sub.TargetList) != 1 || isStar(sub.TargetList[0].GetResTarget().Val)) {
		return nil, nil
	}
	// Bind the subquery's FROM. Correlation inside FROM items (derived
	// tables, function arguments) cannot be rewritten.
	correlated := false
	guard := &scope{cols: r.sc.cols, star: r.sc.star, tables: r.sc.tables, parent: r.sc.parent, correlated: &correlated, width: r.sc.width}
	sr, err := b.bindFrom(sub.FromClause, guard)
	if err != nil || correlated {
		return nil, nil // let the general path report errors
	}
	// JOIN ... ON conditions are bound later, against the subquery's FROM
	// alone: one that names an enclosing query's column would be left with
	// an outer reference no row of the semi join supplies (XX000 "outer
	// reference without an outer row"; found by sqlsmith).
	for _, item := range sub.FromClause {
		if !joinQualsLocal(item, sr.sc) {
			return nil, nil
		}
	}
	var keysL, keysR []expr.Expr
	var residual []*pg.Node
	if sub.WhereClause != nil {
		for _, conj := range conjuncts(sub.WhereClause) {
			if hasSubLink(conj) || containsAggregate(conj) || containsWindow(conj) {
				return nil, nil
			}
			inner, outer, ok := b.classifyRefs(conj, sr, r)
			if !ok {
				return nil, nil
			}
			if !outer {
				tabs, movable := b.refTables(conj, sr)
				if movable {
					b.pushDown(sr, conj, tabs)
				} else {
					sr.filters = append(sr.filters, conj)
				}
				continue
			}
			_ = inner
			// inner_expr = outer_expr becomes a key pair.
			if ae := conj.GetAExpr(); ae != nil && ae.Kind == pg.A_Expr_Kind_AEXPR_OP && opName(ae.Name) == "=" {
				li, lo, lok := b.classifyRefs(ae.Lexpr, sr, r)
				ri, ro, rok := b.classifyRefs(ae.Rexpr, sr, r)
				if lok && rok {
					var inAST, outAST *pg.Node
					switch {
					case !lo && !ri && ro:
						inAST, outAST = ae.Lexpr, ae.Rexpr
					case !ro && !li && lo:
						inAST, outAST = ae.Rexpr, ae.Lexpr
					}
					if inAST != nil {
						// Bind the comparison as written first, for its
						// errors and operator resolution.
						if _, err := b.bindExpr(conj, &exprCtx{sc: combinedScope(sr, r), clause: "WHERE"}); err != nil {
							return nil, nil
						}
						ie, err := b.bindExpr(inAST, &exprCtx{sc: sr.sc, clause: "WHERE"})
						if err != nil {
							return nil, nil
						}
						oe, err := b.bindExpr(outAST, &exprCtx{sc: r.sc, clause: "WHERE"})
						if err != nil {
							return nil, nil
						}
						keysL = append(keysL, oe)
						keysR = append(keysR, ie)
						continue
					}
				}
			}
			residual = append(residual, conj)
		}
	}
	if isIn {
		// The IN list's expression is evaluated on the subquery's side of
		// the join, where no enclosing row exists: one that names the
		// enclosing query keeps the subquery form (it was XX000 "outer
		// reference without an outer row", from PostgreSQL's subselect
		// tests: x IN (SELECT outer.a + b FROM ...)).
		if _, outer, ok := b.classifyRefs(sub.TargetList[0].GetResTarget().Val, sr, r); !ok || outer {
			return nil, nil
		}
	}
	if negated && isIn && (len(keysL) > 0 || len(residual) > 0) {
		return nil, nil // correlated NOT IN: keep the subquery expression
	}
	right, err := b.build(sr)
	if err != nil {
		return nil, err
	}
	j := &plan.Join{Kind: plan.SemiJoin, Right: right}
	if negated {
		j.Kind = plan.AntiJoin
	}
	if isIn {
		test, err := b.bindExpr(sl.Testexpr, &exprCtx{sc: r.sc, clause: "WHERE"})
		if err != nil {
			return nil, err
		}
		target, err := b.bindExpr(sub.TargetList[0].GetResTarget().Val, &exprCtx{sc: sr.sc, clause: "SELECT"})
		if err != nil {
			return nil, err
		}
		if target, err = expr.ResolveUnknown(target); err != nil {
			return nil, err
		}
		test = b.retypeParam(test, target.Type())
		// The = must exist for these types, as in the expression form.
		if _, err := expr.NewBinaryOp("=", test, target); err != nil {
			return nil, b.errAt(err, sl.Location)
		}
		if err := b.addEquiKey(j, test, target, "IN"); err != nil {
			return nil, nil
		}
		j.NullAware = negated
	}
	for i := range keysL {
		if err := b.addEquiKey(j, keysL[i], keysR[i], "WHERE"); err != nil {
			return nil, nil
		}
	}
	var conds []expr.Expr
	for _, rc := range residual {
		e, err := b.bindExpr(rc, &exprCtx{sc: combinedScope(sr, r), clause: "WHERE"})
		if err != nil {
			return nil, nil
		}
		if e, err = expr.CoerceBool(e, "WHERE"); err != nil {
			return nil, err
		}
		conds = append(conds, e)
	}
	if j.Cond, err = andAll(conds); err != nil {
		return nil, err
	}
	return &semiJoin{join: j}, nil
}

// apply puts the semi/anti join on top of left.
func (s *semiJoin) apply(left plan.Node) plan.Node {
	j := *s.join
	j.Left = left
	j.Out = left.Schema()
	return &j
}

// combinedScope resolves names of the subquery first, then of the outer
// query, over the row outer ++ subquery (the join's row).
func combinedScope(sr, r *rel) *scope {
	sc := &scope{width: r.width + sr.width, flatParent: true}
	for _, c := range sr.sc.cols {
		c.e = shiftExpr(c.e, r.width)
		sc.cols = append(sc.cols, c)
	}
	sc.tables = sr.sc.tables
	sc.parent = r.sc
	return sc
}

// classifyRefs reports whether n references columns of the subquery
// (inner) and of the enclosing query (outer); ok is false for references
// that resolve in neither or further out (left to the general path).
func (b *Binder) classifyRefs(n *pg.Node, sr, r *rel) (inner, outer, ok bool) {
	ok = true
	walkAST(n, func(x *pg.Node) bool {
		cr := x.GetColumnRef()
		if cr == nil {
			return true
		}
		names := strs(cr.Fields)
		if cr.Fields[len(cr.Fields)-1].GetAStar() != nil || len(names) > 2 {
			ok = false
			return false
		}
		table, name := "", names[len(names)-1]
		if len(names) == 2 {
			table = names[0]
		}
		if _, found, err := sr.sc.lookup(table, name); err != nil {
			ok = false
		} else if found {
			inner = true
		} else if c, found, err := r.sc.lookup(table, name); err != nil || !found {
			ok = false
		} else if _, isRef := c.e.(*expr.ColumnRef); !isRef {
			ok = false
		} else {
			outer = true
		}
		return ok
	})
	return inner, outer, ok
}

func hasSubLink(n *pg.Node) bool {
	found := false
	walkAST(n, func(x *pg.Node) bool {
		if x.GetSubLink() != nil {
			found = true
		}
		return !found
	})
	return found
}

func isStar(n *pg.Node) bool {
	cr := n.GetColumnRef()
	return cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil
}

// joinQualsLocal reports whether every column the ON conditions of the
// joins in FROM item n name resolves among the FROM clause's own columns
// (sc); a subquery inside an ON condition counts as not local.
func joinQualsLocal(n *pg.Node, sc *scope) bool {
	j := n.GetJoinExpr()
	if j == nil {
		return true
	}
	local := true
	walkAST(j.Quals, func(x *pg.Node) bool {
		if x.GetSubLink() != nil {
			local = false
		}
		if cr := x.GetColumnRef(); cr != nil && local {
			var names []string
			for _, f := range cr.Fields {
				if f.GetAStar() != nil {
					return false
				}
				names = append(names, f.GetString_().GetSval())
			}
			table, name := "", names[len(names)-1]
			if len(names) > 1 {
				table = names[len(names)-2]
			}
			if _, ok, err := sc.lookup(table, name); !ok || err != nil {
				local = false
			}
		}
		return local
	})
	return local && joinQualsLocal(j.Larg, sc) && joinQualsLocal(j.Rarg, sc)
}
