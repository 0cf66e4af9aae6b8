package state

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/storage"
)

// Bulk writes: a statement that inserts many rows (COPY, multi-row INSERT,
// INSERT ... SELECT) hands them over already encoded and sorted, and they
// go to the engine as one sorted run instead of one memtable insert per
// row (exec/tablebulk.go).

// IngestSorted writes kvs (keys as EncodeKey gives them, sorted, unique;
// values as AppendValueRow gives them) into the engine at the table's
// epoch, as one run. The memtable's writes of the epoch go first, as an
// older run of the same epoch, so that a write the memtable holds cannot
// shadow a newer one of kvs when it is handed over at the barrier (among
// runs of one epoch the engine lets the later arrival win).
//
// The run is uncommitted data like a barrier's hand-over: visible to this
// table's reads (at its epoch) at once, durable only when the epoch commits
// (I7), discarded whole by a recovery before that. An error may leave the
// run buffered (a failed spill does): the caller must then fail the actor,
// whose recovery discards the epoch, as it does when CommitContext fails.
func (t *Table) IngestSorted(ctx context.Context, kvs []storage.KV) error {
	if len(kvs) == 0 {
		return nil
	}
	if err := t.handOver(ctx); err != nil {
		return err
	}
	if err := t.store.IngestContext(ctx, t.epoch, t.id, kvs); err != nil {
		return fmt.Errorf("%s: ingest epoch %d: %w", t.schema.Name, t.epoch, err)
	}
	return nil
}

// handOver moves the memtable's and the write log's writes into the
// engine at the table's epoch: mem and the sorted log merged, the log's
// write winning a key both hold (it is newer). If the engine refuses them
// the table keeps them, as mem did.
func (t *Table) handOver(ctx context.Context) error {
	if t.mem.Len() == 0 && len(t.log) == 0 {
		return nil
	}
	logged := make([]memEntry, 0, len(t.log))
	t.drainLog(func(e memEntry) { logged = append(logged, e) })
	kvs := make([]storage.KV, 0, t.mem.Len()+len(logged))
	add := func(e memEntry) {
		kvs = append(kvs, storage.KV{Key: []byte(e.key), Value: e.value, Delete: e.delete})
	}
	rest := logged
	t.mem.Ascend(func(e memEntry) bool {
		for len(rest) > 0 && rest[0].key < e.key {
			add(rest[0])
			rest = rest[1:]
		}
		if len(rest) > 0 && rest[0].key == e.key {
			return true // the log's write wins
		}
		add(e)
		return true
	})
	for _, e := range rest {
		add(e)
	}
	if err := t.store.IngestContext(ctx, t.epoch, t.id, kvs); err != nil {
		for _, e := range logged {
			t.mem.ReplaceOrInsert(e)
		}
		return fmt.Errorf("%s: ingest epoch %d: %w", t.schema.Name, t.epoch, err)
	}
	t.mem.Clear(false)
	return nil
}

// HasRowIn reports whether the table holds a row (at its epoch, memtable
// included) whose key is in [lo, hi]: one seek instead of a point read per
// key when a bulk insert checks that its keys are new.
func (t *Table) HasRowIn(ctx context.Context, lo, hi []byte) (bool, error) {
	upper := append(append(make([]byte, 0, len(hi)+1), hi...), 0) // the smallest key after hi
	it, err := t.rangeIter(ctx, lo, upper, false)
	if err != nil {
		return false, err
	}
	defer it.Close()
	found := it.Next()
	return found, it.Err()
}
