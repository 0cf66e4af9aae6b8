package exec

import (
	"testing"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// Values emits its rows once, right after the first barrier, and marks
// that in the same epoch; rebuilt on the committed marker it emits nothing.
func TestValuesEmitsOnceAcrossRebuild(t *testing.T) {
	h := newHarness(t)
	schema := []types.Type{types.Int64, types.Int64}
	var rows []types.Row
	for i := int64(0); i < 2*valuesChunk+5; i++ {
		rows = append(rows, types.Row{types.DInt64(i * 10), types.DInt64(i)})
	}
	table := h.table(ValuesStateSchema("v"))
	id := table.ID()
	barriers := make(chan *stream.Barrier, 4)
	v, err := NewValues(h.ctx, "v", 1, barriers, schema, rows, table)
	if err != nil {
		t.Fatal(err)
	}
	next := func(v *Values) stream.Message {
		t.Helper()
		m, err := v.Next(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	b1 := h.barrier()
	barriers <- b1
	if m := next(v); m.Barrier != b1 {
		t.Fatalf("first message %+v; want the first barrier (no rows before it)", m)
	}
	got := 0
	for got < len(rows) {
		m := next(v)
		if m.Chunk == nil {
			t.Fatalf("barrier after %d of %d rows", got, len(rows))
		}
		for i, r := range m.Chunk.Rows {
			if m.Chunk.Ops[i] != types.OpInsert || r[1].Int() != int64(got) {
				t.Fatalf("row %d: %s %v", got, m.Chunk.Ops[i], r)
			}
			got++
		}
	}
	b2 := h.barrier()
	barriers <- b2
	if m := next(v); m.Barrier != b2 {
		t.Fatalf("after the rows: %+v; want the second barrier", m)
	}
	h.commit(b2.Prev)

	// Rebuilt (recovery, restart): the marker is committed, nothing again.
	rebuilt, err := NewValues(h.ctx, "v", 2, barriers, schema, rows, state.New(id, ValuesStateSchema("v"), h.engine, h.epoch))
	if err != nil {
		t.Fatal(err)
	}
	b3, b4 := h.barrier(), h.barrier()
	barriers <- b3
	barriers <- b4
	if m := next(rebuilt); m.Barrier != b3 {
		t.Fatalf("rebuilt: %+v; want the barrier", m)
	}
	if m := next(rebuilt); m.Barrier != b4 {
		t.Fatalf("rebuilt emitted after the first barrier: %+v", m)
	}
}
