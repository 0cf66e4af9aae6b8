package exec

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"sync"

	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// Bulk insert: the path of COPY, multi-row INSERT and INSERT ... SELECT.
//
// A statement inserting many rows into a table would otherwise cost, per
// row and inside the table's actor: a key encoding, a storage point read
// (is the key taken?), an overlay map entry, a memtable B-tree insert with
// a value encoding, and at the barrier a copy into the engine's run. The
// bulk path splits that work:
//
//  1. Outside the actor (the session's goroutine, EncodeInsertBatch), the
//     rows' keys and values are encoded in parallel, one arena per worker,
//     sorted, and merged; two rows with the same key are a unique
//     violation (23505) before the actor is involved.
//  2. In the actor (TableWriter.InsertBatch), the keys are checked new
//     with a few range seeks instead of a point read per key: one over the
//     batch's whole key range, then, if the table has rows in it, one per
//     vnode group of the batch; only a group whose range holds rows falls
//     back to point reads. A table without a declared key needs none: its
//     generated _row_ids are unique by construction.
//  3. When the statement applies (TableWriter.commit), the sorted batch
//     goes to the engine as one run at the table's epoch
//     (state.Table.IngestSorted), with no memtable in between; the engine
//     spills runs to SSTs owned by upload job records (I1) when its buffer
//     fills and merges them into L0 SSTs at the epoch's commit.
//
// The change stream is the same as the row-at-a-time path's: one insert
// per row, in statement order, so materialized views and sinks downstream
// see every row.
//
// Invariants: the run is uncommitted data of the actor's current epoch, as
// a barrier's hand-over is, so a crash or recovery before the epoch
// commits discards the whole statement (nothing half-visible, I7), and
// what a spill uploaded is owned by its job record until a commit adopts
// it or recovery aborts it (nothing leaked, I1/I2); an actor abandoned by
// a recovery cannot add a run afterwards (Engine.FenceWritesBelow, I3).

// bulkEncodeChunk is the least rows a parallel encoder takes: below it the
// goroutine costs more than it saves.
const bulkEncodeChunk = 4096

// bulkGroupProbeMin is the least keys of one vnode group checked with a
// range seek; smaller groups use point reads (bloom filters), which cost
// less than opening an iterator.
const bulkGroupProbeMin = 8

// InsertBatch is a statement's rows encoded for the table's storage
// layout, sorted by key (EncodeInsertBatch).
type InsertBatch struct {
	layout state.Schema
	rows   []types.Row  // statement order (the change stream's order)
	kvs    []storage.KV // sorted by key, unique
	idx    []int32      // idx[i]: the row of kvs[i]
	// uniqueKeys: the keys are new by construction (generated _row_ids).
	uniqueKeys bool
}

// Rows returns the batch's rows, in statement order.
func (b *InsertBatch) Rows() []types.Row { return b.rows }

type encodedPart struct {
	kvs []storage.KV
	idx []int32
}

// EncodeInsertBatch encodes rows for a bulk insert into the table whose
// layout enc has (a state.Table used for encoding only: state.New with a
// nil store). uniqueKeys promises that no key is taken (every row's key
// was just generated). Two rows with the same key fail with 23505, as in
// PostgreSQL. The rows must not change afterwards.
func EncodeInsertBatch(ctx context.Context, enc *state.Table, rows []types.Row, uniqueKeys bool) (*InsertBatch, error) {
	e := NewBatchEncoder(enc)
	e.Add(rows)
	return e.Finish(ctx, uniqueKeys)
}

// BatchEncoder builds an InsertBatch from rows that arrive in pieces (COPY
// FROM STDIN, message by message): every bulkEncodeChunk rows are encoded
// and sorted by a background goroutine (at most GOMAXPROCS at a time)
// while the next rows are parsed, and Finish merges the sorted parts.
type BatchEncoder struct {
	enc        *state.Table
	rows       []types.Row
	dispatched int // rows handed to encoders
	parts      []*encodedPart
	wg         sync.WaitGroup
	sem        chan struct{}
}

