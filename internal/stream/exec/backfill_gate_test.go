package exec

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// A HashAgg behind a new job's backfill keeps its groups in memory while
// the backfill reads (the barriers in between emit nothing) and emits each
// group once, with its final value, at the first barrier after the last
// snapshot batch — the barrier that publishes the job. Upstream changes
// made during the backfill, on both sides of its position, are in that
// output exactly once. Without the gate every barrier would emit; without
// the flush at the gate's opening the last barrier would emit nothing.
func TestHashAggBackfillGate(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const rows = 3 * backfillBatch
	vt := &versionedTable{versions: map[string][]version{}}
	cur := map[string]int64{}
	for i := 0; i < rows; i++ {
		k := fmt.Sprintf("k%05d", i)
		cur[k] = int64(i)
		vt.set(k, 1, int64(i), true)
	}
	up := make(chan stream.Message, 64)
	schema := []types.Type{types.Varchar, types.Int64}
	bf := NewBackfill("gate test", 1, schema, up, vt.reader(), func(r types.Row) []byte { return []byte(r[0].Str()) })
	gate := NewBackfillGate()
	gate.Track(bf)

	// group by v % 10 (a projection the planner would add), count and sum.
	proj := &mapExec{in: bf, schema: []types.Type{types.Varchar, types.Int64, types.Int64}, fn: func(r types.Row) types.Row {
		return types.Row{r[0], r[1], types.DInt64(r[1].Int() % 10)}
	}}
	calls := []AggCall{
		{Agg: mustAgg(t, "count", false), Filter: NoColumn},
		{Agg: mustAgg(t, "sum", false, types.Int64), Args: []int{1}, Filter: NoColumn},
	}
	res, per, err := HashAggStateSchemas("gate", proj.schema, []int{2}, calls, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	agg, err := NewHashAgg(proj, []int{2}, calls, []int{0}, h.table(res), h.tables(per))
	if err != nil {
		t.Fatal(err)
	}
	agg.SetBackfillGate(gate)

	change := func(epoch uint64, k string, nv int64) {
		c := &types.Chunk{}
		c.Append(types.OpUpdateDelete, types.Row{types.DVarchar(k), types.DInt64(cur[k])})
		c.Append(types.OpUpdateInsert, types.Row{types.DVarchar(k), types.DInt64(nv)})
		cur[k] = nv
		vt.set(k, epoch, nv, true)
		up <- stream.Message{Chunk: c}
	}
	// After the first batch: one change behind the backfill's position
	// (forwarded) and one ahead of it (read later by the snapshot), then a
	// barrier. After the last batch: the barrier that publishes the job.
	remove := SetBackfillHook(func(ctx context.Context, executor string, n int64) {
		if executor != bf.Identity() {
			return
		}
		switch n {
		case backfillBatch:
			change(3, "k00007", 1000)
			change(3, "k01500", 2000)
			up <- stream.Message{Barrier: h.barrier()}
		case rows:
			up <- stream.Message{Barrier: h.barrier()}
		}
	})
	defer remove()

	v := newView()
	up <- stream.Message{Barrier: h.barrier()} // connects the job
	for i, what := range []string{"the connecting barrier", "a barrier during the backfill"} {
		got, _ := drain(t, ctx, agg, v)
		if len(got) != 0 || !gate.Backfilling() {
			t.Fatalf("barrier %d (%s): got %v, backfilling %v; want no output while backfilling", i+1, what, changes(got), gate.Backfilling())
		}
	}
	got, _ := drain(t, ctx, agg, v)
	if gate.Backfilling() {
		t.Fatal("gate still closed after the last batch")
	}
	want := map[int64][2]int64{}
	for _, val := range cur {
		s := want[val%10]
		want[val%10] = [2]int64{s[0] + 1, s[1] + val}
	}
	var wantRows []string
	for g, s := range want {
		wantRows = append(wantRows, fmt.Sprintf("+ (%d, %d, %d)", g, s[0], s[1]))
	}
	gotRows := changes(got)
	slices.Sort(gotRows)
	slices.Sort(wantRows)
	if !slices.Equal(gotRows, wantRows) {
		t.Fatalf("publishing barrier: %s", diffRows(gotRows, wantRows))
	}
}

// mapExec applies fn to every row of its input (a stateless projection).
type mapExec struct {
	in     stream.Executor
	schema []types.Type
	fn     func(types.Row) types.Row
}

func (m *mapExec) Schema() []types.Type { return m.schema }
func (m *mapExec) Identity() string     { return "Map" }
func (m *mapExec) Next(ctx context.Context) (stream.Message, error) {
	msg, err := m.in.Next(ctx)
	if err != nil || msg.Chunk == nil {
		return msg, err
	}
	out := &types.Chunk{Ops: msg.Chunk.Ops, Rows: make([]types.Row, len(msg.Chunk.Rows))}
	for i, r := range msg.Chunk.Rows {
		out.Rows[i] = m.fn(r)
	}
	return stream.Message{Chunk: out}, nil
}
