package difftest

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// defaultViewCases keeps the package's default run within its time budget
// on a loaded 2-core machine (each case starts its own Runnel server).
const defaultViewCases = 24

// TestViewDifferential creates random materialized views over random
// tables, applies random DML batches, and after every FLUSH compares each
// view with PostgreSQL's plain view over the same tables.
func TestViewDifferential(t *testing.T) {
	stats := &viewStats{kinds: map[string]int{}}
	for _, seed := range seeds(t, defaultViewCases) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d (replay with RUNNEL_TEST_SEED=%d go test -run 'TestViewDifferential' ./internal/difftest/)", seed, seed)
			runViewCase(t, seed, stats)
		})
	}
	t.Logf("views created: %v; refused with 0A000: %d; skipped as too large: %d; comparisons: %d", stats.kinds, stats.unsupported, stats.tooLarge, stats.compared)
	for _, u := range stats.unsupportedSQL {
		t.Logf("0A000: %s", u)
	}
}

type viewStats struct {
	kinds          map[string]int
	unsupported    int
	tooLarge       int
	unsupportedSQL []string
	compared       int
}

// viewCase is one randomized run: tables, the views built so far and the
// generator state.
type viewCase struct {
	t      *testing.T
	p      *pair
	g      *gen
	tables []*relation
	views  []*relation
	nextID map[string]int
	stats  *viewStats
}

func runViewCase(t *testing.T, seed int64, stats *viewStats) {
	c := &viewCase{
		t:      t,
		p:      newPair(t),
		g:      &gen{r: rand.New(rand.NewSource(seed)), noSubquery: true},
		nextID: map[string]int{},
		stats:  stats,
	}
	g := c.g
	for i := range 2 + g.intn(2) {
		tb := g.randomTable(fmt.Sprintf("t%d", i))
		c.tables = append(c.tables, tb)
		c.p.mustBoth(tb.createSQL())
	}
	// Views created before any data: maintained purely incrementally.
	for range 1 + g.intn(3) {
		c.createView()
	}
	for _, tb := range c.tables {
		c.insert(tb, 8+g.intn(20))
	}
	c.p.flush()
	c.compareAll("after initial load")
	// Views created over existing data: backfill, possibly on views.
	for range 2 + g.intn(3) {
		c.createView()
	}
	c.p.flush()
	c.compareAll("after backfilled views")
	rounds := 4 + g.intn(3)
	for round := range rounds {
		for range 1 + g.intn(4) {
			c.dml()
		}
		if g.chance(0.25) {
			c.createView()
		}
		c.p.flush()
		c.compareAll(fmt.Sprintf("after round %d", round))
	}
}

// insert adds n fresh rows to tb on both systems.
func (c *viewCase) insert(tb *relation, n int) {
	next := max(c.nextID[tb.name], 1)
	c.p.mustBoth(c.g.insert(tb, n, &next))
	c.nextID[tb.name] = next
}

func (c *viewCase) dml() {
	g := c.g
	tb := pick(g, c.tables)
	switch x := g.intn(10); {
	case x < 4:
		c.insert(tb, 1+g.intn(6))
	case x < 7:
		c.p.mustBoth(g.update(tb))
	default:
		c.p.mustBoth(g.deleteStmt(tb))
	}
}

// compareAll checks every view against PostgreSQL.
func (c *viewCase) compareAll(when string) {
	c.t.Helper()
	for _, v := range c.views {
		q := "SELECT * FROM " + v.name
		want := query(c.p.pg, q, canon{sortList: v.sortList})
		got := query(c.p.rw, q, canon{sortList: v.sortList})
		c.stats.compared++
		if want.err != nil {
			c.t.Fatalf("%s: postgres: %s: %v\n%s", when, q, want.err, c.p.replay())
		}
		if got.err != nil {
			c.t.Fatalf("%s: runnel: %s: %v\n%s", when, q, got.err, c.p.replay())
		}
		if ok, diff := sameMultiset(want.rows, got.rows); !ok {
			// Tell a view that lags behind FLUSH from one that is wrong:
			// read again after a pause.
			time.Sleep(2 * time.Second)
			late := query(c.p.rw, q, canon{sortList: v.sortList})
			lateOK, _ := sameMultiset(want.rows, late.rows)
			c.t.Fatalf("%s: view %s differs (%d rows in postgres, %d in runnel; read again 2 s later without FLUSH: equal=%v)\n%s\n%s",
				when, v.name, len(want.rows), len(got.rows), lateOK, diff, c.p.replay())
		}
	}
}

