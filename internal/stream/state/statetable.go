// Package state holds the state table: an executor's typed view of one
// storage table. Rows are keyed by vnode | memcomparable(pk); writes of the
// current epoch stay in a per-table memtable (read back by the executor
// that made them) and are handed to the storage engine when the executor
// passes a barrier.
//
// A state table is used by one actor goroutine only. Reads see the
// memtable first, then the engine's uncommitted and committed data at the
// table's epoch. Reading a table that the version no longer holds fails
// with the engine's "table N has been dropped" error (I4).
package state

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/google/btree"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/types"
)

// Store is what a state table needs from the storage engine.
type Store interface {
	IngestContext(ctx context.Context, epoch uint64, table storage.TableID, kvs []storage.KV) error
	Get(ctx context.Context, table storage.TableID, key []byte, epoch uint64, opt storage.ReadOptions) ([]byte, bool, error)
	Iter(ctx context.Context, table storage.TableID, lower, upper []byte, epoch uint64, opt storage.ReadOptions) (storage.Iterator, error)
}

// Schema describes a state table's rows and key.
type Schema struct {
	// Name identifies the table in errors ("materialized view mv, state table 12").
	Name  string
	Types []types.Type
	// ColumnNames and ConstraintName are used in error messages.
	ColumnNames    []string
	ConstraintName string
	// PK lists the key columns, in key order; Desc[i] orders PK[i] descending.
	PK   []int
	Desc []bool
	// DistKey lists the columns that choose the vnode. It must be a prefix
	// of the PK columns' set for prefix scans to stay within one vnode;
	// empty means every row is in vnode 0 (a singleton table).
	DistKey []int
}

// Table is a state table.
type Table struct {
	id     storage.TableID
	schema Schema
	store  Store
	epoch  uint64
	mem    *btree.BTreeG[memEntry]
	// log holds the writes not yet in mem, in write order (seq). Writes
	// only append; the next read, the commit, or maxLogWrites writes sort
	// them and merge them in (settle). A backfill writes hundreds of
	// thousands of rows between two reads of the same table (a join side,
	// an aggregation's kept inputs): one sort of a batch is cheaper than a
	// B-tree insert per row (each shifts its node's items), and the commit
	// merges the sorted log with mem without inserting it at all.
	log []logEntry
	// distInPK[i] is the position within PK of DistKey[i], or -1.
	distInPK []int

	keyBuf []byte
	valBuf []byte
}

type memEntry struct {
	key    string
	value  []byte // encoded row; nil for a delete
	delete bool
}

func lessEntry(a, b memEntry) bool { return a.key < b.key }

type logEntry struct {
	memEntry
	seq int
}

// maxLogWrites bounds the log: an executor that rewrites the same keys
// many times between reads keeps at most this many superseded writes, and
// the sort and merge that a write past it runs (with no cancellation check
// inside) stays at a few milliseconds, so the executor's own checks every
// few hundred rows keep aborts prompt (I5).
const maxLogWrites = 1 << 14

// write buffers one write (see log).
func (t *Table) write(e memEntry) {
	t.log = append(t.log, logEntry{memEntry: e, seq: len(t.log)})
	if len(t.log) >= maxLogWrites {
		t.settle()
	}
}

