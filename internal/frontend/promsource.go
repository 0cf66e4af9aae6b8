package frontend

import (
	"context"

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
func (r *promReader) Scan(ctx context.Context, t *promql.Table, minMicros, maxMicros int64) (promql.Rows, error) {
	rel := t.Ref.(*catalog.Relation)
	table := storage.TableID(rel.StateTable)
	opt := storage.ReadOptions{Time: &storage.TimeRange{Min: minMicros, Max: maxMicros, Valid: true}}
	sc := tsdb.NewSeriesScan(rel, func(lower []byte) (storage.Iterator, error) {
		return r.snap.Iter(ctx, table, lower, nil, opt)
	}, minMicros, maxMicros)
	if sc == nil {
		it, _, err := r.src.ScanTime(ctx, rel, minMicros, maxMicros)
		return it, err
	}
	colTypes := make([]types.Type, len(rel.Columns))
	for i, c := range rel.Columns {
		colTypes[i] = c.Type
	}
	return &storageRows{it: sc, types: colTypes, rel: rel}, nil
}

func (r *promReader) Close() { r.snap.Close() }
