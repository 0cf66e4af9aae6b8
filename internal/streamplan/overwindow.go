package streamplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// Window functions. A plan.Window's calls are grouped by their window
// (PARTITION BY, ORDER BY); each group becomes one OverWindow operator,
// stacked on the previous one:
//
//	Project (logical columns, call results in call order, stream key)
//	└─OverWindow  partition q order r   calls of the second window
//	  └─Exchange  hash(q)
//	    └─OverWindow  partition p order o   calls of the first window
//	      └─Exchange  hash(p)            (single without PARTITION BY)
//	        └─Project  input ++ window expressions as hidden columns
//
// An OverWindow's stream key is its partition columns followed by its
// input's key: a row that moves between partitions is then a different
// row downstream (a delete and an insert), so the order in which
// different actors emit them does not matter.

// WindowSpec is an OpOverWindow's window over its input's columns.
type WindowSpec struct {
	PartitionBy []int
	OrderBy     []OrderCol
	Calls       []WindowCallSpec
}

// WindowCallSpec is one window call over input columns.
type WindowCallSpec struct {
	Call *plan.WindowCall
	Args []int
	// Filter is the FILTER column, -1 when none.
	Filter int
}

// windowKey identifies a call's window for grouping.
func windowKey(c *plan.WindowCall) string {
	var b strings.Builder
	for _, e := range c.PartitionBy {
		fmt.Fprintf(&b, "%s|", e)
	}
	b.WriteString("#")
	for _, k := range c.OrderBy {
		fmt.Fprintf(&b, "%s %v %v|", k.Expr, k.Desc, k.NullsFirst)
	}
	return b.String()
}

