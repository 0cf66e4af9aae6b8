package difftest

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// defaultQueryCases × queriesPerCase queries run by default.
const (
	defaultQueryCases = 4
	queriesPerCase    = 60
)

// TestQueryDifferential runs random SELECTs over random tables on Runnel
// and PostgreSQL after FLUSH, with DML between batches of queries.
func TestQueryDifferential(t *testing.T) {
	st := &queryStats{}
	for _, seed := range seeds(t, defaultQueryCases) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d (replay with RUNNEL_TEST_SEED=%d go test -run 'TestQueryDifferential' ./internal/difftest/)", seed, seed)
			runQueryCase(t, seed, st)
		})
	}
	t.Logf("queries: %d compared (%d ordered), %d both errored with the same SQLSTATE, %d refused by runnel with 0A000",
		st.compared, st.ordered, st.bothErr, len(st.unsupported))
	for _, u := range st.unsupported {
		t.Logf("0A000: %s", u)
	}
}

type queryStats struct {
	compared, ordered, bothErr int
	unsupported                []string
}

func runQueryCase(t *testing.T, seed int64, st *queryStats) {
	g := &gen{r: rand.New(rand.NewSource(seed)), allowDivision: true}
	c := &viewCase{t: t, p: newPair(t), g: g, nextID: map[string]int{}, stats: &viewStats{kinds: map[string]int{}}}
	for i := range 2 + g.intn(2) {
		tb := g.randomTable(fmt.Sprintf("t%d", i))
		c.tables = append(c.tables, tb)
		c.p.mustBoth(tb.createSQL())
	}
	g.tables = c.tables
	for _, tb := range c.tables {
		c.insert(tb, 5+g.intn(15))
	}
	batches := 3
	for b := range batches {
		c.p.flush()
		for range queriesPerCase / batches {
			sql, ordered, cn := g.selectQuery(c.tables)
			compareQuery(t, c.p, sql, ordered, cn, st)
		}
		if b < batches-1 {
			for range 2 + g.intn(4) {
				c.dml()
			}
		}
	}
}

func compareQuery(t *testing.T, p *pair, sql string, ordered bool, cn canon, st *queryStats) {
	t.Helper()
	want := query(p.pg, sql, cn)
	got := query(p.rw, sql, cn)
	switch {
	case want.err == nil && got.code() == "0A000":
		st.unsupported = append(st.unsupported, fmt.Sprintf("%v: %s", got.err, sql))
		return
	case want.err != nil || got.err != nil:
		if want.code() != got.code() {
			t.Fatalf("error differs:\n  %s\n  postgres: %v\n  runnel:   %v\n%s", sql, want.err, got.err, p.replay())
		}
		st.bothErr++
		return
	}
	st.compared++
	if ordered {
		st.ordered++
		if !slices.Equal(want.rows, got.rows) {
			t.Fatalf("ordered result differs:\n  %s\n  postgres: %q\n  runnel:   %q\n%s", sql, want.rows, got.rows, p.replay())
		}
		return
	}
	if ok, diff := sameMultiset(want.rows, got.rows); !ok {
		t.Fatalf("result differs:\n  %s\n%s\n%s", sql, diff, p.replay())
	}
}

// item is one select-list entry.
type item struct {
	sql      string
	typ      typ
	sortList bool
}

