package streamplan

import (
	"slices"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// Set-returning functions over a relation's rows in a select list
// (SELECT id, generate_series(1, n) FROM t) become an OpProjectSet
// (exec.ProjectSet): each row expands to its series, stateless, keyed by
// the input's stream key and the row's ordinal in its expansion.

// projectSet plans n. The input's physical row may carry hidden key
// columns after its logical ones: the calls' columns go between the two,
// where n's parents expect them, and the ordinal goes last.
func (b *builder) projectSet(n *plan.ProjectSet) (*Node, error) {
	in, err := b.build(n.Input)
	if err != nil {
		return nil, err
	}
	for _, c := range n.Calls {
		if err := checkStreamable(c.Args...); err != nil {
			return nil, err
		}
	}
	at := len(n.Input.Schema())
	m := len(n.Out) - at // the calls and the ordinality column
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
	ord := len(schema)
	schema = append(schema, plan.Column{Name: "projected_row_id", Type: types.Int64, Hidden: true})
	dist := in.Dist
	dist.Keys = shift(dist.Keys)
	return &Node{Op: OpProjectSet, Inputs: []*Node{in}, Schema: schema, Key: append(shift(in.Key), ord), Dist: dist,
		SRFs: n.Calls, SRFAt: at, SRFOrdinality: n.Ordinality, SRFOuter: n.Outer}, nil
}