func (b *builder) overWindow(n *plan.Window) (*Node, error) {
	for _, c := range n.Calls {
		es := append(slices.Clone(c.Args), c.PartitionBy...)
		for _, k := range c.OrderBy {
			es = append(es, k.Expr)
		}
		if err := checkStreamable(append(es, c.Filter)...); err != nil {
			return nil, err
		}
	}
	in, err := b.build(n.Input)
	if err != nil {
		return nil, err
	}
	nIn := len(n.Input.Schema())
	var order []string
	groups := map[string][]int{}
	for i, c := range n.Calls {
		k := windowKey(c)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	cur := in
	callCol := make([]int, len(n.Calls))
	for _, k := range order {
		idx := groups[k]
		first := n.Calls[idx[0]]
		exprs := colRefs(cur, seq(0, len(cur.Schema)))
		out := slices.Clone(cur.Schema)
		col := func(e expr.Expr, name string) int {
			// expressions are bound against the logical input, which is
			// the first nIn columns of every stacked node
			if c, ok := e.(*expr.ColumnRef); ok && c.Index < nIn {
				return c.Index
			}
			exprs = append(exprs, e)
			out = append(out, plan.Column{Name: name, Type: e.Type(), Hidden: true})
			return len(exprs) - 1
		}
		spec := &WindowSpec{}
		for i, e := range first.PartitionBy {
			c := col(e, fmt.Sprintf("window_partition_%d", i))
			if !slices.Contains(spec.PartitionBy, c) {
				spec.PartitionBy = append(spec.PartitionBy, c)
			}
		}
		for i, o := range first.OrderBy {
			spec.OrderBy = append(spec.OrderBy, OrderCol{Col: col(o.Expr, fmt.Sprintf("window_order_%d", i)), Desc: o.Desc, NullsFirst: o.NullsFirst})
		}
		for _, ci := range idx {
			c := n.Calls[ci]
			cs := WindowCallSpec{Call: c, Filter: -1}
			for j, a := range c.Args {
				cs.Args = append(cs.Args, col(a, fmt.Sprintf("window_%d_arg_%d", ci, j)))
			}
			if c.Filter != nil {
				cs.Filter = col(c.Filter, fmt.Sprintf("window_%d_filter", ci))
			}
			spec.Calls = append(spec.Calls, cs)
		}
		pre := cur
		if len(exprs) > len(cur.Schema) {
			pre = &Node{Op: OpProject, Inputs: []*Node{cur}, Schema: out, Key: cur.Key, Dist: cur.Dist, Exprs: exprs}
		}
		dist := Dist{Kind: DistSingle}
		if len(spec.PartitionBy) > 0 {
			dist = Dist{Kind: DistHash, Keys: slices.Clone(spec.PartitionBy)}
		}
		ex := exchange(pre, dist)
		key := slices.Clone(spec.PartitionBy)
		for _, k := range pre.Key {
			if !slices.Contains(key, k) {
				key = append(key, k)
			}
		}
		schema := slices.Clone(pre.Schema)
		for j, ci := range idx {
			c := n.Calls[ci]
			callCol[ci] = len(pre.Schema) + j
			schema = append(schema, plan.Column{Name: c.Name, Type: c.Type, Hidden: true})
		}
		node := &Node{Op: OpOverWindow, Inputs: []*Node{ex}, Schema: schema, Key: key, Dist: dist, InputKey: pre.Key, Window: spec}
		if _, err := overWindowCalls(node); err != nil {
			return nil, err
		}
		cur = node
	}
	outCols := append(seq(0, nIn), callCol...)
	return b.project(cur, colRefs(cur, outCols), n.Out), nil
}

// overWindowCalls resolves the node's calls for the executor: window
// functions, frames with evaluated offsets, constant lag/lead offsets.
func overWindowCalls(n *Node) ([]exec.OverWindowCall, error) {
	ts := n.Inputs[0].Types()
	var orderTypes []types.Type
	for _, o := range n.Window.OrderBy {
		orderTypes = append(orderTypes, ts[o.Col])
	}
	calls := make([]exec.OverWindowCall, len(n.Window.Calls))
	for i, cs := range n.Window.Calls {
		c := cs.Call
		argTypes := make([]types.Type, len(cs.Args))
		for j, a := range cs.Args {
			argTypes[j] = ts[a]
		}
		fn, err := expr.LookupWindowFunc(c.Name, argTypes)
		if err != nil {
			return nil, err
		}
		if fn.ResultType.Kind != c.Type.Kind {
			return nil, unsupported("window function %s returns %s here but %s was planned", c.Name, fn.ResultType.Name(), c.Type.Name())
		}
		if cs.Filter >= 0 && fn.Agg == nil {
			return nil, unsupported("FILTER is only supported for aggregate window functions")
		}
		frame, err := windowFrame(c.Frame, orderTypes)
		if err != nil {
			return nil, err
		}
		oc := exec.OverWindowCall{Func: fn, Args: cs.Args, Filter: cs.Filter, Frame: frame}
		if cs.Filter < 0 {
			oc.Filter = exec.NoColumn
		}
		if c.Name == "lag" || c.Name == "lead" {
			oc.ConstOffset, oc.OffsetConst = 1, true
			if len(c.Args) >= 2 {
				oc.OffsetConst = false
				if k, ok := c.Args[1].(*expr.Const); ok {
					oc.OffsetConst = true
					oc.ConstOffset = 0 // NULL: every output is NULL
					if !k.Value.IsNull() {
						oc.ConstOffset = k.Value.Int()
					}
				}
			}
		}
		calls[i] = oc
	}
	return calls, nil
}

// windowFrame converts a bound frame, evaluating its (constant) offsets.
func windowFrame(f *plan.Frame, orderTypes []types.Type) (expr.Frame, error) {
	if f == nil {
		return expr.DefaultFrame(), nil
	}
	var out expr.Frame
	switch f.Mode {
	case plan.FrameRows:
		out.Mode = expr.FrameRows
	case plan.FrameGroups:
		out.Mode = expr.FrameGroups
	default:
		out.Mode = expr.FrameRange
	}
	out.Exclude = [...]expr.FrameExclusion{expr.ExcludeNoOthers, expr.ExcludeCurrentRow, expr.ExcludeGroup, expr.ExcludeTies}[min(int(f.Exclude), 3)]
	bound := func(b plan.FrameBound) (expr.FrameBound, error) {
		var kind expr.BoundKind
		switch b.Kind {
		case plan.UnboundedPreceding:
			kind = expr.UnboundedPreceding
		case plan.OffsetPreceding:
			kind = expr.OffsetPreceding
		case plan.CurrentRow:
			kind = expr.CurrentRow
		case plan.OffsetFollowing:
			kind = expr.OffsetFollowing
		default:
			kind = expr.UnboundedFollowing
		}
		fb := expr.FrameBound{Kind: kind}
		if b.Offset == nil || (kind != expr.OffsetPreceding && kind != expr.OffsetFollowing) {
			return fb, nil
		}
		e := b.Offset
		if out.Mode == expr.FrameRange && len(orderTypes) == 1 {
			want, ok := expr.RangeOffsetType(orderTypes[0])
			if ok && e.Type().Kind != want.Kind {
				var err error
				if e, err = expr.NewCast(e, want, expr.CastImplicit); err != nil {
					return fb, err
				}
			}
		}
		d, err := e.Eval(&expr.EvalContext{}, nil)
		if err != nil {
			return fb, unsupported("window frame offsets must be constants in a materialized view: %v", err)
		}
		fb.Offset = d
		return fb, nil
	}
	var err error
	if out.Start, err = bound(f.Start); err != nil {
		return out, err
	}
	if out.End, err = bound(f.End); err != nil {
		return out, err
	}
	if err := expr.ValidateFrame(out, orderTypes); err != nil {
		return out, err
	}
	return out, nil
}

func overWindowStateSchemas(n *Node, label string) ([]state.Schema, error) {
	calls, err := overWindowCalls(n)
	if err != nil {
		return nil, err
	}
	return []state.Schema{exec.OverWindowStateSchema(label, n.Inputs[0].Types(), n.Window.PartitionBy, columnOrders(n.Window.OrderBy), n.InputKey, calls)}, nil
}

func (g *graphBuilder) overWindow(n *Node, in stream.Executor) (*exec.OverWindow, error) {
	calls, err := overWindowCalls(n)
	if err != nil {
		return nil, err
	}
	policy, err := exec.ParseOverWindowCachePolicy(g.env.OverWindowCachePolicy)
	if err != nil {
		return nil, err
	}
	return exec.NewOverWindow(in, n.Window.PartitionBy, columnOrders(n.Window.OrderBy), n.InputKey, calls, g.newState(n, 0),
		exec.OverWindowOptions{Cache: policy, Strict: g.env.Strict, Log: g.env.Log, Location: g.env.Location})
}
