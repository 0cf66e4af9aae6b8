package frontend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/streamplan"
	"github.com/runneldb/runnel/internal/types"
)

// snapshotSource serves batch scans from one pinned storage snapshot, so
// that every relation a query reads is seen at the same committed epoch.
type snapshotSource struct {
	snap *storage.Snapshot
	// sess serves system tables (syscat.go); nil where they are not read.
	sess *session
	// ownWritesPending: the statement is a DML statement and its session
	// has acknowledged writes the snapshot does not hold. Reading a stored
	// relation then fails with errOwnWritesPending, and the statement
	// waits for those writes and runs again (see executeDML).
	ownWritesPending bool
}

// errOwnWritesPending stops a DML statement that would read another
// relation without its session's earlier, not yet committed writes.
var errOwnWritesPending = errors.New("the session's earlier writes are not committed yet")

func (d *snapshotSource) Scan(ctx context.Context, rel *catalog.Relation) (batch.RowIterator, error) {
	return d.scan(ctx, rel, storage.ReadOptions{})
}

// ScanTime scans a time-series table reading only the SSTs whose time
// range may hold rows in [lo, hi] (batch.TimeScanner).
func (d *snapshotSource) ScanTime(ctx context.Context, rel *catalog.Relation, lo, hi int64) (batch.RowIterator, bool, error) {
	it, err := d.scan(ctx, rel, storage.ReadOptions{Time: &storage.TimeRange{Min: lo, Max: hi, Valid: true}})
	return it, err == nil, err
}

func (d *snapshotSource) scan(ctx context.Context, rel *catalog.Relation, opt storage.ReadOptions) (batch.RowIterator, error) {
	if rel.Kind == catalog.KindSystem {
		return scanSystem(d.sess, rel)
	}
	if d.ownWritesPending {
		return nil, errOwnWritesPending
	}
	if err := d.failed(rel); err != nil {
		return nil, err
	}
	if rel.StateTable == 0 {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "%s %q has no stored rows", rel.Kind, rel.Name)
	}
	it, err := d.snap.Iter(ctx, storage.TableID(rel.StateTable), nil, nil, opt)
	if err != nil {
		return nil, fmt.Errorf("scan %s %s: %w", rel.Kind, rel.Name, err)
	}
	colTypes := make([]types.Type, len(rel.Columns))
	for i, c := range rel.Columns {
		colTypes[i] = c.Type
	}
	rows := &storageRows{it: it, types: colTypes, rel: rel}
	if opt.Time != nil {
		return rows, nil
	}
	return &keyOrderedRows{src: rows}, nil
}

// smallScanRows bounds the scans keyOrderedRows puts in key order.
const smallScanRows = 4096

// keyOrderedRows returns a whole-relation scan of at most smallScanRows
// rows in primary-key order across vnodes: insertion order for a table
// keyed by its generated _row_id (the ids grow), key order otherwise. A
// stored key is vnode | memcomparable key, so a plain scan visits the
// vnodes in turn and its order follows the key's hash; RisingWave's
// single-node scans of small tables come out in key order (its row ids
// carry their vnode), and files written against it expect that order from
// a SELECT without ORDER BY. SQL promises no order there, so this is a
// convenience, not a contract: a larger scan is streamed in vnode order
// after its first smallScanRows rows, without buffering it.
type keyOrderedRows struct {
	src  keyedIterator
	buf  []keyedRow
	pos  int
	done bool // buf is filled (sorted, or the scan was too large to sort)
	big  bool // the scan goes on past buf in src
}

// keyedIterator is a scan that tells the stored key of the row it returned
// last (valid until its next Next).
type keyedIterator interface {
	batch.RowIterator
	lastKey() []byte
}

type keyedRow struct {
	key []byte // the key without its vnode
	row types.Row
}

func (r *keyOrderedRows) Next(ctx context.Context) (types.Row, error) {
	if !r.done {
		if err := r.fill(ctx); err != nil {
			return nil, err
		}
	}
	if r.pos < len(r.buf) {
		row := r.buf[r.pos].row
		r.buf[r.pos] = keyedRow{}
		r.pos++
		return row, nil
	}
	if r.big {
		return r.src.Next(ctx)
	}
	return nil, nil
}

