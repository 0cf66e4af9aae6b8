package streamplan

import (
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql/plan"
)

// SinkSpec is what planning a sink needs beyond its query.
type SinkSpec struct {
	// Key lists the output columns the target is keyed by (an upsert
	// sink's primary_key); empty: the query's stream key.
	Key []int
	// AppendOnly keeps only inserts (an append-only sink).
	AppendOnly bool
}

// BuildSink turns a sink's query into a stream plan ending in a Sink node
// that writes the sink's log store. The Sink's actors are distributed by
// spec.Key (else the stream key) so that every change of one target row is
// written, in order, by one actor: the worker applies an epoch's changes
// writer by writer, and the last change of a key wins.
func BuildSink(root plan.Node, spec SinkSpec) (*Node, error) {
	b := &builder{}
	n, err := b.build(root)
	if err != nil {
		return nil, err
	}
	fuseHopWindowProjects(n) // see timewindow.go
	key := spec.Key
	if len(key) == 0 {
		key = n.Key
	}
	var in *Node
	switch {
	case n.Dist.Kind == DistSingle || len(key) == 0:
		in = exchange(n, Dist{Kind: DistSingle})
	case n.Dist.Kind == DistHash && subset(n.Dist.Keys, key):
		in = n // the rows of one key are in one actor already
	default:
		in = exchange(n, Dist{Kind: DistHash, Keys: key})
	}
	return &Node{Op: OpSink, Inputs: []*Node{in}, Schema: n.Schema, Key: n.Key, Dist: in.Dist, SinkAppendOnly: spec.AppendOnly}, nil
}

// InsertOnly reports whether a planned sink's input only ever inserts:
// connector sources and constants (appendOnly), or scans of append-only
// tables, through filters, projections, exchanges, UNION ALL and hop
// windows. An append-only sink over anything else needs
// force_append_only (its deletes are then dropped).
func InsertOnly(n *Node) bool {
	switch n.Op {
	case OpSink:
		return InsertOnly(n.Inputs[0])
	case OpScan:
		return n.Rel.AppendOnly && (n.Rel.Kind == catalog.KindTable || n.Rel.Kind == catalog.KindSource)
	case OpSource, OpValues, OpWindowClose:
		return true
	case OpTemporalJoin:
		// Over an insert-only input it emits inserts only.
		return n.TemporalJoin.AppendOnly
	case OpFilter, OpProject, OpExchange, OpUnionAll, OpHopWindow, OpProjectSet, OpExpand:
		for _, c := range n.Inputs {
			if !InsertOnly(c) {
				return false
			}
		}
		return true
	}
	return false
}
