package streamplan

import (
	"fmt"
	"slices"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// HopSpec is an OpHopWindow's window: the input column holding the time,
// and slide, size and offset in microseconds (see plan.HopWindow).
type HopSpec struct {
	TimeCol             int
	Slide, Size, Offset int64
}

// hopWindow plans HOP: a stateless expansion that keeps its input's
// distribution (the input columns keep their positions) and extends the
// stream key with window_start, since one input row becomes a row per
// window. Its output is the logical input columns, window_start,
// window_end, then the input's hidden key columns (projected behind, so
// that the logical schema stays a prefix of the physical one).
func (b *builder) hopWindow(n *plan.HopWindow) (*Node, error) {
	in, err := b.build(n.Input)
	if err != nil {
		return nil, err
	}
	nIn := len(n.Input.Schema())
	// The executor appends window_start/window_end after every physical
	// input column; reorder so that the logical columns come first.
	schema := append(slices.Clone(in.Schema), n.Out[nIn], n.Out[nIn+1])
	hop := &Node{Op: OpHopWindow, Inputs: []*Node{in}, Schema: schema, Dist: in.Dist,
		Hop: &HopSpec{TimeCol: n.TimeCol, Slide: n.Slide, Size: n.Size, Offset: n.Offset}}
	start := len(in.Schema)
	hop.Key = append(slices.Clone(in.Key), start)
	if len(in.Schema) == nIn {
		return hop, nil
	}
	// Hidden input columns sit between the logical ones and the window
	// bounds: move them behind.
	cols := append(seq(0, nIn), start, start+1)
	return b.project(hop, colRefs(hop, cols), n.Out), nil
}

// fuseHopWindowProjects merges every projection reading a hop window
// into it: the executor then evaluates the projection over each window of
// an input row without materializing the expanded row (see
// exec.HopWindow). The merged node keeps the projection's schema, key and
// distribution; Exprs set on an OpHopWindow means "then project".
func fuseHopWindowProjects(n *Node) {
	for _, c := range n.Inputs {
		fuseHopWindowProjects(c)
	}
	if n.Op != OpProject || len(n.Inputs) != 1 {
		return
	}
	hop := n.Inputs[0]
	if hop.Op != OpHopWindow || hop.Exprs != nil {
		return
	}
	n.Op, n.Hop, n.Inputs = OpHopWindow, hop.Hop, hop.Inputs
}

func (g *graphBuilder) hopWindow(n *Node, in stream.Executor) (stream.Executor, error) {
	h := n.Hop
	var ex stream.Executor
	var err error
	if n.Exprs != nil {
		ex, err = exec.NewHopWindowProject(in, h.TimeCol, h.Slide, h.Size, h.Offset, n.Exprs, g.env.Location)
	} else {
		ex, err = exec.NewHopWindow(in, h.TimeCol, h.Slide, h.Size, h.Offset)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.env.Name, err)
	}
	return ex, nil
}
