package stream

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/runneldb/runnel/internal/types"
)

// HashDispatcher routes each row to the downstream actor owning the row's
// vnode (types.Vnode over the distribution key): the exchange in front of
// a hash-partitioned fragment (aggregation by group key, join by join
// key). Barriers go to every output.
//
// An update pair whose halves hash to different actors is split into a
// delete for the old row's owner and an insert for the new row's owner;
// otherwise it stays a pair.
//
// Outputs: the dispatcher knows the owner of every vnode (an actor id).
// AddOutputs mutations addressed to Upstream connect the channels of the
// actors it routes to (entries for other actors are left to the actor's
// other dispatchers); Stop removes stopped actors after they got the
// barrier. Before any output is connected (a fragment created at a later
// barrier) rows are dropped, as a BroadcastDispatcher with no outputs
// does; once connected, a row whose owner has no channel is an error.
type HashDispatcher struct {
	Upstream ActorID
	distKey  []int
	owner    [types.VnodeCount]ActorID

	mu      sync.Mutex
	outputs []Output
	index   map[ActorID]int // position in outputs
	parts   []types.Chunk
}

// NewHashDispatcher returns a dispatcher for upstream actor upstream.
// owners[v] is the actor owning vnode v (len(owners) == types.VnodeCount).
func NewHashDispatcher(upstream ActorID, distKey []int, owners []ActorID, outputs []Output) (*HashDispatcher, error) {
	if len(owners) != types.VnodeCount {
		return nil, fmt.Errorf("hash dispatcher: %d vnode owners; want %d", len(owners), types.VnodeCount)
	}
	d := &HashDispatcher{Upstream: upstream, distKey: distKey, index: map[ActorID]int{}}
	copy(d.owner[:], owners)
	for _, o := range outputs {
		if err := d.addLocked(o); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func (d *HashDispatcher) routes(a ActorID) bool {
	for _, o := range d.owner {
		if o == a {
			return true
		}
	}
	return false
}

func (d *HashDispatcher) addLocked(o Output) error {
	if !d.routes(o.Actor) {
		return fmt.Errorf("hash dispatcher of actor %d: actor %d owns no vnode", d.Upstream, o.Actor)
	}
	if _, dup := d.index[o.Actor]; dup {
		return fmt.Errorf("hash dispatcher of actor %d: actor %d connected twice", d.Upstream, o.Actor)
	}
	d.index[o.Actor] = len(d.outputs)
	d.outputs = append(d.outputs, o)
	return nil
}

func (d *HashDispatcher) reindexLocked() {
	clear(d.index)
	for i, o := range d.outputs {
		d.index[o.Actor] = i
	}
}

// Dispatch routes a chunk by vnode or broadcasts a barrier or a
// watermark (every downstream actor may hold rows below it).
func (d *HashDispatcher) Dispatch(ctx context.Context, msg Message) error {
	if msg.Barrier != nil {
		return d.dispatchBarrier(ctx, msg)
	}
	if msg.Watermark != nil {
		d.mu.Lock()
		outs := append([]Output(nil), d.outputs...)
		d.mu.Unlock()
		for _, o := range outs {
			if err := send(ctx, o.Ch, msg); err != nil {
				return err
			}
		}
		return nil
	}
	d.mu.Lock()
	if len(d.outputs) == 0 {
		d.mu.Unlock()
		return nil
	}
	outs := append([]Output(nil), d.outputs...)
	if cap(d.parts) < len(outs) {
		d.parts = make([]types.Chunk, len(outs))
	}
	parts := d.parts[:len(outs)]
	for i := range parts {
		parts[i] = types.Chunk{}
	}
	c := msg.Chunk
	target := func(row types.Row) (int, error) {
		v := types.Vnode(row, d.distKey)
		i, ok := d.index[d.owner[v]]
		if !ok {
			return 0, fmt.Errorf("hash dispatcher of actor %d: vnode %d belongs to actor %d, which is not connected", d.Upstream, v, d.owner[v])
		}
		return i, nil
	}
	for i := 0; i < c.Len(); i++ {
		if i&255 == 255 {
			if err := ctx.Err(); err != nil {
				d.mu.Unlock()
				return err
			}
		}
		op, row := c.Ops[i], c.Rows[i]
		t, err := target(row)
		if err != nil {
			d.mu.Unlock()
			return err
		}
		if op == types.OpUpdateDelete && i+1 < c.Len() && c.Ops[i+1] == types.OpUpdateInsert {
			next := c.Rows[i+1]
			t2, err := target(next)
			if err != nil {
				d.mu.Unlock()
				return err
			}
			if t == t2 {
				parts[t].Append(types.OpUpdateDelete, row)
				parts[t].Append(types.OpUpdateInsert, next)
			} else {
				parts[t].Append(types.OpDelete, row)
				parts[t2].Append(types.OpInsert, next)
			}
			i++
			continue
		}
		parts[t].Append(op, row)
	}
	chunks := make([]*types.Chunk, len(parts))
	for i := range parts {
		if parts[i].Len() > 0 {
			p := parts[i]
			chunks[i] = &p
		}
	}
	d.mu.Unlock()
	for i, o := range outs {
		if chunks[i] == nil {
			continue
		}
		if err := send(ctx, o.Ch, Message{Chunk: chunks[i]}); err != nil {
			return err
		}
	}
	return nil
}

func (d *HashDispatcher) dispatchBarrier(ctx context.Context, msg Message) error {
	mut := msg.Barrier.Mutation
	d.mu.Lock()
	if mut != nil {
		for _, o := range mut.AddOutputs[d.Upstream] {
			if !d.routes(o.Actor) {
				continue // another dispatcher's output
			}
			if err := d.addLocked(o); err != nil {
				d.mu.Unlock()
				return err
			}
		}
	}
	outs := append([]Output(nil), d.outputs...)
	d.mu.Unlock()
	for _, o := range outs {
		if err := send(ctx, o.Ch, msg); err != nil {
			return err
		}
	}
	if mut != nil && len(mut.Stop) > 0 {
		d.mu.Lock()
		kept := d.outputs[:0]
		for _, o := range d.outputs {
			if !mut.Stop[o.Actor] {
				kept = append(kept, o)
			}
		}
		d.outputs = kept
		d.reindexLocked()
		d.mu.Unlock()
	}
	return nil
}

// RemoveOutput drops the output to actor id (recovery, outside barriers).
func (d *HashDispatcher) RemoveOutput(id ActorID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.outputs[:0]
	for _, o := range d.outputs {
		if o.Actor != id {
			kept = append(kept, o)
		}
	}
	d.outputs = kept
	d.reindexLocked()
}

// VnodeOwners spreads the vnodes over actors in contiguous ranges, the
// usual assignment for a fragment of len(actors) parallel actors.
func VnodeOwners(actors []ActorID) []ActorID {
	owners := make([]ActorID, types.VnodeCount)
	for v := range owners {
		owners[v] = actors[v*len(actors)/types.VnodeCount]
	}
	return owners
}

// Merge is the receiving end of an exchange: it reads N upstream channels
// and aligns their barriers. Chunks are returned as they arrive; an
// upstream that delivered a barrier is not read again until every
// upstream delivered it (nothing is buffered: its channel just fills and
// back-pressures that upstream); then the barrier is returned once.
// Watermarks are not aligned: per column, the minimum over the upstreams
// is returned whenever it advances (WatermarkMerger).
type Merge struct {
	actor  ActorID
	schema []types.Type
	inputs []<-chan Message

	blocked  []bool
	nBlocked int
	barrier  *Barrier
	stopped  bool
	cases    []reflect.SelectCase
	caseIdx  []int
	wm       *WatermarkMerger
}

// NewMerge returns the merge executor of actor reading inputs, whose
// rows have types schema.
func NewMerge(actor ActorID, schema []types.Type, inputs []<-chan Message) *Merge {
	return &Merge{actor: actor, schema: schema, inputs: inputs, blocked: make([]bool, len(inputs)),
		wm: NewWatermarkMerger(len(inputs))}
}

func (m *Merge) Schema() []types.Type { return m.schema }
func (m *Merge) Identity() string {
	return fmt.Sprintf("Merge(actor %d, %d upstreams)", m.actor, len(m.inputs))
}

// Next returns the next chunk from any unblocked upstream, or the aligned
// barrier.
func (m *Merge) Next(ctx context.Context) (Message, error) {
	if m.stopped {
		return Message{}, ErrStopped
	}
	if len(m.inputs) == 0 {
		return Message{}, fmt.Errorf("%s: no upstreams", m.Identity())
	}
	for {
		var i int
		var msg Message
		var ok bool
		if len(m.inputs) == 1 {
			select {
			case msg, ok = <-m.inputs[0]:
			default:
				m.reportWait(ctx)
				select {
				case msg, ok = <-m.inputs[0]:
				case <-ctx.Done():
					return Message{}, ctx.Err()
				}
			}
		} else {
			m.cases = m.cases[:0]
			m.caseIdx = m.caseIdx[:0]
			for j, in := range m.inputs {
				if !m.blocked[j] {
					m.cases = append(m.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(in)})
					m.caseIdx = append(m.caseIdx, j)
				}
			}
			// Try without blocking first: only an actual wait is reported.
			m.cases = append(m.cases, reflect.SelectCase{Dir: reflect.SelectDefault})
			chosen, v, recvOK := reflect.Select(m.cases)
			if chosen == len(m.cases)-1 {
				m.reportWait(ctx)
				m.cases[len(m.cases)-1] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
				chosen, v, recvOK = reflect.Select(m.cases)
				if chosen == len(m.cases)-1 {
					return Message{}, ctx.Err()
				}
			}
			i, ok = m.caseIdx[chosen], recvOK
			if ok {
				msg = v.Interface().(Message)
			}
		}
		if !ok {
			return Message{}, fmt.Errorf("%s: upstream %d closed its channel", m.Identity(), i)
		}
		if msg.Chunk != nil {
			reportInput(ctx, msg.Chunk.Len())
			return msg, nil
		}
		if msg.Watermark != nil {
			if w := m.wm.Add(i, msg.Watermark); w != nil {
				return Message{Watermark: w}, nil
			}
			continue
		}
		b := msg.Barrier
		if b == nil {
			return Message{}, fmt.Errorf("%s: empty message from upstream %d", m.Identity(), i)
		}
		if m.barrier == nil {
			m.barrier = b
		} else if m.barrier.Curr != b.Curr || m.barrier.Prev != b.Prev {
			return Message{}, fmt.Errorf("%s: upstream %d delivered %s while aligning %s", m.Identity(), i, b, m.barrier)
		}
		m.blocked[i] = true
		m.nBlocked++
		if m.nBlocked < len(m.inputs) {
			continue
		}
		out := m.barrier
		m.barrier = nil
		m.nBlocked = 0
		clear(m.blocked)
		if out.StopsActor(m.actor) {
			m.stopped = true
		}
		ReportState(ctx, &StateBarrier)
		return Message{Barrier: out}, nil
	}
}

// reportWait reports the actor blocked on this merge: aligning when some
// upstreams already delivered the barrier, waiting for input otherwise.
func (m *Merge) reportWait(ctx context.Context) {
	if m.nBlocked > 0 {
		ReportState(ctx, &StateAligning)
	} else {
		ReportState(ctx, &StateWaitingInput)
	}
}