// sortLog sorts the log by key, each key's writes in write order.
func (t *Table) sortLog() {
	slices.SortFunc(t.log, func(a, b logEntry) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
}

// drainLog calls fn with the newest write of each logged key, in key
// order, and empties the log.
func (t *Table) drainLog(fn func(memEntry)) {
	if len(t.log) > 1 {
		t.sortLog()
	}
	for i, e := range t.log {
		if i+1 < len(t.log) && t.log[i+1].key == e.key {
			continue // superseded by a later write
		}
		fn(e.memEntry)
	}
	clear(t.log)
	t.log = t.log[:0]
}

// settle moves the log into mem (before any read of mem). It runs before
// every read, mostly with a log of one write or none (a join probes the
// side it did not just write; Materialize reads before it writes): no
// closure, no sort then.
func (t *Table) settle() {
	switch len(t.log) {
	case 0:
	case 1:
		t.mem.ReplaceOrInsert(t.log[0].memEntry)
		t.log[0] = logEntry{}
		t.log = t.log[:0]
	default:
		t.sortLog()
		for i, e := range t.log {
			if i+1 < len(t.log) && t.log[i+1].key == e.key {
				continue // superseded by a later write
			}
			t.mem.ReplaceOrInsert(e.memEntry)
		}
		clear(t.log)
		t.log = t.log[:0]
	}
}

// New creates a state table writing at epoch.
func New(id storage.TableID, schema Schema, store Store, epoch uint64) *Table {
	t := &Table{id: id, schema: schema, store: store, epoch: epoch, mem: btree.NewG(32, lessEntry)}
	if len(t.schema.Desc) < len(schema.PK) {
		t.schema.Desc = append(t.schema.Desc, make([]bool, len(schema.PK)-len(t.schema.Desc))...)
	}
	for _, d := range schema.DistKey {
		pos := -1
		for i, p := range schema.PK {
			if p == d {
				pos = i
			}
		}
		t.distInPK = append(t.distInPK, pos)
	}
	return t
}

// ID returns the storage table id.
func (t *Table) ID() storage.TableID { return t.id }

// Epoch returns the epoch writes go to.
func (t *Table) Epoch() uint64 { return t.epoch }

// Schema returns the table's schema.
func (t *Table) Schema() *Schema { return &t.schema }

// vnodeOfRow computes the vnode from a full row.
func (t *Table) vnodeOfRow(row types.Row) uint16 {
	if len(t.schema.DistKey) == 0 {
		return 0
	}
	return types.Vnode(row, t.schema.DistKey)
}

// encodeKey appends vnode | memcomparable(pk columns of row) to dst.
func (t *Table) encodeKey(dst []byte, row types.Row) []byte {
	dst = binary.BigEndian.AppendUint16(dst, t.vnodeOfRow(row))
	for i, c := range t.schema.PK {
		dst = types.AppendKey(dst, row[c], t.schema.Types[c], t.schema.Desc[i], false)
	}
	return dst
}

// pkRowVnode computes the vnode from key values given in PK order (a full
// key or a prefix that covers the distribution key).
func (t *Table) pkRowVnode(pk types.Row) (uint16, bool) {
	if len(t.schema.DistKey) == 0 {
		return 0, true
	}
	row := make(types.Row, len(t.schema.Types))
	for i, pos := range t.distInPK {
		if pos < 0 || pos >= len(pk) {
			return 0, false
		}
		row[t.schema.DistKey[i]] = pk[pos]
	}
	return types.Vnode(row, t.schema.DistKey), true
}

func (t *Table) encodePK(dst []byte, vnode uint16, pk types.Row) []byte {
	dst = binary.BigEndian.AppendUint16(dst, vnode)
	for i, d := range pk {
		c := t.schema.PK[i]
		dst = types.AppendKey(dst, d, t.schema.Types[c], t.schema.Desc[i], false)
	}
	return dst
}

// EncodePK appends the storage key of the row whose primary key values
// (in key order) are pk, the same bytes EncodeKey gives for that row; ok
// is false unless pk is the whole key.
func (t *Table) EncodePK(dst []byte, pk types.Row) (key []byte, ok bool) {
	if len(pk) != len(t.schema.PK) {
		return dst, false
	}
	vnode, ok := t.pkRowVnode(pk)
	if !ok {
		return dst, false
	}
	return t.encodePK(dst, vnode, pk), true
}

// EncodeKey appends the storage key of row (vnode | memcomparable pk).
func (t *Table) EncodeKey(dst []byte, row types.Row) []byte { return t.encodeKey(dst, row) }

// Insert writes row (replacing any row with the same key).
func (t *Table) Insert(row types.Row) {
	t.keyBuf = t.encodeKey(t.keyBuf[:0], row)
	t.InsertKey(string(t.keyBuf), row)
}

// InsertKey writes row under an already encoded key.
func (t *Table) InsertKey(key string, row types.Row) {
	val := types.AppendValueRow(nil, row, t.schema.Types)
	t.write(memEntry{key: key, value: val})
}

// Delete removes the row with row's key.
func (t *Table) Delete(row types.Row) {
	t.keyBuf = t.encodeKey(t.keyBuf[:0], row)
	t.DeleteKey(string(t.keyBuf))
}

// DeleteKey removes the row under an already encoded key.
func (t *Table) DeleteKey(key string) {
	t.write(memEntry{key: key, delete: true})
}

// UniqueViolation builds PostgreSQL's 23505 error for a duplicate key.
func (t *Table) UniqueViolation(row types.Row) error {
	e := sqlerr.Errorf(sqlerr.UniqueViolation, "duplicate key value violates unique constraint %q", t.schema.ConstraintName)
	e.Detail = fmt.Sprintf("Key %s already exists.", t.KeyText(row))
	e.ConstraintName = t.schema.ConstraintName
	return e
}

// KeyText renders row's primary key as PostgreSQL's key details do:
// "(a, b)=(1, x)".
func (t *Table) KeyText(row types.Row) string {
	var cols, vals strings.Builder
	for i, c := range t.schema.PK {
		if i > 0 {
			cols.WriteString(", ")
			vals.WriteString(", ")
		}
		name := fmt.Sprintf("column%d", c+1)
		if c < len(t.schema.ColumnNames) {
			name = t.schema.ColumnNames[c]
		}
		cols.WriteString(name)
		vals.WriteString(types.FormatText(row[c], t.schema.Types[c], nil))
	}
	return "(" + cols.String() + ")=(" + vals.String() + ")"
}

// Get returns the row with the given primary key values (in PK order).
func (t *Table) Get(ctx context.Context, pk types.Row) (types.Row, bool, error) {
	vnode, ok := t.pkRowVnode(pk)
	if !ok {
		return nil, false, fmt.Errorf("%s: point get needs the whole distribution key", t.schema.Name)
	}
	t.keyBuf = t.encodePK(t.keyBuf[:0], vnode, pk)
	return t.getKey(ctx, t.keyBuf)
}

// GetRow returns the stored row with the same key as row.
func (t *Table) GetRow(ctx context.Context, row types.Row) (types.Row, bool, error) {
	t.keyBuf = t.encodeKey(t.keyBuf[:0], row)
	return t.getKey(ctx, t.keyBuf)
}

// GetKey returns the row stored under an already encoded key.
func (t *Table) GetKey(ctx context.Context, key string) (types.Row, bool, error) {
	return t.getKey(ctx, []byte(key))
}

// Buffered calls fn for every write buffered since the last Commit, in
// key order: the row written under key, or nil for a delete. A
// transaction block keeps its pending writes this way, in a table over
// its snapshot that is never committed (frontend/txn.go).
func (t *Table) Buffered(fn func(key string, row types.Row) error) error {
	var err error
	t.settle()
	t.mem.Ascend(func(e memEntry) bool {
		var row types.Row
		if !e.delete {
			if row, _, err = t.decode(e.value); err != nil {
				return false
			}
		}
		err = fn(e.key, row)
		return err == nil
	})
	return err
}

// BufferedLen is the number of buffered writes.
func (t *Table) BufferedLen() int {
	t.settle()
	return t.mem.Len()
}

func (t *Table) getKey(ctx context.Context, key []byte) (types.Row, bool, error) {
	t.settle()
	if e, ok := t.mem.Get(memEntry{key: string(key)}); ok {
		if e.delete {
			return nil, false, nil
		}
		return t.decode(e.value)
	}
	// A storage read costs microseconds to milliseconds (more on a loaded
	// machine or a cold cache): loops doing one per row would otherwise
	// notice an abort only every few hundred reads (I5).
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	v, found, err := t.store.Get(ctx, t.id, key, t.epoch, storage.ReadOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", t.schema.Name, err)
	}
	if !found {
		return nil, false, nil
	}
	return t.decode(v)
}

func (t *Table) decode(v []byte) (types.Row, bool, error) {
	row, err := types.DecodeValueRow(v, t.schema.Types, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%s: corrupt row: %w", t.schema.Name, err)
	}
	return row, true, nil
}

// Commit hands this epoch's writes to the engine and moves to next.
func (t *Table) Commit(next uint64) error { return t.CommitContext(context.Background(), next) }

// CommitContext is Commit for an actor: a spill the hand-over runs ends
// when ctx does (I5).
func (t *Table) CommitContext(ctx context.Context, next uint64) error {
	if err := t.handOver(ctx); err != nil {
		return err
	}
	t.epoch = next
	return nil
}

// Iter iterates rows whose primary key starts with prefix (values in PK
// order; empty: the whole table, across every vnode), in key order within
// a vnode.
func (t *Table) Iter(ctx context.Context, prefix types.Row) (*RowIter, error) {
	lower, upper, err := t.prefixBounds(prefix)
	if err != nil {
		return nil, err
	}
	return t.rangeIter(ctx, lower, upper, false)
}

// IterVnode iterates all rows of one vnode.
func (t *Table) IterVnode(ctx context.Context, vnode uint16) (*RowIter, error) {
	lower := binary.BigEndian.AppendUint16(nil, vnode)
	return t.rangeIter(ctx, lower, prefixEnd(lower), false)
}

// prefixEnd returns the smallest key greater than every key with prefix p
// (nil: no upper bound).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
