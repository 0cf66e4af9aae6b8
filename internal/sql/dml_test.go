package sql

import (
	"context"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func prepare(t *testing.T, f *fakeDB, q string) *Prepared {
	t.Helper()
	p, err := Prepare(f, mustParse(t, q), nil)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return p
}

func runPlan(f *fakeDB, n plan.Node) ([]types.Row, error) {
	return batch.Collect(context.Background(), f.env(), n)
}

func TestCreateTable(t *testing.T) {
	f := newFakeDB()
	p := prepare(t, f, "create table if not exists s.t (a int, b varchar(10) not null default 'x', c numeric(10,2), primary key (a))")
	ct := p.Bound.(*binder.CreateTable)
	if ct.Schema != "s" || ct.Name != "t" || !ct.IfNotExists || len(ct.Columns) != 3 {
		t.Fatalf("got %+v", ct)
	}
	if ct.PK[0] != 0 || !ct.Columns[0].NotNull || !ct.Columns[1].NotNull || ct.Columns[1].DefaultText != "'x'" {
		t.Fatalf("got %+v", ct.Columns)
	}
	if ct.Columns[1].Type.Mod != 10 || ct.Columns[2].Type.Name() != "numeric(10,2)" {
		t.Fatalf("types %v %v", ct.Columns[1].Type, ct.Columns[2].Type.Name())
	}
	p = prepare(t, f, "create table k (id bigint primary key, v int) with (connector = 'kafka', topic = 'x')")
	if ct := p.Bound.(*binder.CreateTable); ct.Options["connector"] != "kafka" || ct.PK[0] != 0 {
		t.Fatalf("got %+v", ct)
	}
	if _, err := Prepare(f, mustParse(t, "create table x (a int, a int)"), nil); sqlerr.Code(err) != sqlerr.DuplicateColumn {
		t.Fatalf("got %v", err)
	}
}

func dmlDB() *fakeDB {
	f := newFakeDB()
	r := f.addTable("t", "a int", "b text", "c int")
	r.Columns[2].NotNull = true
	r.Columns[1].Default = "'dflt'"
	r.PK = []int{0}
	f.rows["t"] = []types.Row{
		{types.DInt32(1), types.DVarchar("x"), types.DInt32(10)},
		{types.DInt32(2), types.DVarchar("y"), types.DInt32(20)},
	}
	f.addTable("u", "a int", "d text")
	f.rows["u"] = []types.Row{{types.DInt32(2), types.DVarchar("two")}}
	return f
}

func fmtRows(rows []types.Row, ts []types.Type) string {
	cols := make([]Column, len(ts))
	for i, t := range ts {
		cols[i].Type = t
	}
	var out []string
	for _, r := range rows {
		out = append(out, formatRow(r, cols))
	}
	return strings.Join(out, ";")
}

func TestInsert(t *testing.T) {
	f := dmlDB()
	p := prepare(t, f, "insert into t (c, a) values (5, 7), ('6', default) returning a + 1 as x, *")
	ins := p.Bound.(*binder.Insert)
	rows, err := runPlan(f, ins.Source)
	if err != nil {
		t.Fatal(err)
	}
	ts := []types.Type{types.Int32, types.Text, types.Int32}
	if got := fmtRows(rows, ts); got != "7|dflt|5;NULL|dflt|6" {
		t.Fatalf("got %s", got)
	}
	if len(p.Columns) != 4 || p.Columns[0].Name != "x" || p.Columns[3].Name != "c" {
		t.Fatalf("returning columns %v", p.Columns)
	}
	// NOT NULL is checked when the rows are produced.
	ins = prepare(t, f, "insert into t (a) values (9)").Bound.(*binder.Insert)
	if _, err := runPlan(f, ins.Source); sqlerr.Code(err) != sqlerr.NotNullViolation ||
		!strings.Contains(err.Error(), `null value in column "c" of relation "t" violates not-null constraint`) {
		t.Fatalf("got %v", err)
	}
	ins = prepare(t, f, "insert into t select a + 10, d, a from u").Bound.(*binder.Insert)
	rows, err = runPlan(f, ins.Source)
	if err != nil || fmtRows(rows, ts) != "12|two|2" {
		t.Fatalf("got %v %v", fmtRows(rows, ts), err)
	}
	if _, err := Prepare(f, mustParse(t, "insert into t values (1, 'a', 1, 4)"), nil); sqlerr.Code(err) != sqlerr.SyntaxError {
		t.Fatalf("got %v", err)
	}
	if _, err := Prepare(f, mustParse(t, "insert into t (nope) values (1)"), nil); sqlerr.Code(err) != sqlerr.UndefinedColumn {
		t.Fatalf("got %v", err)
	}
	if _, err := Prepare(f, mustParse(t, "insert into t (a, c) values ('1'::bool, 1)"), nil); sqlerr.Code(err) != sqlerr.DatatypeMismatch {
		t.Fatalf("got %v", err)
	}
	oc := prepare(t, f, "insert into t values (1, 'z', 3) on conflict (a) do update set c = t.c + excluded.c where t.b <> 'q'").Bound.(*binder.Insert).OnConflict
	if oc == nil || oc.Action != binder.DoUpdate || oc.Cols[0] != 2 || oc.Where == nil {
		t.Fatalf("got %+v", oc)
	}
	if _, err := Prepare(f, mustParse(t, "insert into t values (1, 'z', 3) on conflict (b) do nothing"), nil); sqlerr.Code(err) != sqlerr.InvalidColumnReference {
		t.Fatalf("got %v", err)
	}
	// Parameter types come from the target columns.
	p = prepare(t, f, "insert into t values ($1, $2, $3)")
	if p.ParamTypes[0] != types.Int32 || p.ParamTypes[1] != types.Text || p.ParamTypes[2] != types.Int32 {
		t.Fatalf("params %v", p.ParamTypes)
	}
}

func TestUpdateDelete(t *testing.T) {
	f := dmlDB()
	up := prepare(t, f, "update t set c = c * 10, b = default where a = 2").Bound.(*binder.Update)
	rows, err := runPlan(f, up.Plan)
	ts := []types.Type{types.Int32, types.Text, types.Int32, types.Int32, types.Text, types.Int32}
	if err != nil || fmtRows(rows, ts) != "2|y|20|2|dflt|200" {
		t.Fatalf("got %s %v", fmtRows(rows, ts), err)
	}
	up = prepare(t, f, "update t set (b, c) = (u.d, 0) from u where t.a = u.a").Bound.(*binder.Update)
	rows, err = runPlan(f, up.Plan)
	if err != nil || fmtRows(rows, ts) != "2|y|20|2|two|0" {
		t.Fatalf("got %s %v", fmtRows(rows, ts), err)
	}
	up = prepare(t, f, "update t set c = null").Bound.(*binder.Update)
	if _, err := runPlan(f, up.Plan); sqlerr.Code(err) != sqlerr.NotNullViolation {
		t.Fatalf("got %v", err)
	}
	del := prepare(t, f, "delete from t where c > 15 returning b").Bound.(*binder.Delete)
	rows, err = runPlan(f, del.Plan)
	if err != nil || fmtRows(rows, ts[:3]) != "2|y|20" || del.ReturningSchema[0].Name != "b" {
		t.Fatalf("got %s %v", fmtRows(rows, ts[:3]), err)
	}
	del = prepare(t, f, "delete from t using u where t.a = u.a").Bound.(*binder.Delete)
	rows, err = runPlan(f, del.Plan)
	if err != nil || fmtRows(rows, ts[:3]) != "2|y|20" {
		t.Fatalf("got %s %v", fmtRows(rows, ts[:3]), err)
	}
}

func TestOtherStatements(t *testing.T) {
	f := dmlDB()
	cv := prepare(t, f, "create materialized view mv (x, total) as select b, sum(c) from t group by b").Bound.(*binder.CreateView)
	if !cv.Materialized || cv.Name != "mv" || cv.Columns[0].Name != "x" || cv.Columns[1].Name != "total" || cv.Columns[1].Type != types.Int64 {
		t.Fatalf("got %+v", cv)
	}
	if cv.Query != "select b, sum(c) from t group by b" {
		t.Fatalf("query text %q", cv.Query)
	}
	// A subquery without an alias (PostgreSQL 16) is stored as written:
	// printing the bound tree back to SQL with pg_query's Deparse
	// segfaulted here (issue 13).
	cv = prepare(t, f, "create materialized view mv as select b from (select b, c from t) /* x */ where c > 1 with data").Bound.(*binder.CreateView)
	if cv.Query != "select b from (select b, c from t) /* x */ where c > 1" {
		t.Fatalf("query text %q", cv.Query)
	}
	d := prepare(t, f, "drop materialized view if exists s.mv, mv2 cascade").Bound.(*binder.Drop)
	if d.Type != binder.ObjMaterializedView || !d.IfExists || !d.Cascade || d.Names[0] != (binder.QualName{Schema: "s", Name: "mv"}) {
		t.Fatalf("got %+v", d)
	}
	u := prepare(t, f, "create user bob with password 'pw' superuser").Bound.(*binder.CreateUser)
	if u.Name != "bob" || *u.Password != "pw" || !u.Flags["superuser"] || !u.Flags["canlogin"] {
		t.Fatalf("got %+v", u)
	}
	s := prepare(t, f, "set search_path to a, b").Bound.(*binder.SetVar)
	if s.Name != "search_path" || s.Value != "a, b" {
		t.Fatalf("got %+v", s)
	}
	if _, ok := prepare(t, f, "begin").Bound.(*binder.Transaction); !ok {
		t.Fatal("begin")
	}
	c := prepare(t, f, "copy t (a, b) from stdin with (format csv, header true)").Bound.(*binder.Copy)
	if !c.From || c.Format != "csv" || !c.Header || len(c.Columns) != 2 || c.Delimiter != "," {
		t.Fatalf("got %+v", c)
	}
	if _, ok := prepare(t, f, "flush").Bound.(*binder.Runnel); !ok {
		t.Fatal("flush")
	}
	f.rels["v"] = &catalog.Relation{Name: "v", Kind: catalog.KindView, Definition: "select a, c from t where a > 1",
		Columns: []catalog.Column{{Name: "a", Type: types.Int32}, {Name: "c", Type: types.Int32}}}
	got, _, err := f.query(context.Background(), "select * from v")
	if err != nil || strings.Join(got, ";") != "2|20" {
		t.Fatalf("view: %v %v", got, err)
	}
}

func TestCreateSourceBinding(t *testing.T) {
	f := newFakeDB()
	p := prepare(t, f, `create source bid (auction bigint, date_time timestamp, watermark for date_time as date_time - interval '4' second)
		with (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.split.num = '2') format plain encode json`)
	ct := p.Bound.(*binder.CreateTable)
	if !ct.Source || !ct.AppendOnly || ct.Options["nexmark.table.type"] != "Bid" || ct.Options["connector"] != "nexmark" || ct.Encode != "JSON" {
		t.Fatalf("got %+v", ct)
	}
	if ct.Watermark == nil || ct.Watermark.Column != 1 || ct.Watermark.Expr.Type() != types.Timestamp {
		t.Fatalf("watermark %+v", ct.Watermark)
	}
	if _, err := Prepare(f, mustParse(t, "create source s (a int, watermark for a as a) with (connector = 'x')"), nil); sqlerr.Code(err) != sqlerr.DatatypeMismatch {
		t.Fatalf("got %v", err)
	}
}

func TestKnownBugFixes(t *testing.T) {
	f := dmlDB()
	f.rels["t"].Columns[2].NotNull = false
	// INSERT without a column list and fewer values: defaults for the rest.
	ins := prepare(t, f, "insert into t values (1)").Bound.(*binder.Insert)
	rows, err := runPlan(f, ins.Source)
	if err != nil || fmtRows(rows, []types.Type{types.Int32, types.Text, types.Int32}) != "1|dflt|NULL" {
		t.Fatalf("got %v %v", rows, err)
	}
	// -2147483648 is an integer literal.
	p := prepare(t, f, "select -2147483648")
	if p.Columns[0].Type != types.Int32 {
		t.Fatalf("got %v", p.Columns[0].Type)
	}
	// Views record the relations they name, views included.
	f.rels["v"] = &catalog.Relation{ID: 77, Name: "v", Kind: catalog.KindView, Definition: "select a from t",
		Columns: []catalog.Column{{Name: "a", Type: types.Int32}}}
	cv := prepare(t, f, "create view vv as select a from v join u using (a)").Bound.(*binder.CreateView)
	if len(cv.DependsOn) != 2 || cv.DependsOn[0] != 77 || cv.DependsOn[1] != f.rels["u"].ID {
		t.Fatalf("depends on %v", cv.DependsOn)
	}
}