// createView draws a view definition and creates it on both systems.
func (c *viewCase) createView() {
	name := fmt.Sprintf("v%d", len(c.views))
	var kind, body string
	var rel *relation
	for range 10 {
		kind, body, rel = c.drawView(name)
		if rel != nil {
			break
		}
	}
	if rel == nil {
		return
	}
	if n, ok := c.pgRowCount(body); !ok || n > maxViewRows {
		// Joins of joined views can multiply into millions of rows (one
		// seed drew 28.8 million): too many to backfill and compare within
		// the statement timeout, and not what this test is about.
		c.stats.tooLarge++
		c.p.trace = append(c.p.trace, fmt.Sprintf("-- skipped, PostgreSQL counts %d rows (more than %d or over 5 s): %s", n, maxViewRows, body))
		return
	}
	c.p.trace = append(c.p.trace, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s; -- postgres: CREATE VIEW", name, body))
	rwErr := execOn(c.p.rw, "CREATE MATERIALIZED VIEW "+name+" AS "+body)
	if sqlstate(rwErr) == "0A000" {
		c.stats.unsupported++
		c.stats.unsupportedSQL = append(c.stats.unsupportedSQL, fmt.Sprintf("%v: %s", rwErr, body))
		c.p.trace = append(c.p.trace, "-- refused by runnel with 0A000")
		return
	}
	pgErr := execOn(c.p.pg, "CREATE VIEW "+name+" AS "+body)
	if sqlstate(rwErr) != sqlstate(pgErr) {
		c.t.Fatalf("CREATE VIEW outcome differs:\n  %s\n  postgres: %v\n  runnel:   %v\n%s", body, pgErr, rwErr, c.p.replay())
	}
	if pgErr != nil {
		c.t.Logf("generator made an invalid view (both refuse, %s): %s", sqlstate(pgErr), body)
		return
	}
	c.stats.kinds[kind]++
	c.views = append(c.views, rel)
}

// maxViewRows bounds the rows a new view may hold when it is created.
const maxViewRows = 20000

// pgRowCount counts the rows of body in PostgreSQL within 5 s. ok is false
// only when the count timed out; a body PostgreSQL refuses counts as 0 so
// that createView compares both systems' errors.
func (c *viewCase) pgRowCount(body string) (n int64, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	if _, err := c.p.pg.Exec(ctx, "SET statement_timeout = 5000"); err != nil {
		c.t.Fatalf("postgres: %v", err)
	}
	defer func() {
		if _, err := c.p.pg.Exec(ctx, "RESET statement_timeout"); err != nil {
			c.t.Fatalf("postgres: %v", err)
		}
	}()
	err := c.p.pg.QueryRow(ctx, "SELECT count(*) FROM ("+body+") AS q", pgx.QueryExecModeSimpleProtocol).Scan(&n)
	if sqlstate(err) == "57014" {
		return 0, false
	}
	return n, true
}

// sources are the relations a new view may read: tables and views not too
// deep.
func (c *viewCase) sources() []*relation {
	out := append([]*relation{}, c.tables...)
	for _, v := range c.views {
		if v.depth < 3 && len(scopeFor("x", v)) >= 1 {
			out = append(out, v)
		}
	}
	return out
}

// drawView returns a view kind, its body and its output relation, or a
// nil relation when the drawn shape does not fit the sources.
func (c *viewCase) drawView(name string) (string, string, *relation) {
	g := c.g
	src := c.sources()
	switch g.intn(10) {
	case 0:
		return c.projectView(name, pick(g, src))
	case 9:
		return c.lateralView(name, src)
	case 8:
		return c.subqueryView(name, pick(g, src))
	case 1, 2:
		return c.aggView(name, pick(g, src))
	case 3, 4:
		return c.joinView(name, src)
	case 5:
		if g.chance(0.4) {
			return c.distinctOnView(name, src)
		}
		return c.topNView(name, src)
	case 6:
		return c.distinctView(name, pick(g, src))
	default:
		return c.unionView(name, src)
	}
}

// out accumulates a view's select list with c0, c1, … aliases.
type out struct {
	items []string
	cols  []column
	list  map[int]bool
}

func (o *out) add(e string, t typ, unstable, sortList bool) string {
	n := fmt.Sprintf("c%d", len(o.cols))
	o.items = append(o.items, e+" AS "+n)
	o.cols = append(o.cols, column{name: n, typ: t, unstable: unstable})
	if sortList {
		if o.list == nil {
			o.list = map[int]bool{}
		}
		o.list[len(o.cols)-1] = true
	}
	return n
}

func (o *out) rel(name string, depth int) *relation {
	return &relation{name: name, cols: o.cols, isView: true, sortList: o.list, depth: depth}
}

func (c *viewCase) where(s scope) string {
	if c.g.chance(0.5) {
		return ""
	}
	return " WHERE " + c.g.pred(s, 2)
}

func (c *viewCase) projectView(name string, src *relation) (string, string, *relation) {
	g := c.g
	s := scopeFor("a", src)
	var o out
	uniq := keepUnique(g, src, "a", &o)
	for range 1 + g.intn(3) {
		t := g.someType(s)
		o.add(g.expr(s, t, 2), t, false, false)
	}
	body := fmt.Sprintf("SELECT %s FROM %s a%s", strings.Join(o.items, ", "), src.name, c.where(s))
	r := o.rel(name, src.depth+1)
	r.unique = uniq
	return "project", body, r
}

// keepUnique adds src's unique columns to the output (most of the time)
// and returns their output names.
func keepUnique(g *gen, src *relation, alias string, o *out) []string {
	if len(src.unique) == 0 || g.chance(0.2) {
		return nil
	}
	var names []string
	for _, u := range src.unique {
		t := typOf(src, u)
		names = append(names, o.add(alias+"."+u, t, false, false))
	}
	return names
}

func typOf(r *relation, col string) typ {
	for _, c := range r.cols {
		if c.name == col {
			return c.typ
		}
	}
	panic("no column " + col + " in " + r.name)
}

// aggregate draws one aggregate call over s and adds it to o.
func (c *viewCase) aggregate(s scope, o *out) {
	g := c.g
	filter := ""
	if g.chance(0.15) {
		filter = " FILTER (WHERE " + g.pred(s, 1) + ")"
	}
	for {
		switch g.intn(12) {
		case 11:
			// Ordered-set aggregates: the value they pick is an input
			// value (ties of equal values cannot change it).
			t := g.someType(s)
			x := g.expr(s, t, 1)
			dir := pick(g, []string{"", " DESC"})
			if g.chance(0.5) {
				o.add(fmt.Sprintf("percentile_disc(%s) WITHIN GROUP (ORDER BY %s%s)", pick(g, []string{"0", "0.25", "0.5", "1"}), x, dir)+filter, t, false, false)
			} else {
				o.add(fmt.Sprintf("mode() WITHIN GROUP (ORDER BY %s%s)", x, dir)+filter, t, false, false)
			}
			return
		case 0:
			o.add("count(*)"+filter, tBig, false, false)
			return
		case 1:
			t := g.someType(s)
			o.add("count("+g.expr(s, t, 1)+")"+filter, tBig, false, false)
			return
		case 2:
			t := g.someType(s)
			o.add("count(DISTINCT "+g.expr(s, t, 1)+")"+filter, tBig, false, false)
			return
		case 3:
			t := pick(g, []typ{tInt, tBig, tNum})
			if len(s.of(t)) == 0 {
				continue
			}
			out := map[typ]typ{tInt: tBig, tBig: tNum, tNum: tNum}[t]
			distinct := ""
			if g.chance(0.2) {
				distinct = "DISTINCT "
			}
			o.add("sum("+distinct+g.expr(s, t, 1)+")"+filter, out, false, false)
			return
		case 4, 5:
			t := g.someType(s)
			if t == tBool {
				continue
			}
			o.add(pick(g, []string{"min", "max"})+"("+g.expr(s, t, 1)+")"+filter, t, false, false)
			return
		case 6:
			t := pick(g, []typ{tInt, tBig, tNum})
			if len(s.of(t)) == 0 {
				continue
			}
			o.add("avg("+g.expr(s, t, 1)+")"+filter, tNum, true, false)
			return
		case 7:
			if len(s.of(tText)) == 0 {
				continue
			}
			x := g.expr(s, tText, 1)
			if g.chance(0.5) {
				// Ordered: ending in the argument itself, ties cannot
				// change the string.
				order := x + pick(g, []string{"", " DESC", " NULLS FIRST"})
				if sc := pick(g, s); sc.typ != tBool && g.chance(0.6) {
					order = sc.ref + pick(g, []string{"", " DESC"}) + ", " + order
				}
				if g.chance(0.3) {
					// array_agg keeps NULLs; its text form is compared.
					o.add("array_agg("+x+" ORDER BY "+order+")"+filter+"::text", tText, true, false)
					return
				}
				o.add("string_agg("+x+", ',' ORDER BY "+order+")"+filter, tText, true, false)
				return
			}
			if g.chance(0.25) {
				// array_agg(DISTINCT x) lists the values sorted.
				t := pick(g, []typ{tText, tInt})
				if len(s.of(t)) > 0 {
					o.add("array_agg(DISTINCT "+g.expr(s, t, 1)+")"+filter+"::text", tText, true, false)
					return
				}
			}
			o.add("string_agg("+x+", ',')"+filter, tText, true, true)
			return
		case 8:
			if len(s.of(tBool)) == 0 {
				continue
			}
			o.add(pick(g, []string{"bool_and", "bool_or"})+"("+g.expr(s, tBool, 1)+")"+filter, tBool, false, false)
			return
		default:
			t := pick(g, []typ{tInt, tNum})
			if len(s.of(t)) == 0 {
				continue
			}
			o.add(pick(g, []string{"min", "max", "sum"})+"("+pick(g, s.of(t)).ref+")", map[typ]typ{tInt: tBig, tNum: tNum}[t], false, false)
			if !strings.HasPrefix(o.items[len(o.items)-1], "sum") {
				o.cols[len(o.cols)-1].typ = t
			}
			return
		}
	}
}

// groupedSelect builds "SELECT <groups>, <aggs> FROM <from> [WHERE] GROUP
// BY … [HAVING …]" over scope s.
func (c *viewCase) groupedSelect(name, from string, s scope, depth int) (string, *relation) {
	g := c.g
	var o out
	var groups []string
	var uniq []string
	if !g.chance(0.2) {
		for range 1 + g.intn(2) {
			var e string
			var t typ
			if g.chance(0.7) {
				sc := pick(g, s)
				e, t = sc.ref, sc.typ
			} else {
				t = g.someType(s)
				e = g.expr(s, t, 1)
				if !mentionsScope(e, s) {
					// A constant GROUP BY key: see
					// TestBugGroupByNonIntegerConstant.
					sc := pick(g, s)
					e, t = sc.ref, sc.typ
				}
			}
			groups = append(groups, e)
			uniq = append(uniq, o.add(e, t, false, false))
		}
	}
	groupBy := strings.Join(groups, ", ")
	if len(groups) > 0 && groupingSets && g.chance(0.25) {
		// Keys are no longer unique: the rows of the sets without a key
		// hold NULL there (GROUPING tells them apart).
		groupBy, uniq = g.groupingSets(groups), nil
		o.add("GROUPING("+strings.Join(groups, ", ")+")", tInt, false, false)
	}
	for range 1 + g.intn(4) {
		c.aggregate(s, &o)
	}
	body := fmt.Sprintf("SELECT %s FROM %s%s", strings.Join(o.items, ", "), from, c.where(s))
	if len(groups) > 0 {
		body += " GROUP BY " + groupBy
		if g.chance(0.3) {
			body += " HAVING " + pick(g, []string{"count(*) > 1", "count(*) < 3", "count(*) <> 2"})
		}
	}
	r := o.rel(name, depth)
	r.unique = uniq
	return body, r
}

func (c *viewCase) aggView(name string, src *relation) (string, string, *relation) {
	s := scopeFor("a", src)
	if len(s) == 0 {
		return "", "", nil
	}
	body, r := c.groupedSelect(name, src.name+" a", s, src.depth+1)
	return "aggregate", body, r
}

// groupingSets lets grouped views and queries group by ROLLUP, CUBE or
// GROUPING SETS of their keys (with a GROUPING() column).
const groupingSets = true

// groupingSets returns a GROUP BY list over keys (one or two) with
// grouping sets: every form, duplicate and empty sets included.
func (g *gen) groupingSets(keys []string) string {
	x := keys[0]
	if len(keys) == 1 {
		return pick(g, []string{"ROLLUP (" + x + ")", "CUBE (" + x + ")", "GROUPING SETS ((" + x + "), ())",
			"GROUPING SETS ((" + x + "), (" + x + "), ())"})
	}
	y := keys[1]
	return pick(g, []string{
		"ROLLUP (" + x + ", " + y + ")",
		"CUBE (" + x + ", " + y + ")",
		"GROUPING SETS ((" + x + ", " + y + "), (" + x + "), ())",
		"GROUPING SETS ((" + x + "), (" + y + "), (" + y + "))",
		x + ", ROLLUP (" + y + ")",
		"GROUPING SETS (ROLLUP (" + x + "), CUBE (" + y + "))",
	})
}

// crossWidthJoinKeys lets joins equate INT with BIGINT columns (regression:
// TestBugJoinKeyIntBigint).
const crossWidthJoinKeys = true

// selfJoins lets a join read the same relation twice (regressions:
// TestBugSelfFullJoinDuplicateKey, TestBugJoinViewStaleWithSecondJoinView;
// both were the join stream key missing the join key).
const selfJoins = true

// joinKeys finds a pair of columns of l and r that can be equated.
func (c *viewCase) joinKeys(l, r scope) (string, string, bool) {
	g := c.g
	var pairs [][2]string
	for _, a := range l {
		for _, b := range r {
			ok := a.typ == b.typ || (crossWidthJoinKeys && a.typ.integral() && b.typ.integral())
			if ok && a.typ != tBool && a.typ != tNum {
				pairs = append(pairs, [2]string{a.ref, b.ref})
			}
		}
	}
	// Prefer the k columns, whose small domain makes joins match.
	var kk [][2]string
	for _, p := range pairs {
		if strings.HasSuffix(p[0], ".k") && strings.HasSuffix(p[1], ".k") {
			kk = append(kk, p)
		}
	}
	if len(kk) > 0 && g.chance(0.7) {
		p := pick(g, kk)
		return p[0], p[1], true
	}
	if len(pairs) == 0 {
		return "", "", false
	}
	p := pick(g, pairs)
	return p[0], p[1], true
}

func (c *viewCase) joinView(name string, src []*relation) (string, string, *relation) {
	g := c.g
	n := 2
	if g.chance(0.35) {
		n = 3
	}
	aliases := []string{"a", "b", "c"}
	from := ""
	var s scope
	var rels []*relation
	depth := 0
	for i := range n {
		r := pick(g, src)
		if !selfJoins && slices.Contains(rels, r) {
			return "", "", nil
		}
		rs := scopeFor(aliases[i], r)
		if len(rs) == 0 {
			return "", "", nil
		}
		if i == 0 {
			from = r.name + " a"
		} else {
			lk, rk, ok := c.joinKeys(s, rs)
			if !ok {
				return "", "", nil
			}
			on := lk + " = " + rk
			kinds := []string{"JOIN", "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"}
			if g.chance(0.15) {
				// No equality at all: a cross, band or inequality join
				// (PostgreSQL runs no FULL JOIN without one).
				on = g.pred(append(append(scope{}, s...), rs...), 0)
				kinds = kinds[:4]
			} else if g.chance(0.25) {
				// A second equality or a residual filter on the join.
				if lk2, rk2, ok := c.joinKeys(s, rs); ok && g.chance(0.5) {
					on += " AND " + lk2 + " = " + rk2
				} else {
					on += " AND " + g.pred(append(append(scope{}, s...), rs...), 0)
				}
			}
			kind := pick(g, kinds)
			from += fmt.Sprintf(" %s %s %s ON %s", kind, r.name, aliases[i], on)
		}
		s = append(s, rs...)
		rels = append(rels, r)
		depth = max(depth, r.depth)
	}
	if g.chance(0.3) {
		body, r := c.groupedSelect(name, from, s, depth+1)
		return "join+aggregate", body, r
	}
	var o out
	var uniq []string
	allUnique := true
	for i, r := range rels {
		u := keepUnique(g, r, aliases[i], &o)
		if u == nil {
			allUnique = false
		}
		uniq = append(uniq, u...)
	}
	for range 1 + g.intn(3) {
		t := g.someType(s)
		o.add(g.expr(s, t, 1), t, false, false)
	}
	body := fmt.Sprintf("SELECT %s FROM %s%s", strings.Join(o.items, ", "), from, c.where(s))
	rel := o.rel(name, depth+1)
	if allUnique {
		rel.unique = uniq
	}
	return "join", body, rel
}

// topNView orders by random columns then the source's unique columns (so
// the chosen rows are determined) and keeps a LIMIT.
func (c *viewCase) topNView(name string, src []*relation) (string, string, *relation) {
	g := c.g
	r := pickUnique(g, src)
	if r == nil {
		return "", "", nil
	}
	s := scopeFor("a", r)
	var o out
	for _, u := range r.unique {
		o.add("a."+u, typOf(r, u), false, false)
	}
	for range g.intn(3) {
		t := g.someType(s)
		o.add(g.expr(s, t, 1), t, false, false)
	}
	var keys []string
	for range g.intn(3) {
		sc := pick(g, s)
		if sc.typ == tBool {
			continue
		}
		keys = append(keys, sc.ref+pick(g, []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST"}))
	}
	// WITH TIES over keys that need not be unique: the set is still
	// determined (every row that sorts before or equal to the n-th), as
	// long as no OFFSET picks among ties.
	ties := len(keys) > 0 && g.chance(0.3)
	if !ties {
		for _, u := range r.unique {
			keys = append(keys, "a."+u+pick(g, []string{"", " DESC"}))
		}
	}
	body := fmt.Sprintf("SELECT %s FROM %s a%s ORDER BY %s LIMIT %d", strings.Join(o.items, ", "), r.name, c.where(s), strings.Join(keys, ", "), 1+g.intn(8))
	if ties {
		body = fmt.Sprintf("SELECT %s FROM %s a%s ORDER BY %s FETCH FIRST %d ROWS WITH TIES", strings.Join(o.items, ", "), r.name, c.where(s), strings.Join(keys, ", "), 1+g.intn(8))
	} else if g.chance(0.25) {
		body += fmt.Sprintf(" OFFSET %d", 1+g.intn(3))
	}
	rel := o.rel(name, r.depth+1)
	for i := range r.unique {
		rel.unique = append(rel.unique, o.cols[i].name)
	}
	return "topn", body, rel
}

func (c *viewCase) distinctView(name string, src *relation) (string, string, *relation) {
	g := c.g
	s := scopeFor("a", src)
	if len(s) == 0 {
		return "", "", nil
	}
	var o out
	for range 1 + g.intn(3) {
		if g.chance(0.7) {
			sc := pick(g, s)
			o.add(sc.ref, sc.typ, false, false)
		} else {
			t := g.someType(s)
			o.add(g.expr(s, t, 1), t, false, false)
		}
	}
	body := fmt.Sprintf("SELECT DISTINCT %s FROM %s a%s", strings.Join(o.items, ", "), src.name, c.where(s))
	rel := o.rel(name, src.depth+1)
	for _, col := range o.cols {
		rel.unique = append(rel.unique, col.name)
	}
	return "distinct", body, rel
}

// unionView unions 2–3 branches over (possibly different) sources with the
// same column types.
func (c *viewCase) unionView(name string, src []*relation) (string, string, *relation) {
	g := c.g
	n := 2 + g.intn(2)
	var types []typ
	first := scopeFor("a", pick(g, src))
	if len(first) == 0 {
		return "", "", nil
	}
	for range 1 + g.intn(3) {
		types = append(types, pick(g, first).typ)
	}
	var branches []string
	depth := 0
	for i := range n {
		r := pick(g, src)
		s := scopeFor("a", r)
		items := make([]string, len(types))
		for j, t := range types {
			items[j] = g.expr(s, t, 1)
			if j == 0 || t == tText || t == tNum {
				// Keep the output type fixed whatever the branch
				// expression's type resolves to.
				items[j] = "(" + items[j] + ")::" + t.cast()
			}
			if i == 0 {
				// The first branch names the union's columns.
				items[j] += fmt.Sprintf(" AS c%d", j)
			}
		}
		branches = append(branches, fmt.Sprintf("SELECT %s FROM %s a%s", strings.Join(items, ", "), r.name, c.where(s)))
		depth = max(depth, r.depth)
	}
	var o out
	for _, t := range types {
		o.add("", t, false, false)
	}
	if g.chance(0.35) {
		// UNION, INTERSECT and EXCEPT (distinct or ALL), mixed: both
		// parsers apply SQL's precedence (INTERSECT first).
		body := branches[0]
		for _, br := range branches[1:] {
			body += " " + pick(g, []string{"UNION", "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"}) + " " + br
		}
		return "set op", body, o.rel(name, depth+1)
	}
	return "union all", strings.Join(branches, " UNION ALL "), o.rel(name, depth+1)
}

// mentionsScope reports whether e refers to a column of s.
func mentionsScope(e string, s scope) bool {
	for _, c := range s {
		if strings.Contains(e, c.ref) {
			return true
		}
	}
	return false
}

// subqueryView filters or extends a relation with a scalar subquery over
// another: uncorrelated (a global aggregate or ORDER BY ... LIMIT 1),
// which a view maintains as a join with the subquery's one row, or an
// aggregate correlated by equalities with the outer row, which a view
// maintains grouped by the correlation and LEFT-joined back.
func (c *viewCase) subqueryView(name string, src *relation) (string, string, *relation) {
	g := c.g
	s := scopeFor("a", src)
	var o out
	uniq := keepUnique(g, src, "a", &o)
	where := ""
	if g.chance(0.4) {
		// EXISTS / IN / NOT IN anywhere (membership.go in streamplan).
		sub, ok := c.membershipPred(s)
		if !ok {
			return "", "", nil
		}
		switch g.intn(3) {
		case 0:
			where = " WHERE " + sub
		case 1:
			where = fmt.Sprintf(" WHERE (%s OR %s)", sub, g.pred(s, 1))
		default:
			o.add(sub, tBool, false, false)
		}
		t := g.someType(s)
		o.add(g.expr(s, t, 1), t, false, false)
		body := fmt.Sprintf("SELECT %s FROM %s a%s", strings.Join(o.items, ", "), src.name, where)
		r := o.rel(name, src.depth+1)
		r.unique = uniq
		return "membership subquery", body, r
	}
	t := g.someType(s)
	sub, ok := c.scalarAgg(t, s)
	if !ok {
		return "", "", nil
	}
	if g.chance(0.6) {
		where = fmt.Sprintf(" WHERE %s %s %s", g.leaf(s, t), pick(g, []string{"<", "<=", ">", ">=", "=", "<>"}), sub)
		if g.chance(0.3) {
			where += " AND " + g.pred(s, 1)
		}
	} else {
		o.add(sub, t, false, false)
	}
	for range 1 + g.intn(2) {
		t := g.someType(s)
		o.add(g.expr(s, t, 1), t, false, false)
	}
	body := fmt.Sprintf("SELECT %s FROM %s a%s", strings.Join(o.items, ", "), src.name, where)
	r := o.rel(name, src.depth+1)
	r.unique = uniq
	return "scalar subquery", body, r
}

// membershipPred returns [NOT] EXISTS or [NOT] IN over a random source,
// uncorrelated or correlated with outer by an equality.
func (c *viewCase) membershipPred(outer scope) (string, bool) {
	g := c.g
	tb := pick(g, c.sources())
	a := g.alias()
	inner := scopeFor(a, tb)
	var conds []string
	if g.chance(0.5) {
		conds = append(conds, g.pred(inner, 1))
	}
	if g.chance(0.5) {
		o := pick(g, outer)
		same := inner.of(o.typ)
		if len(same) == 0 {
			return "", false
		}
		conds = append(conds, fmt.Sprintf("%s = %s", pick(g, same).ref, o.ref))
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	not := pick(g, []string{"", "NOT "})
	if g.chance(0.4) {
		return fmt.Sprintf("%sEXISTS (SELECT 1 FROM %s %s%s)", not, tb.name, a, where), true
	}
	ic := pick(g, inner)
	return fmt.Sprintf("%s %sIN (SELECT %s FROM %s %s%s)", g.leaf(outer, ic.typ), not, ic.ref, tb.name, a, where), true
}

// scalarAgg returns a subquery of type t that returns one row by its
// form, over a random source; sometimes an aggregate correlated with the
// enclosing scope outer by one or two equalities.
func (c *viewCase) scalarAgg(t typ, outer scope) (string, bool) {
	g := c.g
	tb := pick(g, c.sources())
	a := g.alias()
	inner := scopeFor(a, tb)
	var conds []string
	if g.chance(0.4) {
		conds = append(conds, g.pred(inner, 1))
	}
	correlated := g.chance(0.5)
	if correlated {
		for range 1 + g.intn(2) {
			o := pick(g, outer)
			same := inner.of(o.typ)
			if len(same) == 0 {
				return "", false
			}
			eq := fmt.Sprintf("%s = %s", pick(g, same).ref, o.ref)
			if g.chance(0.5) {
				eq = fmt.Sprintf("%s = %s", o.ref, pick(g, same).ref)
			}
			conds = append(conds, eq)
		}
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	if t == tBig && g.chance(0.4) {
		if g.chance(0.5) {
			return fmt.Sprintf("(SELECT count(*) FROM %s %s%s)", tb.name, a, where), true
		}
		return fmt.Sprintf("(SELECT count(*) * 2 + 1 FROM %s %s%s)", tb.name, a, where), true
	}
	cols := inner.of(t)
	if len(cols) == 0 {
		return "", false
	}
	col := pick(g, cols).ref
	if (correlated || g.chance(0.7)) && t != tBool { // PostgreSQL has no min/max(boolean)
		return fmt.Sprintf("(SELECT %s(%s) FROM %s %s%s)", pick(g, []string{"min", "max"}), col, tb.name, a, where), true
	}
	if correlated {
		return "", false // LIMIT 1 under a correlation is not maintained
	}
	return fmt.Sprintf("(SELECT %s FROM %s %s%s ORDER BY 1 LIMIT 1)", col, tb.name, a, where), true
}

// distinctOnView keeps the first row per group of one or two columns, by
// an ORDER BY that ends in the source's unique columns, so that the row
// kept is determined (PostgreSQL leaves ties unspecified).
func (c *viewCase) distinctOnView(name string, src []*relation) (string, string, *relation) {
	g := c.g
	r := pickUnique(g, src)
	if r == nil {
		return "", "", nil
	}
	s := scopeFor("a", r)
	var on []string
	var o out
	for range 1 + g.intn(2) {
		if sc := pick(g, s); !slices.Contains(on, sc.ref) {
			on = append(on, sc.ref)
			o.add(sc.ref, sc.typ, false, false)
		}
	}
	for _, u := range r.unique {
		o.add("a."+u, typOf(r, u), false, false)
	}
	for range g.intn(2) {
		t := g.someType(s)
		o.add(g.expr(s, t, 1), t, false, false)
	}
	keys := slices.Clone(on)
	for range g.intn(2) {
		if sc := pick(g, s); sc.typ != tBool {
			keys = append(keys, sc.ref+pick(g, []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST"}))
		}
	}
	for _, u := range r.unique {
		keys = append(keys, "a."+u+pick(g, []string{"", " DESC"}))
	}
	body := fmt.Sprintf("SELECT DISTINCT ON (%s) %s FROM %s a%s ORDER BY %s", strings.Join(on, ", "), strings.Join(o.items, ", "), r.name, c.where(s), strings.Join(keys, ", "))
	rel := o.rel(name, r.depth+1)
	for i := range r.unique {
		rel.unique = append(rel.unique, o.cols[len(on)+i].name)
	}
	return "distinct on", body, rel
}

// lateralView expands each row of a relation by a series over one of its
// integer columns, in the FROM forms RisingWave users write (a comma, CROSS
// JOIN LATERAL, LEFT JOIN LATERAL ... ON true, WITH ORDINALITY): a
// ProjectSet in the view.
func (c *viewCase) lateralView(name string, src []*relation) (string, string, *relation) {
	g := c.g
	r := pickUnique(g, src)
	if r == nil {
		return "", "", nil
	}
	s := scopeFor("a", r)
	ints := s.of(tInt)
	if len(ints) == 0 {
		return "", "", nil
	}
	var o out
	for _, u := range r.unique {
		o.add("a."+u, typOf(r, u), false, false)
	}
	for range g.intn(2) {
		t := g.someType(s)
		o.add(g.expr(s, t, 1), t, false, false)
	}
	x := o.add("g.x", tInt, false, false)
	ord := g.chance(0.4)
	alias := "g(x)"
	if ord {
		alias = "g(x, o)"
		o.add("g.o", tBig, false, false)
	}
	series := fmt.Sprintf("generate_series(%d, %s %% 4)", g.intn(2), pick(g, ints).ref)
	if ord {
		series += " WITH ORDINALITY"
	}
	var from string
	switch g.intn(3) {
	case 0:
		from = fmt.Sprintf("%s a, %s AS %s", r.name, series, alias)
	case 1:
		from = fmt.Sprintf("%s a CROSS JOIN LATERAL %s AS %s", r.name, series, alias)
	default:
		// A row whose series is empty is kept once with NULLs: x is NULL
		// there, so (unique, x) stays unique.
		from = fmt.Sprintf("%s a LEFT JOIN LATERAL %s AS %s ON true", r.name, series, alias)
	}
	body := fmt.Sprintf("SELECT %s FROM %s%s", strings.Join(o.items, ", "), from, c.where(s))
	rel := o.rel(name, r.depth+1)
	for i := range r.unique {
		rel.unique = append(rel.unique, o.cols[i].name)
	}
	rel.unique = append(rel.unique, x)
	return "lateral", body, rel
}

// pickUnique picks a relation with unique columns (nil when none has).
func pickUnique(g *gen, src []*relation) *relation {
	var cands []*relation
	for _, r := range src {
		if len(r.unique) > 0 {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return pick(g, cands)
}
