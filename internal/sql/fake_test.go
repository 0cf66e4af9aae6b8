package sql

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// fakeDB is an in-memory Catalog and DataSource.
type fakeDB struct {
	rels map[string]*catalog.Relation
	rows map[string][]types.Row
}

func newFakeDB() *fakeDB {
	return &fakeDB{rels: map[string]*catalog.Relation{}, rows: map[string][]types.Row{}}
}

func (f *fakeDB) ResolveRelation(schema, name string) (*catalog.Relation, error) {
	if schema != "" && schema != "public" {
		return nil, sqlerr.Errorf(sqlerr.InvalidSchemaName, "schema \"%s\" does not exist", schema)
	}
	r, ok := f.rels[name]
	if !ok {
		return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "relation \"%s\" does not exist", name)
	}
	return r, nil
}

type sliceIter struct {
	rows []types.Row
	i    int
}

func (s *sliceIter) Next(context.Context) (types.Row, error) {
	if s.i >= len(s.rows) {
		return nil, nil
	}
	s.i++
	return s.rows[s.i-1], nil
}
func (s *sliceIter) Close() {}

func (f *fakeDB) Scan(_ context.Context, rel *catalog.Relation) (batch.RowIterator, error) {
	rows, ok := f.rows[rel.Name]
	if !ok {
		return nil, fmt.Errorf("table %d has been dropped", rel.ID)
	}
	return &sliceIter{rows: rows}, nil
}

// addTable registers a table; cols are "name type" pairs.
func (f *fakeDB) addTable(name string, cols ...string) *catalog.Relation {
	r := &catalog.Relation{ID: catalog.ObjectID(len(f.rels) + 1), Name: name, Kind: catalog.KindTable}
	for _, c := range cols {
		parts := strings.SplitN(c, " ", 2)
		st, err := parser.ParseOne("select null::" + parts[1])
		if err != nil {
			panic(err)
		}
		tc := st.AST.GetSelectStmt().TargetList[0].GetResTarget().Val.GetTypeCast()
		t, err := resolveType(tc)
		if err != nil {
			panic(err)
		}
		r.Columns = append(r.Columns, catalog.Column{Name: parts[0], Type: t})
	}
	f.rels[name] = r
	f.rows[name] = nil
	return r
}

func (f *fakeDB) env() *batch.Env {
	return &batch.Env{Data: f, Eval: expr.EvalContext{Location: time.UTC, StatementTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
}

// query runs text and renders rows as PostgreSQL's text output, "NULL" for
// NULL, columns joined by "|".
func (f *fakeDB) query(ctx context.Context, text string, params ...types.Datum) ([]string, []Column, error) {
	st, err := parser.ParseOne(text)
	if err != nil {
		return nil, nil, err
	}
	p, err := Prepare(f, st, nil)
	if err != nil {
		return nil, nil, err
	}
	it, err := p.Execute(ctx, f.env(), params)
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	var out []string
	for {
		row, err := it.Next(ctx)
		if err != nil {
			return nil, nil, err
		}
		if row == nil {
			return out, p.Columns, nil
		}
		out = append(out, formatRow(row, p.Columns))
	}
}

func formatRow(row types.Row, cols []Column) string {
	parts := make([]string, len(row))
	for i, d := range row {
		if d.IsNull() {
			parts[i] = "NULL"
		} else {
			parts[i] = types.FormatText(d, cols[i].Type, nil)
		}
	}
	return strings.Join(parts, "|")
}

func mustParse(t *testing.T, q string) *parser.Statement {
	t.Helper()
	st, err := parser.ParseOne(q)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
