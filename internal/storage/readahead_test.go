package storage

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/runneldb/runnel/internal/objstore"
)

// rangeCounter counts the ranged reads of SST objects and their bytes.
type rangeCounter struct {
	objstore.Store
	gets, bytes atomic.Int64
}

func (c *rangeCounter) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	c.gets.Add(1)
	c.bytes.Add(n)
	return c.Store.GetRange(ctx, key, off, n)
}

// A scan through an SST fetches it in a few growing read-ahead reads, not
// one GET per 16 KiB block, and returns the same entries; a point read
// still fetches only its block. Without the read-ahead the scan makes one
// GET per data block (~150 here).
func TestScanReadAhead(t *testing.T) {
	ctx := context.Background()
	store := &rangeCounter{Store: objstore.NewMem()}
	e := openEngine(t, store, openMeta(t), uploadOnly)
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	const n = 20000
	// Incompressible values, so that the SST has many blocks.
	val := func(i int) []byte {
		r := rand.New(rand.NewPCG(uint64(i), 1))
		b := make([]byte, 100)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return b
	}
	var kvs []KV
	for i := range n {
		kvs = append(kvs, KV{Key: k(i), Value: val(i)})
	}
	if err := e.Ingest(1, 1, kvs); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if st.Levels[0].SSTs != 1 || st.Levels[0].Bytes < 1<<20 {
		t.Fatalf("want one SST of over 1 MiB, have %+v", st.Levels[0])
	}
	// A point read: one data block (besides opening the reader).
	if _, _, err := e.Get(ctx, 1, k(n/2), 1, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	g0, b0 := store.gets.Load(), store.bytes.Load()
	if v, ok, err := e.Get(ctx, 1, k(n/3), 1, ReadOptions{}); err != nil || !ok || !bytes.Equal(v, val(n/3)) {
		t.Fatalf("get: %q %v %v", v, ok, err)
	}
	if g, b := store.gets.Load()-g0, store.bytes.Load()-b0; g > 1 || b >= readAheadMin {
		t.Errorf("a point read fetched %d bytes in %d reads, want one block", b, g)
	}
	g0 = store.gets.Load()
	it, err := e.Iter(ctx, 1, nil, nil, 1, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for it.Next() {
		if !bytes.Equal(it.Key(), k(i)) || !bytes.Equal(it.Value(), val(i)) {
			t.Fatalf("entry %d: %q = %q", i, it.Key(), it.Value())
		}
		i++
	}
	if err := it.Err(); err != nil || i != n {
		t.Fatalf("scan: %d entries, err %v", i, err)
	}
	it.Close()
	gets := store.gets.Load() - g0
	blocks := int64(st.Levels[0].Bytes) / (16 << 10)
	t.Logf("scan of %d bytes (~%d blocks): %d reads", st.Levels[0].Bytes, blocks, gets)
	if gets > blocks/4 {
		t.Errorf("scan made %d object reads for ~%d blocks, want read-ahead (at most a quarter)", gets, blocks)
	}
}