// NewBatchEncoder returns an encoder for enc's layout (see
// EncodeInsertBatch).
func NewBatchEncoder(enc *state.Table) *BatchEncoder {
	return &BatchEncoder{enc: enc, sem: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// Len is the number of rows added.
func (e *BatchEncoder) Len() int { return len(e.rows) }

// Rows returns the rows added, in order.
func (e *BatchEncoder) Rows() []types.Row { return e.rows }

// Add appends rows (which must not change afterwards).
func (e *BatchEncoder) Add(rows []types.Row) {
	e.rows = append(e.rows, rows...)
	for len(e.rows)-e.dispatched >= bulkEncodeChunk {
		e.dispatch(e.dispatched, e.dispatched+bulkEncodeChunk)
	}
}

// dispatch encodes rows[lo:hi] in the background.
func (e *BatchEncoder) dispatch(lo, hi int) {
	p := &encodedPart{}
	e.parts = append(e.parts, p)
	e.dispatched = hi
	rows := e.rows[:hi:hi] // Add may move e.rows; these rows stay
	colTypes := e.enc.Schema().Types
	e.wg.Add(1)
	e.sem <- struct{}{}
	go func() {
		defer func() { <-e.sem; e.wg.Done() }()
		*p = encodePart(e.enc, colTypes, rows, lo, hi)
	}()
}

// Finish encodes the remaining rows, waits for every part and merges them
// into the batch (see EncodeInsertBatch for uniqueKeys and 23505).
func (e *BatchEncoder) Finish(ctx context.Context, uniqueKeys bool) (*InsertBatch, error) {
	rest := len(e.rows) - e.dispatched
	if rest > 0 {
		workers := min(runtime.GOMAXPROCS(0), max(1, rest/(bulkEncodeChunk/4)))
		lo := e.dispatched
		for w := range workers {
			e.dispatch(lo+rest*w/workers, lo+rest*(w+1)/workers)
		}
	}
	e.wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := &InsertBatch{layout: *e.enc.Schema(), rows: e.rows, uniqueKeys: uniqueKeys}
	if len(e.parts) == 1 {
		b.kvs, b.idx = e.parts[0].kvs, e.parts[0].idx
	} else {
		b.kvs, b.idx = mergeParts(e.parts, len(e.rows))
	}
	for i := 1; i < len(b.kvs); i++ {
		if bytes.Equal(b.kvs[i-1].Key, b.kvs[i].Key) {
			return nil, e.enc.UniqueViolation(e.rows[max(b.idx[i-1], b.idx[i])])
		}
	}
	return b, nil
}

// encodePart encodes rows[lo:hi] into one arena and sorts them by key.
func encodePart(enc *state.Table, colTypes []types.Type, rows []types.Row, lo, hi int) encodedPart {
	p := encodedPart{kvs: make([]storage.KV, hi-lo), idx: make([]int32, hi-lo)}
	// One arena for the part's keys and values; the first row's size
	// estimates the rest.
	var arena []byte
	offs := make([][4]int, hi-lo)
	for i := lo; i < hi; i++ {
		if arena == nil {
			k := enc.EncodeKey(nil, rows[i])
			v := types.AppendValueRow(nil, rows[i], colTypes)
			arena = make([]byte, 0, (len(k)+len(v)+8)*(hi-lo))
		}
		o := &offs[i-lo]
		o[0] = len(arena)
		arena = enc.EncodeKey(arena, rows[i])
		o[1] = len(arena)
		arena = types.AppendValueRow(arena, rows[i], colTypes)
		o[2] = len(arena)
	}
	for i := range offs {
		o := offs[i]
		p.kvs[i] = storage.KV{Key: arena[o[0]:o[1]:o[1]], Value: arena[o[1]:o[2]:o[2]]}
		p.idx[i] = int32(lo + i)
	}
	perm := make([]int32, hi-lo)
	for i := range perm {
		perm[i] = int32(i)
	}
	if !slices.IsSortedFunc(p.kvs, func(a, b storage.KV) int { return bytes.Compare(a.Key, b.Key) }) {
		slices.SortFunc(perm, func(a, b int32) int {
			if c := bytes.Compare(p.kvs[a].Key, p.kvs[b].Key); c != 0 {
				return c
			}
			return int(a - b)
		})
		kvs, idx := make([]storage.KV, len(perm)), make([]int32, len(perm))
		for i, j := range perm {
			kvs[i], idx[i] = p.kvs[j], p.idx[j]
		}
		p.kvs, p.idx = kvs, idx
	}
	return p
}

// mergeParts merges sorted parts into one sorted sequence (equal keys end
// adjacent, for the duplicate check): a binary heap of the parts' heads.
func mergeParts(parts []*encodedPart, n int) ([]storage.KV, []int32) {
	kvs, idx := make([]storage.KV, 0, n), make([]int32, 0, n)
	type head struct {
		p   *encodedPart
		pos int
	}
	h := make([]head, 0, len(parts))
	for _, p := range parts {
		if len(p.kvs) > 0 {
			h = append(h, head{p: p})
		}
	}
	less := func(a, b head) bool { return bytes.Compare(a.p.kvs[a.pos].Key, b.p.kvs[b.pos].Key) < 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(h[r], h[l]) {
				m = r
			}
			if !less(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 0 {
		t := &h[0]
		kvs = append(kvs, t.p.kvs[t.pos])
		idx = append(idx, t.p.idx[t.pos])
		if t.pos++; t.pos == len(t.p.kvs) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	return kvs, idx
}

// find returns the position in kvs of key, or -1.
func (b *InsertBatch) find(key string) int {
	i, ok := slices.BinarySearchFunc(b.kvs, key, func(kv storage.KV, k string) int { return bytes.Compare(kv.Key, []byte(k)) })
	if !ok {
		return -1
	}
	return i
}

// sameLayout reports whether rows encoded for a are stored the same way in
// b (a batch encoded before an ALTER TABLE the actor has seen is not).
func sameLayout(a, b *state.Schema) bool {
	return slices.Equal(a.Types, b.Types) && slices.Equal(a.PK, b.PK) && slices.Equal(a.Desc, b.Desc) && slices.Equal(a.DistKey, b.DistKey)
}

// InsertBatch inserts a batch's rows; a key already in the table is a
// unique violation (23505), as Insert reports it. The writes apply with
// the statement (commit), as one sorted run.
func (w *TableWriter) InsertBatch(ctx context.Context, b *InsertBatch) error {
	if w.noBulk || len(w.overlay) > 0 || !sameLayout(&b.layout, w.t.Schema()) {
		// A transaction block's writer, a table with a watermark (which
		// filters the statement's changes) or a statement that already
		// wrote row by row: the row-at-a-time path.
		for i, r := range b.rows {
			if i%256 == 255 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := w.Insert(ctx, r); err != nil {
				return err
			}
		}
		return nil
	}
	if !b.uniqueKeys {
		if err := w.checkNew(ctx, b); err != nil {
			return err
		}
	}
	w.bulk = append(w.bulk, b)
	w.changes.Ops = slices.Grow(w.changes.Ops, len(b.rows))
	w.changes.Rows = slices.Grow(w.changes.Rows, len(b.rows))
	for _, r := range b.rows {
		w.changes.Append(types.OpInsert, r)
	}
	return nil
}

// checkNew fails with 23505 if a key of b is in the table (or in an
// earlier batch of the statement).
func (w *TableWriter) checkNew(ctx context.Context, b *InsertBatch) error {
	for _, e := range w.bulk {
		for i := range b.kvs {
			if e.find(string(b.kvs[i].Key)) >= 0 {
				return w.t.UniqueViolation(b.rows[b.idx[i]])
			}
		}
	}
	n := len(b.kvs)
	if n == 0 {
		return nil
	}
	taken, err := w.t.HasRowIn(ctx, b.kvs[0].Key, b.kvs[n-1].Key)
	if err != nil || !taken {
		return err // the common case of a load into an empty table: one seek
	}
	// Per vnode group (keys sharing their 2-byte vnode prefix): appending
	// ascending keys to a loaded table is new in every group.
	var tk ticker
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && bytes.Equal(b.kvs[hi].Key[:2], b.kvs[lo].Key[:2]) {
			hi++
		}
		probe := hi-lo >= bulkGroupProbeMin
		if probe {
			taken, err := w.t.HasRowIn(ctx, b.kvs[lo].Key, b.kvs[hi-1].Key)
			if err != nil {
				return err
			}
			probe = !taken
		}
		if !probe {
			for i := lo; i < hi; i++ {
				if err := tk.tick(ctx); err != nil {
					return err
				}
				_, found, err := w.t.GetKey(ctx, string(b.kvs[i].Key))
				if err != nil {
					return err
				}
				if found {
					return w.t.UniqueViolation(b.rows[b.idx[i]])
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// getBulk looks key up in the statement's batches.
func (w *TableWriter) getBulk(key string) (types.Row, bool) {
	for _, b := range w.bulk {
		if i := b.find(key); i >= 0 {
			return b.rows[b.idx[i]], true
		}
	}
	return nil, false
}

// commitBulk hands the statement's batches to the state table, one sorted
// run each.
//
// Recording the keys in the actor's written map (the record transactions
// check for writes after their snapshot) is not needed: the keys were
// absent, so a transaction whose snapshot predates this statement saw them
// absent and, if it writes one, finds it present at its commit — a
// conflict without the record; a later write of the key goes through the
// row-at-a-time path, which records itself.
func (w *TableWriter) commitBulk(ctx context.Context) error {
	for _, b := range w.bulk {
		if err := w.t.IngestSorted(ctx, b.kvs); err != nil {
			return err
		}
	}
	return nil
}
