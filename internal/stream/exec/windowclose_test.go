package exec

import (
	"context"
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/types"
)

// WindowClose emits a row once, with its latest value, when the watermark
// on its column passes it; changes before that only update the held row;
// late changes, NULL windows and other columns' watermarks change nothing;
// the watermark is forwarded after the rows it closed.
func TestWindowClose(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ts := []types.Type{types.Int64, types.Int64} // (window, value); key: window
	src := newSource("agg", ts...)
	w, err := NewWindowClose(src, 0, h.table(WindowCloseStateSchema("eowc", ts, 0, []int{0}, []int{0})))
	if err != nil {
		t.Fatal(err)
	}
	step := func(want []string, msgs ...stream.Message) {
		t.Helper()
		for _, m := range msgs {
			src.ch <- m
		}
		b := h.barrier()
		src.pushBarrier(b)
		var got []string
		for {
			m, err := w.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Barrier != nil {
				break
			}
			if m.Watermark != nil {
				got = append(got, m.Watermark.String())
				continue
			}
			got = append(got, changes([]*types.Chunk{m.Chunk})...)
		}
		h.commit(b.Prev)
		if !slices.Equal(got, want) {
			t.Fatalf("got %q; want %q", got, want)
		}
	}
	wm := func(col, v int) stream.Message {
		return stream.Message{Watermark: &stream.Watermark{Col: col, Val: types.DInt64(int64(v))}}
	}
	ch := func(items ...any) stream.Message { return stream.Message{Chunk: chunk(items...)} }

	step(nil, ch(types.OpInsert, row(0, 1), types.OpInsert, row(10, 5), types.OpInsert, row(nil, 7)))
	step(nil, ch(types.OpUpdateDelete, row(0, 1), types.OpUpdateInsert, row(0, 2)), wm(1, 100))
	step([]string{"+ (0, 2)", "watermark($0 ≥ 10)"}, wm(0, 5), wm(0, 10), ch(types.OpUpdateDelete, row(10, 5), types.OpUpdateInsert, row(10, 6)))
	// Late: a change to the emitted window 0 and a new row below 10.
	step(nil, ch(types.OpUpdateDelete, row(0, 2), types.OpUpdateInsert, row(0, 3), types.OpInsert, row(5, 1)), wm(0, 10))
	step(nil, ch(types.OpDelete, row(10, 6), types.OpInsert, row(20, 1)))
	step([]string{"+ (20, 1)", "watermark($0 ≥ 25)"}, ch(types.OpInsert, row(30, 1)), wm(0, 25))
}
