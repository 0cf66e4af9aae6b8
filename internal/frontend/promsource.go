package frontend

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/promql"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/tsdb"
	"github.com/runneldb/runnel/internal/types"
)

// PromSource is the frontend's side of the PromQL API (internal/promql):
// the time-series tables of a schema of the dev database (where the HTTP
// ingest writes), read from one pinned storage snapshot per query.
func (s *Frontend) PromSource() promql.Source { return promSource{s: s, db: ingestDatabase} }

// promSource reads the time-series tables of database db (TQL reads the
// session's).
type promSource struct {
	s  *Frontend
	db string
}

func (p promSource) Open(ctx context.Context, schema string) (promql.Reader, error) {
	s := p.s
	db, err := s.catalog.DatabaseByName(p.db)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidCatalogName, "database %q does not exist", p.db)
	}
	sc, err := s.catalog.SchemaByName(db.ID, schema)
	if err != nil {
		return nil, sqlerr.Errorf(sqlerr.InvalidSchemaName, "schema %q does not exist", schema)
	}
	rels := s.catalog.Relations(func(r *catalog.Relation) bool {
		return r.SchemaID == sc.ID && r.Kind == catalog.KindTable && tsdb.IsTimeSeries(r)
	})
	var tables []*promql.Table
	for _, rel := range rels {
		sp, ok := tsdb.SpecOf(rel)
		if !ok || rel.StateTable == 0 {
			continue
		}
		t := &promql.Table{Name: rel.Name, Time: sp.TimeIndex, Ref: rel}
		for _, i := range sp.Tags {
			t.Tags = append(t.Tags, promql.Column{Name: rel.Columns[i].Name, Index: i})
		}
		for _, i := range sp.Fields {
			if promql.IsNumeric(rel.Columns[i].Type) {
				t.Fields = append(t.Fields, promql.Column{Name: rel.Columns[i].Name, Index: i})
			}
		}
		tables = append(tables, t)
	}
	// One snapshot for every table the query reads (a consistent epoch).
	snap := s.store.Snapshot()
	return &promReader{src: snapshotSource{snap: snap}, snap: snap, tables: tables}, nil
}

type promReader struct {
	src    snapshotSource
	snap   *storage.Snapshot
	tables []*promql.Table
}

func (r *promReader) Tables() []*promql.Table { return r.tables }

// Scan reads only the SSTs whose time range for the table meets
// [minMicros, maxMicros] (storage.ReadOptions.Time), and within them
// seeks past each series' keys outside it (tsdb.SeriesScan: every
// iterator from the query's one snapshot); rows past the TTL are hidden
// by the storage read itself.
func (r *promReader) Scan(ctx context.Context, t *promql.Table, minMicros, maxMicros int64, cols, seriesCols []int) (promql.Rows, error) {
	rel := t.Ref.(*catalog.Relation)
	table := storage.TableID(rel.StateTable)
	opt := storage.ReadOptions{Time: &storage.TimeRange{Min: minMicros, Max: maxMicros, Valid: true}}
	sc := tsdb.NewSeriesScan(rel, func(lower []byte) (storage.Iterator, error) {
		return r.snap.Iter(ctx, table, lower, nil, opt)
	}, minMicros, maxMicros)
	if sc == nil {
		it, _, err := r.src.ScanTime(ctx, rel, minMicros, maxMicros)
		if err != nil {
			return nil, err
		}
		return everyRowNew{it}, nil
	}
	colTypes := make([]types.Type, len(rel.Columns))
	for i, c := range rel.Columns {
		colTypes[i] = c.Type
	}
	sr := &seriesRows{sc: sc, types: colTypes, rel: rel, cols: make([]bool, len(colTypes)), all: make([]bool, len(colTypes))}
	for _, c := range cols {
		if c >= 0 && c < len(colTypes) {
			sr.cols[c], sr.all[c] = true, true
		}
	}
	for _, c := range seriesCols {
		if c >= 0 && c < len(colTypes) {
			sr.all[c] = true
		}
	}
	return sr, nil
}

// seriesRows decodes a time-series table's rows for PromQL: in each row
// only the columns the query reads (the time and the fields), and the
// tags only where the scan's series prefix changes (tsdb.SeriesScan's
// NewSeries), into one reused row. The tags of a series are constant, so
// decoding them (a string copy each) once per series instead of once per
// sample saves most of a whole-range query's decoding.
type seriesRows struct {
	sc        *tsdb.SeriesScan
	types     []types.Type
	rel       *catalog.Relation
	cols, all []bool // decoded in every row; in a series' first row
	row       types.Row
	n         int
}

func (r *seriesRows) Next(ctx context.Context) (types.Row, bool, error) {
	// I5: a long scan notices cancellation.
	if r.n++; r.n%256 == 0 {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
	}
	if !r.sc.Next() {
		if err := r.sc.Err(); err != nil {
			return nil, false, fmt.Errorf("scan %s %s: %w", r.rel.Kind, r.rel.Name, err)
		}
		return nil, false, nil
	}
	newSeries := r.sc.NewSeries()
	want := r.cols
	if newSeries {
		want = r.all
	}
	row, err := types.DecodeValueColumns(r.sc.Value(), r.types, want, r.row)
	if err != nil {
		return nil, false, fmt.Errorf("scan %s %s: corrupt row: %w", r.rel.Kind, r.rel.Name, err)
	}
	r.row = row
	return row, newSeries, nil
}

func (r *seriesRows) Close() { r.sc.Close() }

// everyRowNew adapts a plain row scan (a table SeriesScan does not
// understand): it cannot tell series apart, so every row is a new one.
type everyRowNew struct{ it batch.RowIterator }

func (e everyRowNew) Next(ctx context.Context) (types.Row, bool, error) {
	row, err := e.it.Next(ctx)
	return row, true, err
}

func (e everyRowNew) Close() { e.it.Close() }

func (r *promReader) Close() { r.snap.Close() }
