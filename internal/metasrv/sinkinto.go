package metasrv

import (
	"context"
	"strconv"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/types"
)

// CREATE SINK ... INTO table (RisingWave's sink into a table): the sink's
// job writes its log store like any sink's, and its worker delivers each
// committed epoch as one DML statement on the table, through the table's
// actor like an INSERT (so the table's views see the rows as they would
// see an INSERT's). A table with a primary key takes an upsert sink: an
// insert replaces the row with its key, a delete removes it. A table
// without one takes only inserts (each a new _row_id).
//
// Delivery is at least once, like every sink's (internal/sink): an epoch
// whose DML committed but whose log truncation did not when the process
// died is delivered again after restart. Into a table with a key that is
// harmless (epochs are delivered again in order, and each change is by
// key); into one without, its rows are appended twice.

// tableTarget is the sink.Target of a sink into a table.
type tableTarget struct {
	s     *Service
	cfg   *sink.Config
	table catalog.ObjectID
}

func (s *Service) newTableTarget(cfg *sink.Config, opts map[string]string) (sink.Target, error) {
	id, err := strconv.ParseUint(opts[sink.OptInto], 10, 64)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: no target table (CREATE SINK ... INTO table)", cfg.Name)
	}
	return &tableTarget{s: s, cfg: cfg, table: catalog.ObjectID(id)}, nil
}

func (t *tableTarget) relation() (*catalog.Relation, error) {
	rel, ok := t.s.catalog.Relation(t.table)
	if !ok || rel.Kind != catalog.KindTable {
		return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "sink %q: its target table (id %d) does not exist", t.cfg.Name, t.table)
	}
	return rel, nil
}

func (t *tableTarget) Open(context.Context) (uint64, error) {
	_, err := t.relation()
	return 0, err
}

func (t *tableTarget) Begin(context.Context, uint64) (sink.Txn, error) {
	return &tableTxn{t: t}, nil
}

func (t *tableTarget) Close() error { return nil }

type tableTxn struct {
	t       *tableTarget
	changes []sink.Change
}

func (x *tableTxn) Write(_ context.Context, changes []sink.Change) error {
	for _, c := range changes {
		x.changes = append(x.changes, sink.Change{Op: c.Op, Row: append(types.Row(nil), c.Row...)})
	}
	return nil
}

func (x *tableTxn) Rollback() { x.changes = nil }

// Commit applies the epoch's changes to the table in one statement. The
// sink's columns are the table's by name (the frontend shaped the query
// so); a column added to the table since CREATE SINK is NULL, and a row
// with NULL in a NOT NULL column is dropped (as RisingWave drops such rows
// of a streaming ingest) and logged.
func (x *tableTxn) Commit(ctx context.Context) error {
	rel, err := x.t.relation()
	if err != nil {
		return err
	}
	idx := make([]int, len(x.t.cfg.Columns))
	for i, c := range x.t.cfg.Columns {
		idx[i] = rel.ColumnIndex(c.Name)
	}
	keyed := true
	for _, k := range rel.PK {
		if rel.Columns[k].Hidden {
			keyed = false
		}
	}
	dropped := 0
	apply := func(ctx context.Context, w *exec.TableWriter) error {
		dropped = 0
		for _, c := range x.changes {
			row := make(types.Row, len(rel.Columns))
			for i, j := range idx {
				if j >= 0 {
					row[j] = c.Row[i]
				}
			}
			insert := c.Op == types.OpInsert || c.Op == types.OpUpdateInsert
			if !keyed {
				if !insert {
					continue // an append-only sink sends none
				}
				for i, col := range rel.Columns {
					if col.Hidden && row[i].IsNull() {
						row[i] = types.DInt64(exec.NextRowID())
					}
				}
			}
			if insert && hasNullInNotNull(rel, row) {
				dropped++
				continue
			}
			var err error
			switch {
			case insert && keyed:
				err = w.Upsert(ctx, row)
			case insert:
				w.Append(row)
			default:
				_, err = w.Delete(ctx, row)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := x.t.s.compute.Write(ctx, rel, apply); err != nil {
		return err
	}
	if dropped > 0 {
		x.t.s.log.Warn("sink into table: rows with NULL in a NOT NULL column dropped", "sink", x.t.cfg.Name, "table", rel.Name, "rows", dropped)
	}
	x.changes = nil
	return nil
}

func hasNullInNotNull(rel *catalog.Relation, row types.Row) bool {
	for i, c := range rel.Columns {
		if c.NotNull && row[i].IsNull() {
			return true
		}
	}
	return false
}

// flushIntoRounds bounds FlushIntoTables: a chain of sinks into tables
// feeding one another is followed this many links deep.
const flushIntoRounds = 8

// FlushIntoTables makes FLUSH cover sinks into tables, as in RisingWave,
// where such a sink is part of the dataflow: after flush (which committed
// an epoch) it waits until every sink into a table has delivered every
// committed epoch, then flushes again so that the rows those sinks wrote
// are committed as well; it repeats while they deliver new rows (a sink
// into a table whose view feeds another sink into a table). A sink whose
// target fails keeps FLUSH waiting until ctx ends (statement_timeout).
func (s *Service) FlushIntoTables(ctx context.Context, flush func(context.Context) error) error {
	for round := 0; round < flushIntoRounds; round++ {
		var ws []*sink.Worker
		s.sinks.mu.Lock()
		for id, w := range s.sinks.m {
			if rel, ok := s.catalog.Relation(id); ok && rel.Options["connector"] == sink.ConnectorTable {
				ws = append(ws, w)
			}
		}
		s.sinks.mu.Unlock()
		if len(ws) == 0 {
			return nil
		}
		committed := s.store.CommittedEpoch()
		var before int64
		for _, w := range ws {
			before += w.Status().DeliveredRows
		}
		for _, w := range ws {
			for w.Through() < committed {
				select {
				case <-ctx.Done():
					st := w.Status()
					if st.LastError != "" {
						return sqlerr.Errorf(sqlerr.QueryCanceled, "FLUSH waited for a sink into a table, whose delivery fails: %s", st.LastError)
					}
					return ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		var after int64
		for _, w := range ws {
			after += w.Status().DeliveredRows
		}
		if round > 0 && after == before {
			return nil
		}
		if err := flush(ctx); err != nil {
			return err
		}
	}
	return nil
}