// from draws a FROM clause of 1–3 tables with inner and outer joins; it
// returns the clause, the visible scope and the id columns, which together
// identify a row of the join.
func (g *gen) from(tables []*relation) (string, scope, []string) {
	n := 1 + g.intn(3)
	var b strings.Builder
	var s scope
	var ids []string
	for i := range n {
		tb := pick(g, tables)
		a := g.alias()
		ts := scopeFor(a, tb)
		if i == 0 {
			fmt.Fprintf(&b, "%s %s", tb.name, a)
		} else {
			kind := pick(g, []string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN", "JOIN"})
			if kind == "CROSS JOIN" {
				fmt.Fprintf(&b, " CROSS JOIN %s %s", tb.name, a)
			} else {
				on := ""
				for range 4 {
					l := pick(g, s)
					if r := ts.of(l.typ); len(r) > 0 && l.typ != tNum {
						on = l.ref + " = " + pick(g, r).ref
						break
					}
				}
				if on == "" || g.chance(0.3) {
					on = fmt.Sprintf("%s.k = %s.k", strings.Split(pick(g, s).ref, ".")[0], a)
				}
				if g.chance(0.2) {
					all := append(append(scope{}, s...), ts...)
					on += " AND " + g.pred(all, 0)
				}
				fmt.Fprintf(&b, " %s %s %s ON %s", kind, tb.name, a, on)
			}
		}
		s = append(s, ts...)
		ids = append(ids, a+".id")
	}
	return b.String(), s, ids
}

// aggCall draws an aggregate call over s.
func (g *gen) aggCall(s scope, orderedAgg bool) item {
	filter := ""
	if g.chance(0.15) {
		filter = " FILTER (WHERE " + g.pred(s, 1) + ")"
	}
	for {
		switch g.intn(10) {
		case 0:
			return item{sql: "count(*)" + filter, typ: tBig}
		case 1:
			return item{sql: "count(" + g.expr(s, g.someType(s), 1) + ")" + filter, typ: tBig}
		case 2:
			return item{sql: "count(DISTINCT " + g.expr(s, g.someType(s), 1) + ")" + filter, typ: tBig}
		case 3:
			t := pick(g, []typ{tInt, tBig, tNum})
			if len(s.of(t)) == 0 {
				continue
			}
			d := ""
			if g.chance(0.2) {
				d = "DISTINCT "
			}
			return item{sql: "sum(" + d + g.expr(s, t, 1) + ")" + filter, typ: map[typ]typ{tInt: tBig, tBig: tNum, tNum: tNum}[t]}
		case 4, 5:
			t := g.someType(s)
			if t == tBool {
				continue
			}
			return item{sql: pick(g, []string{"min", "max"}) + "(" + g.expr(s, t, 1) + ")" + filter, typ: t}
		case 6:
			t := pick(g, []typ{tInt, tBig, tNum})
			if len(s.of(t)) == 0 {
				continue
			}
			return item{sql: "avg(" + g.expr(s, t, 1) + ")" + filter, typ: tNum}
		case 7:
			if len(s.of(tText)) == 0 {
				continue
			}
			e := g.expr(s, tText, 1)
			if orderedAgg && g.chance(0.5) {
				if g.chance(0.3) {
					return item{sql: "array_agg(" + e + " ORDER BY " + e + ")" + filter + "::text", typ: tText}
				}
				return item{sql: "string_agg(" + e + ", ',' ORDER BY " + e + ")" + filter, typ: tText}
			}
			if g.chance(0.2) {
				return item{sql: "array_agg(DISTINCT " + e + ")" + filter + "::text", typ: tText}
			}
			return item{sql: "string_agg(" + e + ", ',')" + filter, typ: tText, sortList: true}
		default:
			if len(s.of(tBool)) == 0 {
				continue
			}
			return item{sql: pick(g, []string{"bool_and", "bool_or"}) + "(" + g.expr(s, tBool, 1) + ")" + filter, typ: tBool}
		}
	}
}

// selectQuery draws a query; ordered says whether its ORDER BY is total
// over the output, so results compare in order.
func (g *gen) selectQuery(tables []*relation) (string, bool, canon) {
	var sql string
	var items []item
	switch g.intn(10) {
	case 0, 1:
		sql, items = g.setOpQuery(tables)
	case 2, 3, 4:
		sql, items = g.aggQuery(tables)
	default:
		sql, items = g.plainQuery(tables)
	}
	cn := canon{sortList: map[int]bool{}}
	for i, it := range items {
		if it.sortList {
			cn.sortList[i] = true
		}
	}
	if g.chance(0.5) {
		keys := make([]string, len(items))
		for i := range items {
			keys[i] = fmt.Sprintf("%d%s", i+1, pick(g, []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST"}))
		}
		sql += " ORDER BY " + strings.Join(keys, ", ")
		if g.chance(0.6) {
			sql += fmt.Sprintf(" LIMIT %d", g.intn(10))
			if g.chance(0.3) {
				sql += fmt.Sprintf(" OFFSET %d", g.intn(5))
			}
		}
		// An unordered string_agg makes the order undefined too.
		return sql, len(cn.sortList) == 0, cn
	}
	return sql, false, cn
}

func (g *gen) plainQuery(tables []*relation) (string, []item) {
	from, s, ids := g.from(tables)
	var items []item
	for range 1 + g.intn(4) {
		t := g.someType(s)
		items = append(items, item{sql: g.expr(s, t, 2), typ: t})
	}
	if g.chance(0.3) {
		items = append(items, g.windowItem(s, ids))
	}
	sel := make([]string, len(items))
	for i, it := range items {
		sel[i] = it.sql
	}
	distinct := ""
	if g.chance(0.2) {
		distinct = "DISTINCT "
	}
	sql := fmt.Sprintf("SELECT %s%s FROM %s", distinct, strings.Join(sel, ", "), from)
	if g.chance(0.7) {
		sql += " WHERE " + g.pred(s, 2)
	}
	return sql, items
}

// windowItem draws a window function whose value is determined: ORDER BY
// lists end with the row-identifying ids.
func (g *gen) windowItem(s scope, ids []string) item {
	part := ""
	if g.chance(0.7) {
		part = "PARTITION BY " + pick(g, s).ref + " "
	}
	o := pick(g, s).ref
	total := "ORDER BY " + o + ", " + strings.Join(ids, ", ")
	num := func() (string, typ) {
		t := pick(g, []typ{tInt, tBig, tNum})
		if len(s.of(t)) == 0 {
			return "1", tInt
		}
		return pick(g, s.of(t)).ref, t
	}
	switch g.intn(8) {
	case 0:
		return item{sql: "row_number() OVER (" + part + total + ")", typ: tBig}
	case 1:
		return item{sql: pick(g, []string{"rank", "dense_rank"}) + "() OVER (" + part + "ORDER BY " + o + ")", typ: tBig}
	case 2:
		x, t := num()
		out := map[typ]typ{tInt: tBig, tBig: tNum, tNum: tNum}[t]
		return item{sql: "sum(" + x + ") OVER (" + part + "ORDER BY " + o + ")", typ: out}
	case 3:
		return item{sql: "count(*) OVER (" + part + ")", typ: tBig}
	case 4:
		sc := pick(g, s)
		return item{sql: pick(g, []string{"lag", "lead"}) + "(" + sc.ref + ") OVER (" + part + total + ")", typ: sc.typ}
	case 5:
		sc := pick(g, s)
		return item{sql: pick(g, []string{"first_value", "last_value"}) + "(" + sc.ref + ") OVER (" + part + total + ")", typ: sc.typ}
	case 6:
		x, t := num()
		return item{sql: pick(g, []string{"min", "max"}) + "(" + x + ") OVER (" + part + total + " ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)", typ: t}
	default:
		x, _ := num()
		return item{sql: "avg(" + x + ") OVER (" + part + ")", typ: tNum}
	}
}

func (g *gen) aggQuery(tables []*relation) (string, []item) {
	from, s, _ := g.from(tables)
	where := ""
	if g.chance(0.5) {
		where = " WHERE " + g.pred(s, 2)
	}
	saved := g.noSubquery
	g.noSubquery = true
	defer func() { g.noSubquery = saved }()
	var items []item
	var groups []string
	if !g.chance(0.2) {
		for range 1 + g.intn(2) {
			sc := pick(g, s)
			groups = append(groups, sc.ref)
			items = append(items, item{sql: sc.ref, typ: sc.typ})
		}
	}
	groupBy := strings.Join(groups, ", ")
	if len(groups) > 0 && groupingSets && g.chance(0.25) {
		groupBy = g.groupingSets(groups)
		items = append(items, item{sql: "GROUPING(" + strings.Join(groups, ", ") + ")", typ: tInt})
	}
	for range 1 + g.intn(3) {
		items = append(items, g.aggCall(s, true))
	}
	sel := make([]string, len(items))
	for i, it := range items {
		sel[i] = it.sql
	}
	sql := fmt.Sprintf("SELECT %s FROM %s%s", strings.Join(sel, ", "), from, where)
	if len(groups) > 0 {
		sql += " GROUP BY " + groupBy
		if g.chance(0.4) {
			h := g.aggCall(s, false)
			if h.typ == tBool {
				sql += " HAVING " + h.sql
			} else {
				sql += " HAVING " + h.sql + " IS NOT NULL AND count(*) " + pick(g, []string{">", "<", "<>"}) + " " + fmt.Sprint(1+g.intn(3))
			}
		}
	}
	return sql, items
}

func (g *gen) setOpQuery(tables []*relation) (string, []item) {
	var types []typ
	for range 1 + g.intn(3) {
		types = append(types, typ(g.intn(int(numTypes))))
	}
	var items []item
	for _, t := range types {
		items = append(items, item{typ: t})
	}
	n := 2 + g.intn(2)
	var b strings.Builder
	for i := range n {
		tb := pick(g, tables)
		a := g.alias()
		s := scopeFor(a, tb)
		sel := make([]string, len(types))
		for j, t := range types {
			sel[j] = "(" + g.expr(s, t, 1) + ")::" + t.cast()
		}
		if i > 0 {
			b.WriteString(" " + pick(g, []string{"UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"}) + " ")
		}
		fmt.Fprintf(&b, "SELECT %s FROM %s %s", strings.Join(sel, ", "), tb.name, a)
		if g.chance(0.6) {
			b.WriteString(" WHERE " + g.pred(s, 1))
		}
	}
	return b.String(), items
}
