package sql

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/types"
)

// The differential test runs a seeded corpus of random SELECTs over random
// small tables, loaded both into a real PostgreSQL and into the fake
// catalog, and compares results: in order when the query's ORDER BY is
// total, as multisets otherwise.
//
//	RUNNEL_DIFF_SEED=n      run one specific seed
//	RUNNEL_DIFF_QUERIES=n   queries per seed (default 400)
//	RUNNEL_DIFF_SEEDS=n     number of seeds (default 2)

type diffTable struct {
	name string
	cols []diffCol
}

type diffCol struct {
	name, typ string // typ: "int", "bigint", "text", "numeric", "bool"
}

type diffGen struct {
	r      *rand.Rand
	tables []diffTable
}

func (g *diffGen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

func (g *diffGen) value(typ string) string {
	if g.r.Intn(6) == 0 {
		return "NULL"
	}
	switch typ {
	case "int", "bigint":
		return strconv.Itoa(g.r.Intn(11) - 3)
	case "numeric":
		return fmt.Sprintf("%d.%d", g.r.Intn(7)-2, g.r.Intn(4)*25)
	case "bool":
		return g.pick("true", "false")
	}
	return "'" + g.pick("a", "b", "c", "ab", "B", "", "a b", "zz") + "'"
}

func (g *diffGen) makeTables() {
	types := []string{"int", "int", "bigint", "text", "text", "numeric", "bool"}
	for ti, name := range []string{"t1", "t2", "t3"} {
		t := diffTable{name: name}
		t.cols = append(t.cols, diffCol{name: "k", typ: "int"})
		n := 2 + g.r.Intn(3)
		for i := 0; i < n; i++ {
			t.cols = append(t.cols, diffCol{name: fmt.Sprintf("c%d", i), typ: types[g.r.Intn(len(types))]})
		}
		// Every table shares an int column v for joins and a text column s.
		t.cols = append(t.cols, diffCol{name: "v", typ: "int"}, diffCol{name: "s", typ: "text"})
		_ = ti
		g.tables = append(g.tables, t)
	}
}

func (g *diffGen) table() diffTable { return g.tables[g.r.Intn(len(g.tables))] }

// colOf returns a random column of t of one of the wanted types ("" any).
func (g *diffGen) colOf(t diffTable, alias string, want ...string) (string, string) {
	var cands []diffCol
	for _, c := range t.cols {
		if len(want) == 0 {
			cands = append(cands, c)
			continue
		}
		for _, w := range want {
			if c.typ == w {
				cands = append(cands, c)
			}
		}
	}
	if len(cands) == 0 {
		return alias + ".v", "int"
	}
	c := cands[g.r.Intn(len(cands))]
	return alias + "." + c.name, c.typ
}

// scalar returns an expression over t (aliased) and its type class.
func (g *diffGen) scalar(t diffTable, alias string, depth int) (string, string) {
	switch g.r.Intn(8) {
	case 0, 1, 2:
		return g.colOf(t, alias)
	case 3:
		a, _ := g.colOf(t, alias, "int", "bigint")
		b, _ := g.colOf(t, alias, "int", "bigint")
		return "(" + a + " " + g.pick("+", "-", "*") + " " + b + ")", "bigint"
	case 4:
		a, _ := g.colOf(t, alias, "text")
		return g.pick("upper(", "lower(", "length(") + a + ")", "text"
	case 5:
		a, ty := g.colOf(t, alias, "int", "numeric")
		return "coalesce(" + a + ", " + g.value(ty) + ")", ty
	case 6:
		a, _ := g.colOf(t, alias, "int")
		return "case when " + a + " > 2 then 'big' when " + a + " is null then 'null' else 'small' end", "text"
	}
	a, _ := g.colOf(t, alias, "int")
	return "(" + a + " % 3)", "int"
}

func (g *diffGen) pred(t diffTable, alias string, depth int) string {
	switch g.r.Intn(10) {
	case 0, 1, 2:
		c, ty := g.colOf(t, alias)
		if ty == "bool" {
			return c
		}
		return c + " " + g.pick("=", "<>", "<", "<=", ">", ">=") + " " + g.value(ty)
	case 3:
		c, _ := g.colOf(t, alias)
		return c + g.pick(" is null", " is not null")
	case 4:
		c, ty := g.colOf(t, alias, "int", "text")
		return c + g.pick(" in (", " not in (") + g.value(ty) + ", " + g.value(ty) + ")"
	case 5:
		c, _ := g.colOf(t, alias, "int")
		return c + g.pick(" between 0 and 4", " not between 1 and 3")
	case 6:
		if depth > 1 {
			return "true"
		}
		u := g.table()
		c, _ := g.colOf(t, alias, "int")
		return c + g.pick(" in", " not in") + " (select x.v from " + u.name + " x where " + g.pred(u, "x", depth+1) + ")"
	case 7:
		if depth > 1 {
			return "false"
		}
		u := g.table()
		return g.pick("", "not ") + "exists (select 1 from " + u.name + " x where x.v = " + alias + ".v and " + g.pred(u, "x", depth+1) + ")"
	case 8:
		return "(" + g.pred(t, alias, depth+1) + g.pick(" and ", " or ") + g.pred(t, alias, depth+1) + ")"
	}
	c, _ := g.colOf(t, alias, "text")
	return c + g.pick(" like 'a%'", " < 'b'", " = s")
}

// query returns a random SELECT and whether its ORDER BY is total.
func (g *diffGen) query() (string, bool) {
	switch g.r.Intn(9) {
	case 7:
		return g.derived()
	case 8:
		return g.misc()
	case 0, 1:
		return g.simple()
	case 2:
		return g.aggregate()
	case 3:
		return g.join()
	case 4:
		return g.setop(), false
	case 5:
		return g.window()
	}
	return g.scalarSub(), false
}

func orderAll(n int, r *rand.Rand) string {
	var parts []string
	for i := 1; i <= n; i++ {
		p := strconv.Itoa(i)
		if r.Intn(2) == 0 {
			p += " desc"
		}
		if r.Intn(3) == 0 {
			p += []string{" nulls first", " nulls last"}[r.Intn(2)]
		}
		parts = append(parts, p)
	}
	return " order by " + strings.Join(parts, ", ")
}

func (g *diffGen) simple() (string, bool) {
	t := g.table()
	n := 1 + g.r.Intn(3)
	var sel []string
	for i := 0; i < n; i++ {
		e, _ := g.scalar(t, "a", 0)
		sel = append(sel, e+" as e"+strconv.Itoa(i))
	}
	q := "select " + g.pick("", "distinct ") + strings.Join(sel, ", ") + " from " + t.name + " a"
	if g.r.Intn(4) != 0 {
		q += " where " + g.pred(t, "a", 0)
	}
	if g.r.Intn(2) == 0 {
		q += orderAll(n, g.r)
		if g.r.Intn(2) == 0 {
			q += fmt.Sprintf(" limit %d offset %d", g.r.Intn(6), g.r.Intn(3))
		}
		return q, true
	}
	return q, false
}

func (g *diffGen) aggregate() (string, bool) {
	t := g.table()
	key, _ := g.scalar(t, "a", 0)
	ic, _ := g.colOf(t, "a", "int", "bigint")
	nc, _ := g.colOf(t, "a", "numeric", "int")
	tc, _ := g.colOf(t, "a", "text")
	aggs := []string{"count(*)", "count(" + ic + ")", "sum(" + ic + ")", "min(" + tc + ")", "max(" + ic + ")",
		"count(distinct " + tc + ")", "sum(" + nc + ")", "avg(" + ic + ")", "bool_or(" + ic + " > 2)",
		"string_agg(" + tc + ", ',' order by " + tc + ")", "sum(" + ic + ") filter (where " + ic + " > 0)"}
	g.r.Shuffle(len(aggs), func(i, j int) { aggs[i], aggs[j] = aggs[j], aggs[i] })
	na := 1 + g.r.Intn(3)
	sel := append([]string{key + " as g"}, aggs[:na]...)
	q := "select " + strings.Join(sel, ", ") + " from " + t.name + " a"
	if g.r.Intn(2) == 0 {
		q += " where " + g.pred(t, "a", 0)
	}
	if g.r.Intn(5) == 0 {
		// global aggregate
		q = "select " + strings.Join(aggs[:na], ", ") + " from " + t.name + " a where " + g.pred(t, "a", 0)
		return q, false
	}
	q += " group by 1"
	if g.r.Intn(3) == 0 {
		q += " having count(*) " + g.pick(">", "<=") + " 1"
	}
	if g.r.Intn(2) == 0 {
		return q + orderAll(1+na, g.r), true
	}
	return q, false
}

func (g *diffGen) join() (string, bool) {
	t, u := g.table(), g.table()
	kind := g.pick("join", "left join", "right join", "full join", "join", "cross join")
	on := ""
	switch {
	case kind == "cross join":
	case g.r.Intn(4) == 0:
		on = " using (v)"
	case g.r.Intn(3) == 0:
		on = " on a.v = b.v and a.k " + g.pick("<", ">", "<>") + " b.k"
	case g.r.Intn(3) == 0:
		on = " on a.s = b.s"
	default:
		on = " on a.v = b.v"
	}
	c1, _ := g.colOf(t, "a")
	c2, _ := g.colOf(u, "b")
	q := "select " + c1 + " as x, " + c2 + " as y from " + t.name + " a " + kind + " " + u.name + " b" + on
	if g.r.Intn(2) == 0 {
		q += " where " + g.pred(t, "a", 1)
	}
	if g.r.Intn(2) == 0 {
		return q + orderAll(2, g.r), true
	}
	return q, false
}

func (g *diffGen) setop() string {
	t, u := g.table(), g.table()
	c1, _ := g.colOf(t, "a", "int")
	c2, _ := g.colOf(u, "b", "int")
	op := g.pick("union", "union all", "intersect", "intersect all", "except", "except all")
	return "select " + c1 + ", a.s from " + t.name + " a where " + g.pred(t, "a", 1) + " " + op +
		" select " + c2 + ", b.s from " + u.name + " b"
}

func (g *diffGen) window() (string, bool) {
	t := g.table()
	part, _ := g.colOf(t, "a", "int", "text", "bool")
	ic, _ := g.colOf(t, "a", "int")
	fn := g.pick("rank()", "dense_rank()", "sum("+ic+")", "count(*)", "max("+ic+")", "min(a.k)", "avg("+ic+")")
	over := "partition by " + part
	if g.r.Intn(4) == 0 && !strings.Contains(fn, "rank") {
		// A non-unique ORDER BY: the default RANGE frame includes peers.
		over += " order by " + ic + g.pick("", " desc", " nulls first")
	} else if g.r.Intn(2) == 0 {
		over += " order by a.k" // k is a key per table: deterministic frames
		if g.r.Intn(3) == 0 {
			over += g.pick(" rows between 1 preceding and 1 following", " rows between unbounded preceding and current row", " rows between current row and unbounded following")
		}
	}
	if strings.Contains(fn, "rank") && !strings.Contains(over, "order") {
		over += " order by " + ic
	}
	q := "select a.k, " + part + " as p, " + fn + " over (" + over + ") as w from " + t.name + " a"
	if g.r.Intn(2) == 0 {
		q += " where " + g.pred(t, "a", 1)
	}
	return q, false
}

func (g *diffGen) derived() (string, bool) {
	t := g.table()
	e, _ := g.scalar(t, "a", 0)
	inner := "select " + e + " as x, a.v, a.k from " + t.name + " a where " + g.pred(t, "a", 1)
	switch g.r.Intn(3) {
	case 0:
		return "select d.x, count(*) from (" + inner + ") d group by d.x order by 1, 2", true
	case 1:
		return "with d as (" + inner + ") select d1.x, d2.k from d d1 join d d2 on d1.v = d2.v order by 1, 2", true
	}
	return "select distinct on (d.v) d.v, d.x from (" + inner + ") d order by d.v, d.k", true
}

func (g *diffGen) misc() (string, bool) {
	t := g.table()
	switch g.r.Intn(8) {
	case 7:
		return "select a.k, generate_series(" + g.pick("1", "a.v", "0") + ", a.v) as g from " + t.name + " a where a.v < 5 order by 1, 2", true
	case 4:
		u := g.table()
		return "select a.v, count(*), (select count(*) from " + u.name + " b where b.v = a.v) from " + t.name + " a group by a.v order by 1", true
	case 5:
		u := g.table()
		return "select a.s, sum(a.v) from " + t.name + " a group by a.s having sum(a.v) > (select min(b.v) from " + u.name + " b) order by 1", true
	case 6:
		u := g.table()
		return "select a.k from " + t.name + " a where a.v " + g.pick("<", ">", "=", "<>") + g.pick(" any", " all") + " (select b.v from " + u.name + " b where " + g.pred(u, "b", 1) + ") order by 1", true
	case 0:
		return fmt.Sprintf("select g, a.k from generate_series(%d, %d) g left join %s a on a.v = g order by 1, 2", g.r.Intn(3)-1, g.r.Intn(5), t.name), true
	case 1:
		ic, _ := g.colOf(t, "a", "int")
		return "select a.k, " + ic + " from " + t.name + " a where " + ic + " > (select avg(b.v) from " + t.name + " b where b.s = a.s) order by 1", true
	case 2:
		return "select a.v, a.s from " + t.name + " a union select b.k, b.s from " + g.table().name + " b order by 1 desc, 2 limit 5", true
	}
	ic, _ := g.colOf(t, "a", "int")
	return "select a.k, sum(" + ic + ") over (order by a.k rows between " + g.pick("2 preceding and current row", "current row and 1 following", "unbounded preceding and 1 preceding") + ") from " + t.name + " a order by 1", true
}

func (g *diffGen) scalarSub() string {
	t, u := g.table(), g.table()
	ic, _ := g.colOf(u, "b", "int")
	return "select a.k, (select " + g.pick("max", "min", "count", "sum") + "(" + ic + ") from " + u.name +
		" b where b.v = a.v) as m from " + t.name + " a"
}

func TestDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test needs PostgreSQL")
	}
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "set extra_float_digits = 1; set timezone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	seeds := []int64{1, 2}
	if s := os.Getenv("RUNNEL_DIFF_SEED"); s != "" {
		v, _ := strconv.ParseInt(s, 10, 64)
		seeds = []int64{v}
	} else if s := os.Getenv("RUNNEL_DIFF_SEEDS"); s != "" {
		n, _ := strconv.Atoi(s)
		seeds = nil
		base := time.Now().UnixNano()
		for i := 0; i < n; i++ {
			seeds = append(seeds, base+int64(i))
		}
	}
	nq := 400
	if s := os.Getenv("RUNNEL_DIFF_QUERIES"); s != "" {
		nq, _ = strconv.Atoi(s)
	}
	for _, seed := range seeds {
		runDiffSeed(t, ctx, conn, seed, nq)
	}
}

