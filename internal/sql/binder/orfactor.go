package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// factorOr pulls the conjuncts every branch of an OR shares out of it:
//
//	(A AND B) OR (A AND C)  →  A, (B OR C)
//
// so that a join condition written into each branch (TPC-H q19's
// p_partkey = l_partkey) becomes a conjunct the planner can use for a hash
// join instead of a nested loop over the OR. The rewrite holds in SQL's
// three-valued logic (AND and OR distribute over each other there too). A
// shared part that holds a subquery or a volatile call is left in place:
// pulling it out would change how often it runs. It returns nil when
// nothing is shared.
func factorOr(be *pg.BoolExpr) []*pg.Node {
	if be.Boolop != pg.BoolExprType_OR_EXPR || len(be.Args) < 2 {
		return nil
	}
	branches := make([][]*pg.Node, len(be.Args))
	for i, a := range be.Args {
		branches[i] = conjuncts(a)
	}
	var common []*pg.Node
	for _, c := range branches[0] {
		if !factorable(c) {
			continue
		}
		shared := true
		for _, br := range branches[1:] {
			if indexEqual(br, c) < 0 {
				shared = false
				break
			}
		}
		if shared && indexEqual(common, c) < 0 {
			common = append(common, c)
		}
	}
	if len(common) == 0 {
		return nil
	}
	rest := make([]*pg.Node, 0, len(branches))
	for _, br := range branches {
		var left []*pg.Node
		for _, c := range br {
			if indexEqual(common, c) < 0 {
				left = append(left, c)
			}
		}
		if len(left) == 0 {
			// A branch that is only the common part: the OR is true
			// whenever the common part is, so it is the common part.
			return common
		}
		if len(left) == 1 {
			rest = append(rest, left[0])
		} else {
			rest = append(rest, &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: left, Location: be.Location}}})
		}
	}
	return append(common, &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_OR_EXPR, Args: rest, Location: be.Location}}})
}

// volatileCalls are the functions whose calls factorOr never moves.
var volatileCalls = map[string]bool{
	"random": true, "nextval": true, "setval": true, "setseed": true, "clock_timestamp": true,
	"gen_random_uuid": true, "uuid_generate_v4": true, "timeofday": true, "txid_current": true,
}

func factorable(n *pg.Node) bool {
	ok := true
	walkAST(n, func(x *pg.Node) bool {
		if x.GetSubLink() != nil {
			ok = false
			return false
		}
		if fc := x.GetFuncCall(); fc != nil && len(fc.Funcname) > 0 {
			if volatileCalls[fc.Funcname[len(fc.Funcname)-1].GetString_().GetSval()] {
				ok = false
				return false
			}
		}
		return true
	})
	return ok
}

// indexEqual is the index of the first node of ns equal to n (ignoring
// source locations), or -1.
func indexEqual(ns []*pg.Node, n *pg.Node) int {
	for i, m := range ns {
		if astEqual(m.ProtoReflect(), n.ProtoReflect()) {
			return i
		}
	}
	return -1
}

// astEqual compares two parse trees field by field, except the location
// fields (the same expression written twice differs only there).
func astEqual(a, b protoreflect.Message) bool {
	if a.Descriptor() != b.Descriptor() {
		return false
	}
	fields := a.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Name() == "location" {
			continue
		}
		if a.Has(fd) != b.Has(fd) {
			return false
		}
		if !a.Has(fd) {
			continue
		}
		va, vb := a.Get(fd), b.Get(fd)
		switch {
		case fd.IsList():
			la, lb := va.List(), vb.List()
			if la.Len() != lb.Len() {
				return false
			}
			for j := 0; j < la.Len(); j++ {
				if fd.Kind() == protoreflect.MessageKind {
					if !astEqual(la.Get(j).Message(), lb.Get(j).Message()) {
						return false
					}
				} else if !la.Get(j).Equal(lb.Get(j)) {
					return false
				}
			}
		case fd.IsMap():
			if !va.Equal(vb) {
				return false
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if !astEqual(va.Message(), vb.Message()) {
				return false
			}
		default:
			if !va.Equal(vb) {
				return false
			}
		}
	}
	return true
}
