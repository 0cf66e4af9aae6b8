package plan

// EmitOnWindowClose marks a materialized view's plan as emitting each row
// only once its window has closed (RisingWave's EMIT ON WINDOW CLOSE): the
// row is final when the watermark passes it, and the view only grows. Only
// the stream planner reads it; it is the root of a CreateView's plan.
type EmitOnWindowClose struct {
	Input Node
}

func (n *EmitOnWindowClose) Schema() Schema   { return n.Input.Schema() }
func (n *EmitOnWindowClose) Children() []Node { return []Node{n.Input} }
func (n *EmitOnWindowClose) Describe() string { return "EmitOnWindowClose" }
