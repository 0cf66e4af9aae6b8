package streamplan

import (
	"slices"

	"github.com/runneldb/runnel/internal/sql/plan"
)

// GROUPING SETS, ROLLUP and CUBE (plan.Expand) become an OpExpand
// (exec.Expand) under the HashAgg: stateless, each row repeated once per
// set, keyed by the input's stream key and the set number. The HashAgg
// above groups by the NULLed keys and the set number, so a group of one
// set never meets a group of another even where their keys are all NULL,
// and the view's key (those columns) is unique though it holds NULLs.

// expand plans n. The input's physical row may carry hidden key columns
// after its logical ones: the NULLed keys and the set number go between
// the two, where n's parents expect them.
func (b *builder) expand(n *plan.Expand) (*Node, error) {
	in, err := b.build(n.Input)
	if err != nil {
		return nil, err
	}
	at := len(n.Input.Schema())
	m := len(n.Out) - at // the keys and the set number
	shift := func(cols []int) []int {
		out := slices.Clone(cols)
		for i, c := range out {
			if c >= at {
				out[i] = c + m
			}
		}
		return out
	}
	schema := slices.Clone(in.Schema[:at])
	schema = append(schema, n.Out[at:]...)
	schema = append(schema, in.Schema[at:]...)
	dist := in.Dist
	dist.Keys = shift(dist.Keys)
	return &Node{Op: OpExpand, Inputs: []*Node{in}, Schema: schema, Key: append(shift(in.Key), at+m-1), Dist: dist,
		Exprs: n.Keys, GroupingSets: n.Sets, ExpandAt: at}, nil
}
