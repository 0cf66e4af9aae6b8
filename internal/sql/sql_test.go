package sql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func smallDB() *fakeDB {
	f := newFakeDB()
	f.addTable("t", "a int", "b text", "c int")
	f.rows["t"] = []types.Row{
		{types.DInt32(1), types.DVarchar("x"), types.DInt32(10)},
		{types.DInt32(2), types.DVarchar("y"), types.DInt32(20)},
		{types.DInt32(3), types.DVarchar("x"), types.NullDatum},
		{types.NullDatum, types.DVarchar("z"), types.DInt32(40)},
	}
	f.addTable("u", "a int", "d text")
	f.rows["u"] = []types.Row{
		{types.DInt32(1), types.DVarchar("one")},
		{types.DInt32(3), types.DVarchar("three")},
		{types.DInt32(5), types.DVarchar("five")},
	}
	return f
}

func TestQueries(t *testing.T) {
	f := smallDB()
	cases := []struct {
		q    string
		want string // rows joined by ";"
	}{
		{"select 1", "1"},
		{"select 'abc', 1+2 as three", "abc|3"},
		{"select a, b from t where a > 1 order by a", "2|y;3|x"},
		{"select * from t order by a nulls first", "NULL|z|40;1|x|10;2|y|20;3|x|NULL"},
		{"select b, count(*), sum(c) from t group by b order by b", "x|2|10;y|1|20;z|1|40"},
		{"select count(*) from t where a > 100", "0"},
		{"select b from t group by 1 having count(*) > 1", "x"},
		{"select t.a, u.d from t join u on t.a = u.a order by 1", "1|one;3|three"},
		{"select t.a, u.d from t left join u using (a) order by t.a", "1|one;2|NULL;3|three;NULL|NULL"},
		{"select a, d from t full join u using (a) order by a", "1|one;2|NULL;3|three;5|five;NULL|NULL"},
		{"select a from t where a in (select a from u) order by a", "1;3"},
		{"select a from t where a not in (select a from u) order by a", "2"},
		{"select a from t where a not in (select a from t) order by a", ""},
		{"select a from t where exists (select 1 from u where u.a = t.a) order by a", "1;3"},
		// An ON condition naming the enclosing query's column (found by
		// sqlsmith: the semi-join rewrite left it an outer reference
		// without an outer row, XX000).
		{"select a from t where exists (select 1 from u join u v on v.a > t.a and u.a = v.a) order by a", "1;2;3"},
		{"select a from t where not exists (select 1 from u right join u v on u.a = t.a) order by a", ""},
		{"select a from t where exists (select 1 from u join u v on u.a = v.a where u.a = t.a) order by a", "1;3"},
		{"select a, (select d from u where u.a = t.a) from t order by a", "1|one;2|NULL;3|three;NULL|NULL"},
		{"select a from t union select a from u order by 1", "1;2;3;5;NULL"},
		{"select a from t intersect select a from u order by 1", "1;3"},
		{"select a from t except all select a from u order by 1", "2;NULL"},
		{"with x as (select a*2 as y from t) select y from x where y > 2 order by y", "4;6"},
		{"select distinct b from t order by b desc", "z;y;x"},
		{"select distinct on (b) b, a from t order by b, a desc", "x|3;y|2;z|NULL"},
		{"select * from (values (1, 'a'), (2, 'b')) v(n, s) order by n desc limit 1", "2|b"},
		{"select g from generate_series(1, 5) g where g % 2 = 1", "1;3;5"},
		{"select a, row_number() over (order by a), sum(c) over (order by a) from t where a is not null order by a", "1|1|10;2|2|30;3|3|30"},
		{"select b, a, rank() over w from t window w as (partition by b order by a) order by b, a", "x|1|1;x|3|2;y|2|1;z|NULL|1"},
		{"select a from t order by a limit 2 offset 1", "2;3"},
		{"select a from t order by a fetch first 1 rows only", "1"},
		{"select b, sum(a) filter (where a > 1) from t group by b order by b", "x|3;y|2;z|NULL"},
		{"select count(distinct b) from t", "3"},
		{"select count(*) from t group by ()", "4"},
		{"select string_agg(b, ',' order by b) from t", "x,x,y,z"},
		{"select x.a from t as x cross join u where x.a = u.a and u.d = 'three'", "3"},
		{"select sum(c) over (), a from t where a = 1", "10|1"},
		{"select b, sum(c), rank() over (order by sum(c) desc) from t group by b order by b", "x|10|3;y|20|2;z|40|1"},
		{"select a from t where (a, b) = (1, 'x')", "1"},
		{"select a from t where (a, b) <> (1, 'x') order by a", "2;3;NULL"},
	}
	for _, c := range cases {
		got, _, err := f.query(context.Background(), c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if g := strings.Join(got, ";"); g != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.q, g, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	f := smallDB()
	cases := []struct {
		q, code, msg string
	}{
		{"select nope from t", sqlerr.UndefinedColumn, `column "nope" does not exist`},
		{"select a from t, u", sqlerr.AmbiguousColumn, `column reference "a" is ambiguous`},
		{"select * from missing", sqlerr.UndefinedTable, `relation "missing" does not exist`},
		{"select b, count(*) from t", sqlerr.GroupingError, `column "t.b" must appear in the GROUP BY clause or be used in an aggregate function`},
		{"select a from t where count(*) > 1", sqlerr.GroupingError, "aggregate functions are not allowed in WHERE"},
		{"select (select a from t)", sqlerr.CardinalityViolation, "more than one row returned by a subquery used as an expression"},
		{"select a from t union select a, b from t", sqlerr.SyntaxError, "each UNION query must have the same number of columns"},
		{"select distinct a from t order by c", sqlerr.InvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list"},
		{"select a from t order by 5", sqlerr.InvalidColumnReference, "ORDER BY position 5 is not in select list"},
		{"select z.a from t", sqlerr.UndefinedTable, `missing FROM-clause entry for table "z"`},
		{"select t.nope from t", sqlerr.UndefinedColumn, "column t.nope does not exist"},
		{"create index i on t using hash (a)", sqlerr.FeatureNotSupported, `index access method "hash" is not supported`},
		{"truncate t", sqlerr.FeatureNotSupported, "TRUNCATE is not supported"},
	}
	for _, c := range cases {
		_, _, err := f.query(context.Background(), c.q)
		e := sqlerr.From(err)
		if e == nil || e.Code != c.code || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%s: got %v (%s); want %s %q", c.q, err, sqlerr.Code(err), c.code, c.msg)
		}
	}
	// Positions point at the offending name.
	_, _, err := f.query(context.Background(), "select a, nope from t")
	if e := sqlerr.From(err); e == nil || e.Position != 11 {
		t.Errorf("position: got %+v; want 11", err)
	}
}

func TestParamsAndDescribe(t *testing.T) {
	f := smallDB()
	st := mustParse(t, "select a, b from t where a = $1 and b <> $2")
	p, err := Prepare(f, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ParamTypes) != 2 || p.ParamTypes[0] != types.Int32 || p.ParamTypes[1].Kind != types.KindVarchar {
		t.Fatalf("param types %v", p.ParamTypes)
	}
	if len(p.Columns) != 2 || p.Columns[0].Name != "a" || p.Columns[1].Type != types.Text {
		t.Fatalf("columns %v", p.Columns)
	}
	got, _, err := f.query(context.Background(), "select a, b from t where a = $1 and b <> $2", types.DInt32(1), types.DVarchar("q"))
	if err != nil || strings.Join(got, ";") != "1|x" {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestExplainShowsRewrites(t *testing.T) {
	f := smallDB()
	cases := []struct{ q, want string }{
		{"explain select a from t where a in (select a from u)", "Semi Join keys: t.a = u.a"},
		{"explain select a from t where a not in (select a from u)", "Anti Join (null-aware) keys: t.a = u.a"},
		{"explain select a from t where exists (select 1 from u where u.a = t.a and u.d <> t.b)", "Semi Join keys: t.a = u.a cond:"},
		{"explain select a from t where not exists (select 1 from u where u.a = t.a)", "Anti Join keys: t.a = u.a"},
		// correlated NOT IN stays a subquery expression
		{"explain select a from t where a not in (select a from u where u.d = t.b)", "ANY(subquery)"},
		{"explain select t.a from t join u on t.a = u.a where t.c > 1 and u.d = 'x'", "Scan u filter:"},
		{"explain select t.a from t join u on t.a + 1 = u.a", "Inner Join keys:"},
		{"explain select a from t order by a limit 1", "TopN"},
		{"explain select a from t where a = 1 + 2 * 3", "t.a = 7::integer"},
	}
	for _, c := range cases {
		got, _, err := f.query(context.Background(), c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if !strings.Contains(strings.Join(got, "\n"), c.want) {
			t.Errorf("%s:\n%s\nwant it to contain %q", c.q, strings.Join(got, "\n"), c.want)
		}
	}
}

func TestLiteralErrorPosition(t *testing.T) {
	f := smallDB()
	// PostgreSQL: ERROR: invalid input syntax for type integer: "x", at the literal.
	_, _, err := f.query(context.Background(), "select a from t where a = 'x'")
	if e := sqlerr.From(err); e == nil || e.Code != sqlerr.InvalidTextRepresentation || e.Position != 27 {
		t.Fatalf("got %+v", err)
	}
	if _, _, err := f.query(context.Background(), "select b from t where b = 'x' collate pg_catalog.default"); err != nil {
		t.Fatal(err)
	}
}

type funcCatalog struct{ *fakeDB }

func (funcCatalog) ResolveFunction(name string, args []expr.Expr) (expr.Expr, bool, error) {
	if name == "current_user" {
		return &expr.Const{Value: types.DVarchar("root"), Typ: types.Text}, true, nil
	}
	return nil, false, nil
}

func TestFunctionCatalog(t *testing.T) {
	f := smallDB()
	st := mustParse(t, "select current_user, upper(current_user)")
	p, err := Prepare(funcCatalog{f}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := batch.Collect(context.Background(), f.env(), p.Plan)
	if err != nil || len(rows) != 1 || rows[0][0].Str() != "root" || rows[0][1].Str() != "ROOT" {
		t.Fatalf("got %v %v", rows, err)
	}
}

// I5: a long query stops promptly when its context is canceled, whether it
// is generating rows, aggregating, sorting or probing a join.
func TestCancellationIsPrompt(t *testing.T) {
	f := smallDB()
	for _, q := range []string{
		"select count(*) from generate_series(1, 1000000000) g",
		"select g from generate_series(1, 1000000000) g order by g desc limit 1",
		"select count(*) from generate_series(1, 100000) a join generate_series(1, 100000) b on a.a < b.b",
		"select count(*) from generate_series(1, 1000000000) g where exists (select 1 from t where t.a = g.g)",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, _, err := f.query(ctx, q)
		cancel()
		if sqlerr.Code(err) != sqlerr.QueryCanceled {
			t.Errorf("%s: got %v; want 57014", q, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: returned %v after the deadline", q, d)
		}
	}
}

func TestInsertDefaultValues(t *testing.T) {
	f := dmlDB()
	f.rels["t"].Columns[2].NotNull = false
	ins := prepare(t, f, "insert into t default values").Bound.(*binder.Insert)
	rows, err := runPlan(f, ins.Source)
	if err != nil || fmtRows(rows, []types.Type{types.Int32, types.Text, types.Int32}) != "NULL|dflt|NULL" {
		t.Fatalf("got %v %v", rows, err)
	}
}

func TestParamTypedByLaterUse(t *testing.T) {
	f := smallDB()
	p := prepare(t, f, "select $1, $1 + 1")
	if p.ParamTypes[0] != types.Int32 {
		t.Fatalf("param types %v", p.ParamTypes)
	}
	got, _, err := f.query(context.Background(), "select $1, $1 + 1", types.DInt32(41))
	if err != nil || strings.Join(got, ";") != "41|42" {
		t.Fatalf("got %v %v", got, err)
	}
}

func TestSelectListSRF(t *testing.T) {
	f := smallDB()
	cases := []struct{ q, want string }{
		{"select generate_series(1, 3)", "1;2;3"},
		{"select generate_series(1, 3) as g, generate_series(1, 2) as h", "1|1;2|2;3|NULL"},
		{"select a, generate_series(1, a) from t where a < 3 order by 1, 2", "1|1;2|1;2|2"},
		{"select generate_series(1, 0)", ""},
	}
	for _, c := range cases {
		got, cols, err := f.query(context.Background(), c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if g := strings.Join(got, ";"); g != c.want {
			t.Errorf("%s: got %s; want %s", c.q, g, c.want)
		}
		if c.q == "select generate_series(1, 3)" && (cols[0].Name != "generate_series" || cols[0].Type != types.Int32) {
			t.Errorf("columns %v", cols)
		}
	}
}
