package frontend

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/ingest"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/tsdb"
	"github.com/runneldb/runnel/internal/types"
)

// IngestWriter is the frontend's side of the HTTP ingest (internal/ingest):
// it maps a parsed request onto time-series tables of the dev database.
func (s *Frontend) IngestWriter() ingest.Writer { return ingestWriter{s} }

type ingestWriter struct{ s *Frontend }

// ingestDDL serialises the table creations and column additions of
// concurrent ingest requests (a second request finds what the first made).
var ingestDDL sync.Mutex

// ingestDatabase is the database HTTP writes go to; their db parameter
// names a schema in it (GreptimeDB's database).
const ingestDatabase = "dev"

// Write applies r: every point is checked against the table it goes to
// (or the one it will create) before anything is created or written, so a
// bad point fails the request whole; then missing tables and columns are
// made, each table's rows are written as one statement, and Write returns
// once every epoch they went to is committed (I7).
func (w ingestWriter) Write(ctx context.Context, r *ingest.Request) error {
	s := w.s
	db, err := s.catalog.DatabaseByName(ingestDatabase)
	if err != nil {
		return sqlerr.Errorf(sqlerr.InvalidCatalogName, "database %q does not exist", ingestDatabase)
	}
	schema := r.Schema
	if schema == "" {
		schema = "public"
	}
	sc, err := s.catalog.SchemaByName(db.ID, schema)
	if err != nil {
		return sqlerr.Errorf(sqlerr.InvalidSchemaName, "schema %q does not exist", schema)
	}
	// 1. Check every point against the table's columns (existing or to
	// be added) before any change.
	plans := make([]*ingestPlan, len(r.Tables))
	for i, tw := range r.Tables {
		rel, _ := s.catalog.RelationByName(sc.ID, tw.Table)
		p, err := planIngest(r, tw, rel)
		if err != nil {
			return err
		}
		plans[i] = p
	}
	// 2. Create the missing tables, add the missing columns.
	ss := s.ingestSession(db, sc)
	for _, p := range plans {
		if err := ss.applyIngestDDL(ctx, sc, r, p); err != nil {
			return err
		}
	}
	// 3. Write each table's rows, then wait for their epochs (I7).
	var epochs []uint64
	for _, p := range plans {
		ep, err := s.writeIngest(ctx, p)
		if err != nil {
			return err
		}
		if !slices.Contains(epochs, ep) {
			epochs = append(epochs, ep)
		}
	}
	return ss.waitWritten(ctx, epochs)
}

// ingestPlan is one table's part of a request.
type ingestPlan struct {
	tw      *ingest.TableWrite
	rel     *catalog.Relation // nil: to create
	newTags []string          // tag columns to add, first-seen order
	newCols []catalog.Column  // field columns to add
}

// planIngest checks tw's points against rel (nil: a table to create) and
// lists the columns to add. A field whose values do not fit its column,
// or a name used both as a tag and as a field, fails with 22000/42804 and
// names the line.
func planIngest(r *ingest.Request, tw *ingest.TableWrite, rel *catalog.Relation) (*ingestPlan, error) {
	p := &ingestPlan{tw: tw, rel: rel}
	kind := map[string]types.Type{} // column name -> type, for fields
	isTag := map[string]bool{}
	timeCol := r.TimeColumn
	if rel != nil {
		sp, ok := tsdb.SpecOf(rel)
		if !ok {
			return nil, sqlerr.Errorf(sqlerr.WrongObjectType, "%s: table %q is not a time-series table (it has no time_index)", r.Protocol, tw.Table)
		}
		timeCol = rel.Columns[sp.TimeIndex].Name
		for _, t := range sp.Tags {
			isTag[rel.Columns[t].Name] = true
		}
		for _, f := range sp.Fields {
			kind[rel.Columns[f].Name] = rel.Columns[f].Type
		}
	}
	for _, pt := range tw.Points {
		for _, t := range pt.Tags {
			if isTag[t.Key] {
				continue
			}
			if _, ok := kind[t.Key]; ok || t.Key == timeCol {
				return nil, lineErr(sqlerr.DuplicateColumn, r, pt, "tag %q of table %q is a field or time column", t.Key, tw.Table)
			}
			isTag[t.Key] = true
			p.newTags = append(p.newTags, t.Key)
		}
		for _, f := range pt.Fields {
			ct, ok := kind[f.Key]
			if !ok {
				if isTag[f.Key] || f.Key == timeCol {
					return nil, lineErr(sqlerr.DuplicateColumn, r, pt, "field %q of table %q is a tag or time column", f.Key, tw.Table)
				}
				ct = fieldType(f.Value)
				kind[f.Key] = ct
				p.newCols = append(p.newCols, catalog.Column{Name: f.Key, Type: ct})
				continue
			}
			if _, err := fieldDatum(f.Value, ct); err != nil {
				return nil, lineErr(sqlerr.DatatypeMismatch, r, pt, "field %q of table %q: %v", f.Key, tw.Table, err)
			}
		}
	}
	return p, nil
}

