package streamplan

import (
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
)

// Temporal filters: now() in a view's WHERE, compared with an expression
// of the row (RisingWave's temporal filter).
//
//	WHERE ts > now() - INTERVAL '1 hour'       -- expiring: rows leave
//	WHERE ts + INTERVAL '5 minutes' <= now()   -- delaying: rows arrive late
//
// Each such conjunct of a WHERE (or of a scan's pushed-down filter) becomes
// an OpTemporalFilter over the rest of the plan (exec.TemporalFilter). One
// side of the comparison must be now() plus or minus constants (a bound
// that never moves back as epochs pass: expr.MonotoneInNow), the other
// must not call any volatile function; now() anywhere else in a view is
// still refused (check.go), since a row would keep the value it had when
// it was computed.

// TemporalSpec is one temporal filter conjunct.
type TemporalSpec struct {
	// Cond is the comparison, over the input row.
	Cond expr.Expr
	// Key is the side of Cond without now().
	Key expr.Expr
	// Expiring: Key > f(now()) or >=; rows fail as now() grows.
	// Otherwise Key < f(now()) or <=: rows pass as now() grows.
	Expiring bool
}

// splitTemporal separates the temporal-filter conjuncts of cond from the
// rest (nil when nothing remains).
func splitTemporal(cond expr.Expr) (rest expr.Expr, temporal []*TemporalSpec, err error) {
	if cond == nil {
		return nil, nil, nil
	}
	for _, c := range expr.Conjuncts(cond) {
		if t := temporalConjunct(c); t != nil {
			temporal = append(temporal, t)
			continue
		}
		if rest == nil {
			rest = c
		} else if rest, err = expr.NewBinaryOp("AND", rest, c); err != nil {
			return nil, nil, err
		}
	}
	return rest, temporal, nil
}

// temporalConjunct returns c as a temporal filter, or nil if it is not one.
func temporalConjunct(c expr.Expr) *TemporalSpec {
	if name, _ := volatileCall(c); name == "" {
		return nil
	}
	op, l, r, ok := expr.Comparison(c)
	if !ok {
		return nil
	}
	if expr.MonotoneInNow(l) {
		l, r = r, l
		op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
	}
	if !expr.MonotoneInNow(r) {
		return nil
	}
	if name, tooDeep := volatileCall(l); name != "" || tooDeep {
		return nil
	}
	return &TemporalSpec{Cond: c, Key: l, Expiring: op == ">" || op == ">="}
}

// temporalFilter puts the filter t over in. Its state is distributed like
// its input when that is hashed, and by the input's stream key otherwise,
// so that each actor keeps the rows it is sent.
func (b *builder) temporalFilter(in *Node, t *TemporalSpec) *Node {
	switch {
	case in.Dist.Kind == DistHash || in.Dist.Kind == DistSingle:
	case len(in.Key) == 0:
		in = exchange(in, Dist{Kind: DistSingle})
	default:
		in = exchange(in, Dist{Kind: DistHash, Keys: in.Key})
	}
	return &Node{Op: OpTemporalFilter, Inputs: []*Node{in}, Schema: in.Schema, Key: in.Key, Dist: in.Dist,
		Cond: t.Cond, Temporal: t, InputKey: in.Key}
}

// temporalFilters plans the filter node n (a Filter, or a Scan with a
// pushed-down filter) whose condition holds temporal filters: the rest of
// the condition first, then each temporal filter over it. ok is false when
// there are none.
func (b *builder) temporalFilters(n plan.Node) (out *Node, ok bool, err error) {
	var cond expr.Expr
	switch n := n.(type) {
	case *plan.Filter:
		cond = n.Cond
	case *plan.Scan:
		cond = n.Filter
	default:
		return nil, false, nil
	}
	rest, temporal, err := splitTemporal(cond)
	if err != nil || len(temporal) == 0 {
		return nil, false, err
	}
	var inner plan.Node
	switch n := n.(type) {
	case *plan.Filter:
		inner = n.Input
		if rest != nil {
			inner = &plan.Filter{Input: n.Input, Cond: rest}
		}
	case *plan.Scan:
		s := *n
		s.Filter = rest
		inner = &s
	}
	out, err = b.build(inner)
	if err != nil {
		return nil, true, err
	}
	for _, t := range temporal {
		out = b.temporalFilter(out, t)
	}
	return out, true, nil
}
