package frontend

import (
	"context"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/streamplan"
	"github.com/runneldb/runnel/internal/tsdb"
	"github.com/runneldb/runnel/internal/types"
)

// RowIDColumn is the hidden key column of a table declared without a
// primary key.
const RowIDColumn = "_row_id"

// nextRowID generates values for _row_id (shared with the rows of
// external connectors, so the two never collide).
func nextRowID() int64 { return exec.NextRowID() }

// fillRowID sets the hidden _row_id of rows of a table without a declared
// key (the binder leaves it NULL); it reports whether it generated one.
func fillRowID(rel *catalog.Relation, row types.Row) bool {
	generated := false
	for i, c := range rel.Columns {
		if c.Hidden && c.Name == RowIDColumn && row[i].IsNull() {
			row[i] = types.DInt64(nextRowID())
			generated = true
		}
	}
	return generated
}

// bulkInsertMinRows is the least rows an INSERT or COPY sends down the bulk
// path (exec.InsertBatch): below it, a point read per key costs less than
// the range seeks that prove the keys new.
const bulkInsertMinRows = 64

// conflictAction is INSERT's ON CONFLICT clause.
type conflictAction struct {
	doNothing bool
	// update computes the replacement for an existing row given the row
	// proposed for insertion (excluded); ok=false keeps the existing row
	// (DO UPDATE ... WHERE false).
	update func(ctx context.Context, existing, excluded types.Row) (updated types.Row, ok bool, err error)
}

// insert writes rows into rel as one atomic statement and returns the rows
// actually inserted or updated (for RETURNING and the command tag).
func (ss *session) insert(ctx context.Context, rel *catalog.Relation, rows []types.Row, conflict *conflictAction) ([]types.Row, uint64, error) {
	fillSeries := tsdb.SeriesFiller(rel) // a series-keyed time-series table's id
	generatedKeys := true
	for _, r := range rows {
		if !fillRowID(rel, r) {
			generatedKeys = false
		}
		if fillSeries != nil {
			fillSeries(r)
		}
	}
	var affected []types.Row
	// A time-series table (internal/tsdb) in append mode reads nothing on
	// insert; without it, a row with the same tags and time replaces the
	// earlier one (GreptimeDB's dedup).
	ts, isTS := tsdb.SpecOf(rel)
	if conflict == nil && !isTS && len(rows) >= bulkInsertMinRows {
		b, err := exec.EncodeInsertBatch(ctx, bulkEncoder(rel), rows, generatedKeys)
		if err != nil {
			return nil, 0, err
		}
		return ss.insertBulk(ctx, rel, b)
	}
	epoch, err := ss.write(ctx, rel, func(ctx context.Context, w *exec.TableWriter) error {
		affected = affected[:0]
		for i, r := range rows {
			if i%256 == 255 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if conflict == nil {
				var err error
				switch {
				case isTS && ts.AppendMode:
					w.Append(r)
				case isTS:
					err = w.Upsert(ctx, r)
				default:
					err = w.Insert(ctx, r)
				}
				if err != nil {
					return err
				}
				affected = append(affected, r)
				continue
			}
			existing, found, err := w.Get(ctx, r)
			if err != nil {
				return err
			}
			switch {
			case !found:
				if err := w.Insert(ctx, r); err != nil {
					return err
				}
				affected = append(affected, r)
			case conflict.doNothing:
			default:
				updated, ok, err := conflict.update(ctx, existing, r)
				if err != nil {
					return err
				}
				if ok {
					if err := w.Update(ctx, existing, updated); err != nil {
						return err
					}
					affected = append(affected, updated)
				}
			}
		}
		return nil
	})
	return affected, epoch, err
}

// bulkEncoder returns a state table of rel's layout for encoding its rows
// outside its actor (exec.EncodeInsertBatch); nil for a time-series table,
// whose inserts read (dedup) or append row by row.
func bulkEncoder(rel *catalog.Relation) *state.Table {
	if _, isTS := tsdb.SpecOf(rel); isTS {
		return nil
	}
	return state.New(storage.TableID(rel.StateTable), streamplan.TableStateSchema(rel), nil, 0)
}