func lineErr(code string, r *ingest.Request, pt ingest.Point, format string, args ...any) error {
	what := "line"
	if r.Protocol != "line protocol" {
		what = "series"
	}
	return sqlerr.Errorf(code, "%s %d: %s", what, pt.Line, fmt.Sprintf(format, args...))
}

// fieldType is the column type a field's first value creates.
func fieldType(d types.Datum) types.Type {
	switch d.Kind() {
	case types.KindInt64:
		return types.Int64
	case types.KindVarchar:
		return types.Text
	case types.KindBool:
		return types.Bool
	}
	return types.Float64
}

// fieldDatum converts a field value to its column's type: an integer
// goes into a floating-point column, nothing else converts.
func fieldDatum(d types.Datum, t types.Type) (types.Datum, error) {
	switch {
	case d.Kind() == t.Kind:
		return d, nil
	case d.Kind() == types.KindInt64 && t.Kind == types.KindFloat64:
		return types.DFloat64(float64(d.Int())), nil
	}
	return d, fmt.Errorf("a %s value does not fit the column's type %s", fieldType(d).Name(), t.Name())
}

// ingestSession is a session of the ingest's DDL and waits.
func (s *Frontend) ingestSession(db *catalog.Database, sc *catalog.Schema) *session {
	ss := &session{s: s, db: db, settings: map[string]string{}, client: discardClient{}}
	for k, v := range settingDefaults {
		ss.settings[k] = v
	}
	ss.settings["search_path"] = quoteIdent(sc.Name)
	ss.user = &catalog.User{Name: db.Owner, Superuser: true}
	return ss
}

type discardClient struct{}

func (discardClient) Notice(pgwire.Notice)              {}
func (discardClient) SetParameterStatus(string, string) {}

// applyIngestDDL creates p's table or adds its new columns, under
// ingestDDL; p.rel is the table as it is afterwards.
func (ss *session) applyIngestDDL(ctx context.Context, sc *catalog.Schema, r *ingest.Request, p *ingestPlan) error {
	s := ss.s
	if p.rel != nil && len(p.newTags) == 0 && len(p.newCols) == 0 {
		return nil
	}
	ingestDDL.Lock()
	defer ingestDDL.Unlock()
	rel, err := s.catalog.RelationByName(sc.ID, p.tw.Table)
	if err != nil {
		// Create it: tags (text), the time index, fields; keyed by series.
		ct := &binder.CreateTable{Schema: sc.Name, Name: p.tw.Table, Options: map[string]string{
			tsdb.OptTimeIndex: r.TimeColumn, tsdb.OptTags: strings.Join(p.newTags, ","),
		}}
		for _, t := range p.newTags {
			ct.Columns = append(ct.Columns, binder.ColumnDef{Name: t, Type: types.Text})
		}
		ct.Columns = append(ct.Columns, binder.ColumnDef{Name: r.TimeColumn, Type: types.Timestamptz, NotNull: true})
		for _, c := range p.newCols {
			ct.Columns = append(ct.Columns, binder.ColumnDef{Name: c.Name, Type: c.Type})
		}
		for k, v := range r.Hints {
			if k == tsdb.OptAppendMode || k == tsdb.OptTTL || k == tsdb.OptTimeWindow {
				ct.Options[k] = v
			}
		}
		if _, err := ss.createTable(ctx, ct); err != nil {
			return err
		}
		p.rel, err = s.catalog.RelationByName(sc.ID, p.tw.Table)
		return err
	}
	// Added meanwhile by another request: re-plan against it.
	np, err := planIngest(r, p.tw, rel)
	if err != nil {
		return err
	}
	*p = *np
	if len(p.newTags) == 0 && len(p.newCols) == 0 {
		return nil
	}
	p.rel, err = s.addIngestColumns(ctx, rel, p.newTags, p.newCols)
	return err
}