func (r *keyOrderedRows) fill(ctx context.Context) error {
	r.done = true
	for len(r.buf) < smallScanRows {
		row, err := r.src.Next(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			sort.SliceStable(r.buf, func(i, j int) bool { return bytes.Compare(r.buf[i].key, r.buf[j].key) < 0 })
			return nil
		}
		var key []byte
		if k := r.src.lastKey(); len(k) >= 2 {
			key = append(key, k[2:]...)
		}
		r.buf = append(r.buf, keyedRow{key: key, row: row})
	}
	r.big = true
	return nil
}

func (r *keyOrderedRows) Close() { r.src.Close() }

// failed is the error of a relation whose job the last rebuild could not
// start (statecatalog.go): its rows are not read (item 7: never bound to
// a plan that would misread them).
func (d *snapshotSource) failed(rel *catalog.Relation) error {
	if d.sess == nil {
		return nil
	}
	return d.sess.s.meta.JobFailure(rel.ID)
}

// ScanKey reads the rows of a table or materialized view whose primary
// key starts with prefix: one key range of one vnode (batch.KeyScanner).
func (d *snapshotSource) ScanKey(ctx context.Context, rel *catalog.Relation, prefix types.Row) (batch.RowIterator, bool, error) {
	schema, ok := relationStateSchema(rel)
	if !ok {
		return nil, false, nil
	}
	if d.ownWritesPending {
		return nil, false, errOwnWritesPending
	}
	if err := d.failed(rel); err != nil {
		return nil, false, err
	}
	tbl := state.New(storage.TableID(rel.StateTable), schema, snapshotStore{d.snap}, d.snap.Epoch())
	if lower, upper, ok := tbl.PrefixBounds(prefix); ok {
		if len(prefix) == len(schema.PK) {
			// The whole key: a point read, which skips every SST whose
			// bloom filter rules the key out and stops at the newest
			// version found, where an iterator would seek in every SST
			// whose key range covers it.
			row, found, err := tbl.Get(ctx, prefix)
			if err != nil {
				return nil, false, fmt.Errorf("scan %s %s: %w", rel.Kind, rel.Name, err)
			}
			return &pointRow{row: row, found: found}, true, nil
		}
		it, err := d.snap.Iter(ctx, storage.TableID(rel.StateTable), lower, upper, storage.ReadOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("scan %s %s: %w", rel.Kind, rel.Name, err)
		}
		return &storageRows{it: it, types: schema.Types, rel: rel}, true, nil
	}
	// The prefix does not fix the vnode (a view keyed by more than its
	// distribution key, looked up by the first key column): one seek per
	// vnode is still far cheaper than reading every row.
	if _, _, ok := tbl.VnodePrefixBounds(0, prefix); !ok {
		return nil, false, nil
	}
	return &keyOrderedRows{src: &vnodeRows{snap: d.snap, tbl: tbl, prefix: prefix, rel: rel, types: schema.Types}}, true, nil
}

// ScanIndex reads an index's rows by key range (batch.IndexScanner): one
// range when the equality prefix fixes the vnode (it holds the index's
// first column, its distribution key), else one per vnode. The index is
// read from the same snapshot as its relation (I7: both at one committed
// epoch).
func (d *snapshotSource) ScanIndex(ctx context.Context, index *catalog.Relation, eq types.Row, lo, hi *types.Datum) (batch.RowIterator, bool, error) {
	schema, ok := relationStateSchema(index)
	if !ok || index.Kind != catalog.KindIndex {
		return nil, false, nil
	}
	if d.ownWritesPending {
		return nil, false, errOwnWritesPending
	}
	if err := d.failed(index); err != nil {
		return nil, false, err
	}
	tbl := state.New(storage.TableID(index.StateTable), schema, snapshotStore{d.snap}, d.snap.Epoch())
	r := &vnodeRows{snap: d.snap, tbl: tbl, rel: index, types: schema.Types,
		bounds: func(v uint16) ([]byte, []byte) { return tbl.VnodeRangeBounds(v, eq, lo, hi) }}
	if v, ok := tbl.PrefixVnode(eq); ok {
		r.vnode, r.last = int(v), int(v)+1
		return r, true, nil
	}
	return &keyOrderedRows{src: r}, true, nil
}