func runDiffSeed(t *testing.T, ctx context.Context, conn *pgx.Conn, seed int64, nq int) {
	g := &diffGen{r: rand.New(rand.NewSource(seed))}
	g.makeTables()
	f := newFakeDB()
	for _, tb := range g.tables {
		var defs []string
		var cols []string
		for _, c := range tb.cols {
			defs = append(defs, c.name+" "+c.typ)
			cols = append(cols, c.name+" "+c.typ)
		}
		if _, err := conn.Exec(ctx, "drop table if exists "+tb.name+"; create table "+tb.name+" ("+strings.Join(defs, ", ")+")"); err != nil {
			t.Fatal(err)
		}
		f.addTable(tb.name, cols...)
		nrows := g.r.Intn(12)
		for i := 0; i < nrows; i++ {
			vals := []string{strconv.Itoa(i)}
			for _, c := range tb.cols[1:] {
				vals = append(vals, g.value(c.typ))
			}
			ins := "insert into " + tb.name + " values (" + strings.Join(vals, ", ") + ")"
			if _, err := conn.Exec(ctx, ins); err != nil {
				t.Fatalf("seed %d: %s: %v", seed, ins, err)
			}
			// Load the same row into the fake through Runnel's own INSERT
			// binding (which exercises assignment casts too).
			p, err := Prepare(f, mustParse(t, ins), nil)
			if err != nil {
				t.Fatalf("seed %d: runnel %s: %v", seed, ins, err)
			}
			rows, err := runPlan(f, p.Bound.(*binder.Insert).Source)
			if err != nil {
				t.Fatalf("seed %d: runnel %s: %v", seed, ins, err)
			}
			f.rows[tb.name] = append(f.rows[tb.name], rows...)
		}
	}
	fails, compared, bothErr, rowsSeen := 0, 0, 0, 0
	defer func() {
		t.Logf("seed %d: %d queries compared (%d rows), %d failed in both", seed, compared, rowsSeen, bothErr)
	}()
	for i := 0; i < nq && fails < 10; i++ {
		q, ordered := g.query()
		want, wantCols, wantErr := pgQueryCols(ctx, conn, q)
		got, gotColumns, gotErr := f.query(ctx, q)
		switch {
		case wantErr != nil && gotErr != nil:
			bothErr++
			if pc, rc := pgCode(wantErr), sqlerr.Code(gotErr); pc != rc {
				t.Errorf("seed %d query %d: %s\nerror codes differ: postgres %s (%v), runnel %s (%v)", seed, i, q, pc, wantErr, rc, gotErr)
				fails++
			}
			continue
		case wantErr != nil:
			t.Errorf("seed %d query %d: %s\npostgres failed (%v), runnel returned %d rows", seed, i, q, wantErr, len(got))
			fails++
			continue
		case gotErr != nil:
			t.Errorf("seed %d query %d: %s\nrunnel failed: %v", seed, i, q, gotErr)
			fails++
			continue
		}
		compared++
		rowsSeen += len(want)
		var gotCols []string
		for _, c := range gotColumns {
			gotCols = append(gotCols, fmt.Sprintf("%s:%d", c.Name, c.Type.OID()))
		}
		if strings.Join(wantCols, ",") != strings.Join(gotCols, ",") {
			t.Errorf("seed %d query %d: %s\nresult columns differ: postgres %v, runnel %v", seed, i, q, wantCols, gotCols)
			fails++
			continue
		}
		if !ordered {
			sort.Strings(want)
			sort.Strings(got)
		}
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("seed %d query %d: %s\npostgres:\n  %s\nrunnel:\n  %s", seed, i, q, strings.Join(want, "\n  "), strings.Join(got, "\n  "))
			fails++
		}
	}
	if fails > 0 {
		t.Logf("reproduce with RUNNEL_DIFF_SEED=%d", seed)
	}
}

func pgCode(err error) string {
	if pe, ok := err.(*pgconn.PgError); ok {
		return pe.Code
	}
	return "?"
}

// pgQuery runs q in PostgreSQL with the text protocol and renders rows as
// formatRow does.
func pgQuery(ctx context.Context, conn *pgx.Conn, q string) ([]string, error) {
	rows, _, err := pgQueryCols(ctx, conn, q)
	return rows, err
}

// pgQueryCols also returns "name:typeoid" for each result column.
func pgQueryCols(ctx context.Context, conn *pgx.Conn, q string) ([]string, []string, error) {
	rr := conn.PgConn().ExecParams(ctx, q, nil, nil, nil, nil)
	var out []string
	for rr.NextRow() {
		vals := rr.Values()
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	var cols []string
	for _, fd := range rr.FieldDescriptions() {
		cols = append(cols, fmt.Sprintf("%s:%d", fd.Name, fd.DataTypeOID))
	}
	if _, err := rr.Close(); err != nil {
		return nil, nil, err
	}
	return out, cols, nil
}

var _ = types.Int32