// addIngestColumns adds nullable columns at the end of a time-series
// table: stored rows decode with NULL in them (types.DecodeValueRow), and
// a series-keyed table's key does not change (a NULL tag is not in the
// series id). The table's actor is stopped at a barrier and started again
// with the new columns; a table that views read is refused (their plans
// hold its old columns).
func (s *Frontend) addIngestColumns(ctx context.Context, rel *catalog.Relation, tags []string, cols []catalog.Column) (*catalog.Relation, error) {
	if deps := s.catalog.Dependents(rel.ID); len(deps) > 0 {
		names := append(append([]string(nil), tags...), colNames(cols)...)
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "table %q has no column %s, and columns cannot be added to a table that %s %q reads",
			rel.Name, strings.Join(names, ", "), deps[0].Kind, deps[0].Name).
			WithHint("Create the columns before the views, or write only the existing ones.")
	}
	if len(tags) > 0 {
		if _, ok := rel.Options[tsdb.OptTags]; !ok {
			return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "table %q has no tag column %s: the tags of a table created with PRIMARY KEY are fixed", rel.Name, strings.Join(tags, ", "))
		}
	}
	nr := *rel
	nr.Columns = slices.Clone(rel.Columns)
	nr.Options = maps.Clone(rel.Options)
	for _, t := range tags {
		nr.Columns = append(nr.Columns, catalog.Column{Name: t, Type: types.Text})
	}
	nr.Columns = append(nr.Columns, cols...)
	if len(tags) > 0 {
		nr.Options[tsdb.OptTags] = strings.Join(append(strings.Split(rel.Options[tsdb.OptTags], ","), tags...), ",")
		nr.Options[tsdb.OptTags] = strings.Trim(nr.Options[tsdb.OptTags], ",")
	}
	if err := s.meta.ReplaceTableColumns(ctx, rel, &nr); err != nil {
		return nil, err
	}
	return &nr, nil
}

func colNames(cols []catalog.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// writeIngest writes one table's points as one statement and returns its
// epoch. Append mode appends without reading; otherwise a row with the
// same series and time replaces the earlier one.
func (s *Frontend) writeIngest(ctx context.Context, p *ingestPlan) (uint64, error) {
	rel := p.rel
	sp, _ := tsdb.SpecOf(rel)
	col := make(map[string]int, len(rel.Columns))
	for i, c := range rel.Columns {
		col[c.Name] = i
	}
	fill := tsdb.SeriesFiller(rel)
	rows := make([]types.Row, len(p.tw.Points))
	// One backing array for the request's rows instead of one per row.
	cells := make([]types.Datum, len(p.tw.Points)*len(rel.Columns))
	for i, pt := range p.tw.Points {
		row := types.Row(cells[i*len(rel.Columns) : (i+1)*len(rel.Columns) : (i+1)*len(rel.Columns)])
		for j := range row {
			row[j] = types.NullDatum
		}
		for _, t := range pt.Tags {
			if t.Value != "" {
				row[col[t.Key]] = types.DVarchar(t.Value)
			}
		}
		for _, f := range pt.Fields {
			c := col[f.Key]
			d, err := fieldDatum(f.Value, rel.Columns[c].Type)
			if err != nil { // checked by planIngest; the table may have changed since
				return 0, sqlerr.Errorf(sqlerr.DatatypeMismatch, "line %d: field %q: %v", pt.Line, f.Key, err)
			}
			row[c] = d
		}
		row[sp.TimeIndex] = timeDatum(rel.Columns[sp.TimeIndex].Type, pt.Time)
		fillRowID(rel, row)
		if fill != nil {
			fill(row)
		}
		rows[i] = row
	}
	return s.dml.Write(ctx, rel, func(ctx context.Context, w *exec.TableWriter) error {
		var tk int
		for _, r := range rows {
			if tk++; tk%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if sp.AppendMode {
				w.Append(r)
			} else if err := w.Upsert(ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func timeDatum(t types.Type, micros int64) types.Datum {
	if t.Kind == types.KindTimestamp {
		return types.DTimestamp(micros)
	}
	return types.DTimestamptz(micros)
}
