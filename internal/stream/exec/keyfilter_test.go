package exec

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// A key filter never forgets a key (no false negatives) across its chain
// of growing filters, and its false-positive rate stays low.
func TestKeyFilter(t *testing.T) {
	f := newKeyFilter()
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte{0, 7}, uint64(i)*2654435761) }
	const n = 300_000
	for i := range n {
		if !f.add(key(i)) {
			t.Fatalf("filter full after %d keys", i)
		}
	}
	if len(f.filters) < 2 {
		t.Fatalf("%d filters for %d keys: the chain did not grow", len(f.filters), n)
	}
	for i := range n {
		if !f.mayContain(key(i)) {
			t.Fatalf("key %d added but reported absent", i)
		}
	}
	fp := 0
	for i := n; i < 2*n; i++ {
		if f.mayContain(key(i)) {
			fp++
		}
	}
	if rate := float64(fp) / n; rate > 0.01 {
		t.Fatalf("false-positive rate %.4f over %d filters", rate, len(f.filters))
	} else {
		t.Logf("false-positive rate %.4f over %d filters, %d bytes", rate, len(f.filters), f.bytes())
	}
	if newKeyFilter().mayContain(key(1)) {
		t.Fatal("empty filter contains a key")
	}
}

// A full filter reports every key as possibly present.
func TestKeyFilterFull(t *testing.T) {
	f := newKeyFilter()
	f.full = true
	if f.add([]byte("k")) || !f.mayContain([]byte("other")) {
		t.Fatal("a full filter must refuse keys and contain everything")
	}
}

// A fresh strict Materialize still fails on an insert of a key it stored
// in an earlier, committed epoch (the filter knows the key, so the read
// happens) and on a delete of a key it never stored (I6).
func TestMaterializeFreshStillChecks(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ts := []types.Type{types.Int64, types.Int64}
	for _, tc := range []struct {
		name string
		bad  *types.Chunk
	}{
		{"duplicate insert", chunk(types.OpInsert, row(1, 9))},
		{"delete of absent key", chunk(types.OpDelete, row(5, 1))},
	} {
		src := newSource("t", ts...)
		m := NewMaterialize(src, h.table(state.Schema{Name: "mv", Types: ts, PK: []int{0}, DistKey: []int{0}}), true, nil)
		m.SetFresh()
		src.push(chunk(types.OpInsert, row(1, 1), types.OpInsert, row(2, 2)))
		b := h.barrier()
		src.pushBarrier(b)
		drain(t, ctx, m, newView())
		h.commit(b.Prev)
		src.push(tc.bad)
		if _, err := m.Next(ctx); err == nil || !strings.Contains(err.Error(), "mv") {
			t.Fatalf("%s: got %v, want a consistency error naming the view", tc.name, err)
		}
	}
}
