package stream

import (
	"context"
	"testing"

	"github.com/runneldb/runnel/internal/types"
)

func irow(vals ...int64) types.Row {
	r := make(types.Row, len(vals))
	for i, v := range vals {
		r[i] = types.DInt64(v)
	}
	return r
}

func TestHashDispatcherRoutesByVnode(t *testing.T) {
	ctx := context.Background()
	a, b := make(chan Message, 16), make(chan Message, 16)
	owners := VnodeOwners([]ActorID{10, 11})
	d, err := NewHashDispatcher(1, []int{0}, owners, []Output{{Actor: 10, Ch: a}, {Actor: 11, Ch: b}})
	if err != nil {
		t.Fatal(err)
	}
	owner := func(r types.Row) ActorID { return owners[types.Vnode(r, []int{0})] }
	// Find two keys owned by different actors.
	var k1, k2 int64
	for k2 = 1; owner(irow(k2)) == owner(irow(k1)); k2++ {
	}
	c := &types.Chunk{}
	for k := int64(0); k < 50; k++ {
		c.Append(types.OpInsert, irow(k, k))
	}
	c.Append(types.OpUpdateDelete, irow(k1, 1))
	c.Append(types.OpUpdateInsert, irow(k1, 2)) // same owner: stays a pair
	c.Append(types.OpUpdateDelete, irow(k1, 3))
	c.Append(types.OpUpdateInsert, irow(k2, 3)) // moves: delete + insert
	if err := d.Dispatch(ctx, Message{Chunk: c}); err != nil {
		t.Fatal(err)
	}
	got := map[ActorID]*types.Chunk{}
	for id, ch := range map[ActorID]chan Message{10: a, 11: b} {
		m := <-ch
		got[id] = m.Chunk
		for i, r := range m.Chunk.Rows {
			if owner(r) != id {
				t.Fatalf("row %s (op %s) went to actor %d; owner is %d", r, m.Chunk.Ops[i], id, owner(r))
			}
		}
	}
	if n := got[10].Len() + got[11].Len(); n != c.Len() {
		t.Fatalf("%d rows dispatched; want %d", n, c.Len())
	}
	o1 := got[owner(irow(k1))]
	n := o1.Len()
	if o1.Ops[n-3] != types.OpUpdateDelete || o1.Ops[n-2] != types.OpUpdateInsert || o1.Ops[n-1] != types.OpDelete {
		t.Fatalf("owner of k1 got ops %v; want ... U- U+ -", o1.Ops[n-3:])
	}
	o2 := got[owner(irow(k2))]
	if o2.Ops[o2.Len()-1] != types.OpInsert {
		t.Fatalf("owner of k2 last op %v; want +", o2.Ops[o2.Len()-1])
	}

	// Barriers reach every output; Stop removes the stopped actor after it
	// got the barrier; AddOutputs connects a new owner.
	b1 := &Barrier{Prev: 1, Curr: 2, Mutation: &Mutation{Stop: map[ActorID]bool{11: true}}}
	if err := d.Dispatch(ctx, Message{Barrier: b1}); err != nil {
		t.Fatal(err)
	}
	if (<-a).Barrier != b1 || (<-b).Barrier != b1 {
		t.Fatal("barrier not broadcast")
	}
	if err := d.Dispatch(ctx, Message{Chunk: &types.Chunk{Ops: []types.Op{types.OpInsert}, Rows: []types.Row{irow(k2)}}}); err == nil {
		t.Fatal("row for a disconnected owner: no error")
	}
	c2 := make(chan Message, 4)
	b2 := &Barrier{Prev: 2, Curr: 3, Mutation: &Mutation{AddOutputs: map[ActorID][]Output{1: {{Actor: 11, Ch: c2}, {Actor: 99, Ch: make(chan Message, 1)}}}}}
	if err := d.Dispatch(ctx, Message{Barrier: b2}); err != nil {
		t.Fatal(err)
	}
	<-a
	if (<-c2).Barrier != b2 {
		t.Fatal("new output did not get the barrier that connected it")
	}
	if err := d.Dispatch(ctx, Message{Chunk: &types.Chunk{Ops: []types.Op{types.OpInsert}, Rows: []types.Row{irow(k2)}}}); err != nil {
		t.Fatal(err)
	}
	if m := <-c2; m.Chunk == nil || m.Chunk.Len() != 1 {
		t.Fatalf("reconnected owner got %v", m)
	}
}

func TestMergeAlignsBarriers(t *testing.T) {
	ctx := context.Background()
	a, b := make(chan Message, 16), make(chan Message, 16)
	m := NewMerge(5, []types.Type{types.Int64}, []<-chan Message{a, b})
	b1 := &Barrier{Prev: 1, Curr: 2}
	chunkOf := func(v int64) Message {
		return Message{Chunk: &types.Chunk{Ops: []types.Op{types.OpInsert}, Rows: []types.Row{irow(v)}}}
	}
	a <- chunkOf(1)
	a <- Message{Barrier: b1}
	a <- chunkOf(2) // epoch 2: must not pass before b's barrier
	b <- chunkOf(3)
	var before []int64
	for {
		msg, err := m.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Barrier != nil {
			t.Fatal("barrier before b delivered it")
		}
		before = append(before, msg.Chunk.Rows[0][0].Int())
		if len(before) == 2 {
			break
		}
	}
	b <- Message{Barrier: b1}
	msg, err := m.Next(ctx)
	if err != nil || msg.Barrier != b1 {
		t.Fatalf("got %v, %v; want the aligned barrier (chunks before: %v)", msg, err, before)
	}
	for _, v := range before {
		if v == 2 {
			t.Fatal("a chunk after a's barrier passed before alignment")
		}
	}
	msg, err = m.Next(ctx)
	if err != nil || msg.Chunk == nil || msg.Chunk.Rows[0][0].Int() != 2 {
		t.Fatalf("after barrier got %v, %v", msg, err)
	}
	stop := &Barrier{Prev: 2, Curr: 3, Mutation: &Mutation{Stop: map[ActorID]bool{5: true}}}
	a <- Message{Barrier: stop}
	b <- Message{Barrier: stop}
	if msg, err := m.Next(ctx); err != nil || msg.Barrier != stop {
		t.Fatalf("stop barrier: %v, %v", msg, err)
	}
	if _, err := m.Next(ctx); err != ErrStopped {
		t.Fatalf("after stop: %v; want ErrStopped", err)
	}
	// Misaligned barriers are an error.
	m2 := NewMerge(6, nil, []<-chan Message{a, b})
	a <- Message{Barrier: &Barrier{Prev: 3, Curr: 4}}
	b <- Message{Barrier: &Barrier{Prev: 4, Curr: 5}}
	if _, err := m2.Next(ctx); err == nil {
		t.Fatal("misaligned barriers: no error")
	}
}