// insertBulk writes an encoded batch (the bulk path of INSERT and COPY):
// its keys and values were encoded outside the table's actor, in parallel;
// the actor checks the keys new with range seeks and hands the sorted
// batch to storage as one run (exec.InsertBatch).
func (ss *session) insertBulk(ctx context.Context, rel *catalog.Relation, b *exec.InsertBatch) ([]types.Row, uint64, error) {
	epoch, err := ss.write(ctx, rel, func(ctx context.Context, w *exec.TableWriter) error {
		return w.InsertBatch(ctx, b)
	})
	return b.Rows(), epoch, err
}

// rowChange is one row UPDATE or DELETE changes: New is nil for a delete.
type rowChange struct {
	Old, New types.Row
}

// modify runs an UPDATE or DELETE: compute runs inside the table's actor,
// reading rel's current rows (every earlier statement's writes included)
// through src and every other relation from a committed snapshot; its
// changes are then applied atomically. Inside a transaction block, rel is
// read from the block's snapshot and writes (see txn.go). It returns the changed rows (new
// rows for UPDATE, old rows for DELETE).
func (ss *session) modify(ctx context.Context, rel *catalog.Relation, others batch.DataSource,
	compute func(ctx context.Context, src batch.DataSource) ([]rowChange, error)) ([]types.Row, uint64, error) {
	var out []types.Row
	epoch, err := ss.write(ctx, rel, func(ctx context.Context, w *exec.TableWriter) error {
		out = out[:0]
		src := &writerSource{rel: rel, w: w, others: others}
		changes, err := compute(ctx, src)
		if err != nil {
			return err
		}
		for _, c := range changes {
			if c.New == nil {
				if _, err := w.Delete(ctx, c.Old); err != nil {
					return err
				}
				out = append(out, c.Old)
				continue
			}
			if err := w.Update(ctx, c.Old, c.New); err != nil {
				return err
			}
			out = append(out, c.New)
		}
		return nil
	})
	return out, epoch, err
}

// writerSource scans the target table from its actor's live state and
// every other relation from the snapshot.
type writerSource struct {
	rel    *catalog.Relation
	w      *exec.TableWriter
	others batch.DataSource
}

func (d *writerSource) Scan(ctx context.Context, rel *catalog.Relation) (batch.RowIterator, error) {
	if rel.ID != d.rel.ID {
		return d.others.Scan(ctx, rel)
	}
	it, err := d.w.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &stateRows{it: it}, nil
}

// ScanKey reads the statement's table by primary-key prefix
// (batch.KeyScanner); other relations come from the snapshot.
func (d *writerSource) ScanKey(ctx context.Context, rel *catalog.Relation, prefix types.Row) (batch.RowIterator, bool, error) {
	if rel.ID != d.rel.ID {
		if ks, ok := d.others.(batch.KeyScanner); ok {
			return ks.ScanKey(ctx, rel, prefix)
		}
		return nil, false, nil
	}
	tbl := d.w.Table()
	if _, _, ok := tbl.PrefixBounds(prefix); !ok {
		return nil, false, nil
	}
	if len(prefix) == len(tbl.Schema().PK) {
		// The whole key (UPDATE ... WHERE id = $1): a point read, which
		// storage answers from bloom filters and the newest version
		// instead of seeking in every SST covering the key. Like the
		// iterator, it reads the rows as of the statement's start; the
		// writer keeps the row, so replacing it does not read it again.
		row, found, err := d.w.GetBase(ctx, prefix)
		if err != nil {
			return nil, false, err
		}
		return &pointRow{row: row, found: found}, true, nil
	}
	it, err := d.w.ScanPrefix(ctx, prefix)
	if err != nil {
		return nil, false, err
	}
	return &stateRows{it: it}, true, nil
}

// stateRows adapts a state-table iterator to batch.RowIterator.
type stateRows struct {
	it interface {
		Next() bool
		Row() types.Row
		Err() error
		Close() error
	}
}

func (r *stateRows) Next(ctx context.Context) (types.Row, error) {
	if !r.it.Next() {
		return nil, r.it.Err()
	}
	return r.it.Row(), nil
}

func (r *stateRows) Close() { r.it.Close() }