// snapshotStore is a read-only state.Store over a snapshot, so that a
// state.Table encodes the key of a point read exactly as the table's
// writer did.
type snapshotStore struct{ snap *storage.Snapshot }

func (s snapshotStore) IngestContext(context.Context, uint64, storage.TableID, []storage.KV) error {
	return fmt.Errorf("snapshot at epoch %d is read-only", s.snap.Epoch())
}

func (s snapshotStore) Get(ctx context.Context, table storage.TableID, key []byte, _ uint64, _ storage.ReadOptions) ([]byte, bool, error) {
	return s.snap.Get(ctx, table, key)
}

func (s snapshotStore) Iter(ctx context.Context, table storage.TableID, lower, upper []byte, _ uint64, opt storage.ReadOptions) (storage.Iterator, error) {
	return s.snap.Iter(ctx, table, lower, upper, opt)
}

// pointRow is the result of a point read: the row, or nothing.
type pointRow struct {
	row   types.Row
	found bool
}

func (p *pointRow) Next(context.Context) (types.Row, error) {
	if !p.found {
		return nil, nil
	}
	p.found = false
	return p.row, nil
}

func (p *pointRow) Close() {}

// vnodeRows reads one key prefix in every vnode in turn (or, with
// bounds, the range bounds gives in each vnode of [vnode, last)).
type vnodeRows struct {
	snap   *storage.Snapshot
	tbl    *state.Table
	prefix types.Row
	bounds func(vnode uint16) (lower, upper []byte)
	rel    *catalog.Relation
	types  []types.Type
	vnode  int
	last   int // 0: types.VnodeCount
	cur    *storageRows
}

func (r *vnodeRows) Next(ctx context.Context) (types.Row, error) {
	for {
		if r.cur != nil {
			row, err := r.cur.Next(ctx)
			if err != nil || row != nil {
				return row, err
			}
			r.cur.Close()
			r.cur = nil
		}
		last := r.last
		if last == 0 {
			last = types.VnodeCount
		}
		if r.vnode >= last {
			return nil, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var lower, upper []byte
		if r.bounds != nil {
			lower, upper = r.bounds(uint16(r.vnode))
		} else {
			lower, upper, _ = r.tbl.VnodePrefixBounds(uint16(r.vnode), r.prefix)
		}
		r.vnode++
		it, err := r.snap.Iter(ctx, storage.TableID(r.rel.StateTable), lower, upper, storage.ReadOptions{})
		if err != nil {
			return nil, fmt.Errorf("scan %s %s: %w", r.rel.Kind, r.rel.Name, err)
		}
		r.cur = &storageRows{it: it, types: r.types, rel: r.rel}
	}
}

// lastKey is the key of the row Next returned last (r.cur is kept until
// the next call, which moves on).
func (r *vnodeRows) lastKey() []byte {
	if r.cur == nil {
		return nil
	}
	return r.cur.lastKey()
}

func (r *vnodeRows) Close() {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
}

// relationStateSchema is the schema of the state table holding a table's
// or materialized view's rows.
func relationStateSchema(rel *catalog.Relation) (state.Schema, bool) {
	switch rel.Kind {
	case catalog.KindTable:
		return streamplan.TableStateSchema(rel), rel.StateTable != 0
	case catalog.KindMaterializedView, catalog.KindIndex:
		return streamplan.ViewStateSchema(rel), rel.StateTable != 0
	}
	return state.Schema{}, false
}

// storageRows decodes a state table's rows.
type storageRows struct {
	it    storage.Iterator
	types []types.Type
	rel   *catalog.Relation
	n     int
}

func (r *storageRows) Next(ctx context.Context) (types.Row, error) {
	// I5: a long scan notices cancellation.
	if r.n++; r.n%256 == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if !r.it.Next() {
		if err := r.it.Err(); err != nil {
			return nil, fmt.Errorf("scan %s %s: %w", r.rel.Kind, r.rel.Name, err)
		}
		return nil, nil
	}
	row, err := types.DecodeValueRow(r.it.Value(), r.types, nil)
	if err != nil {
		return nil, fmt.Errorf("scan %s %s: corrupt row: %w", r.rel.Kind, r.rel.Name, err)
	}
	return row, nil
}

func (r *storageRows) Close() { r.it.Close() }

func (r *storageRows) lastKey() []byte { return r.it.Key() }
