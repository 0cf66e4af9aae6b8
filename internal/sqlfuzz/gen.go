package sqlfuzz

import (
	"fmt"
	"math/rand"
	"strings"
)

// Gen produces random statements over a small fixed schema (Setup): SELECT,
// CREATE [MATERIALIZED] VIEW, CREATE OR REPLACE VIEW (cycles included),
// INSERT / UPDATE / DELETE and DROP ... CASCADE, built from the grammar:
// expressions, subqueries with and without aliases, joins, grouping,
// window functions, set operations; now and then a statement nested
// thousands of levels deep, a literal of megabytes, or one whose tokens
// were cut, doubled or swapped.
type Gen struct {
	r     *rand.Rand
	views []string // views created so far (some may have been dropped)
	n     int
	// Huge is the size in bytes of the huge literals (default 4 MB).
	Huge int
}

// NewGen returns a generator for seed.
func NewGen(seed int64) *Gen { return &Gen{r: rand.New(rand.NewSource(seed)), Huge: 4 << 20} }

// Setup creates the tables the statements use.
var Setup = []string{
	"CREATE TABLE t1 (a INT, b INT, c TEXT, d NUMERIC, PRIMARY KEY (a))",
	"CREATE TABLE t2 (a INT, e BIGINT, f TEXT, g TIMESTAMP)",
	"INSERT INTO t1 SELECT i, i % 7, 'x' || i, i / 3.0 FROM generate_series(1, 50) g(i)",
	"INSERT INTO t2 SELECT i % 20, i * 1000, 'y' || (i % 5), TIMESTAMP '2024-01-01' + i * INTERVAL '1 minute' FROM generate_series(1, 60) g(i)",
}

var (
	intCols  = []string{"a", "b"}
	cmpOps   = []string{"=", "<>", "<", "<=", ">", ">="}
	arithOps = []string{"+", "-", "*", "/", "%"}
	aggs     = []string{"count(*)", "count(%s)", "sum(%s)", "min(%s)", "max(%s)", "avg(%s)", "count(DISTINCT %s)"}
	windows  = []string{"row_number()", "rank()", "dense_rank()", "sum(%s)", "lag(%s)", "count(*)", "first_value(%s)"}
)

func (g *Gen) pick(xs []string) string { return xs[g.r.Intn(len(xs))] }

func (g *Gen) chance(p float64) bool { return g.r.Float64() < p }

// intExpr returns an integer expression over the columns in cols.
func (g *Gen) intExpr(cols []string, depth int) string {
	if depth <= 0 || g.chance(0.35) {
		if len(cols) > 0 && g.chance(0.7) {
			return g.pick(cols)
		}
		return fmt.Sprint(g.r.Intn(21) - 5)
	}
	switch g.r.Intn(8) {
	case 0:
		return "(" + g.intExpr(cols, depth-1) + " " + g.pick(arithOps) + " " + g.intExpr(cols, depth-1) + ")"
	case 1:
		return "coalesce(" + g.intExpr(cols, depth-1) + ", " + g.intExpr(cols, depth-1) + ")"
	case 2:
		return "CASE WHEN " + g.boolExpr(cols, depth-1) + " THEN " + g.intExpr(cols, depth-1) + " ELSE " + g.intExpr(cols, depth-1) + " END"
	case 3:
		return "abs(" + g.intExpr(cols, depth-1) + ")"
	case 4:
		return "(" + g.intExpr(cols, depth-1) + ")::bigint"
	case 5:
		return "(SELECT max(a) FROM t1)"
	case 6:
		return "length(" + g.textExpr(cols, depth-1) + ")"
	default:
		return "-" + g.intExpr(cols, depth-1)
	}
}

func (g *Gen) textExpr(cols []string, depth int) string {
	switch g.r.Intn(4) {
	case 0:
		return "'" + g.pick([]string{"", "a", "it''s", "x1", "é"}) + "'"
	case 1:
		return "(" + g.intExpr(cols, depth-1) + ")::text"
	case 2:
		return "upper('q')"
	default:
		return "'k' || " + g.intExpr(cols, depth-1)
	}
}

func (g *Gen) boolExpr(cols []string, depth int) string {
	if depth <= 0 || g.chance(0.4) {
		return g.intExpr(cols, 1) + " " + g.pick(cmpOps) + " " + g.intExpr(cols, 1)
	}
	switch g.r.Intn(6) {
	case 0:
		return "(" + g.boolExpr(cols, depth-1) + " AND " + g.boolExpr(cols, depth-1) + ")"
	case 1:
		return "(" + g.boolExpr(cols, depth-1) + " OR " + g.boolExpr(cols, depth-1) + ")"
	case 2:
		return "NOT " + g.boolExpr(cols, depth-1)
	case 3:
		return g.intExpr(cols, depth-1) + " IS NULL"
	case 4:
		return g.intExpr(cols, depth-1) + " IN (SELECT b FROM t1)"
	default:
		return g.intExpr(cols, depth-1) + " BETWEEN 0 AND " + g.intExpr(cols, depth-1)
	}
}

// from returns a FROM item and the integer columns it exposes unqualified.
func (g *Gen) from(depth int) (string, []string) {
	switch g.r.Intn(6) {
	case 0, 1:
		return "t1", intCols
	case 2:
		return "t2", []string{"a", "e"}
	case 3:
		if depth > 0 {
			// A subquery, without an alias half of the time (PostgreSQL 16).
			q, _ := g.selectCore(depth - 1)
			alias := ""
			if g.chance(0.5) {
				alias = " AS s" + fmt.Sprint(g.r.Intn(3))
			}
			return "(" + q + ")" + alias, []string{"x", "y"}
		}
		return "t1", intCols
	case 4:
		return "t1 JOIN t2 USING (a)", []string{"a", "b", "e"}
	default:
		if len(g.views) > 0 {
			return g.pick(g.views), []string{"x", "y"}
		}
		return "t1", intCols
	}
}

// selectCore returns a SELECT with two integer output columns x and y.
func (g *Gen) selectCore(depth int) (string, []string) {
	from, cols := g.from(depth)
	var b strings.Builder
	switch g.r.Intn(5) {
	case 0: // aggregate
		agg := g.pick(aggs)
		if strings.Contains(agg, "%s") {
			agg = fmt.Sprintf(agg, g.pick(cols))
		}
		fmt.Fprintf(&b, "SELECT %s AS x, %s AS y FROM %s", cols[0], agg, from)
		if g.chance(0.5) {
			fmt.Fprintf(&b, " WHERE %s", g.boolExpr(cols, 2))
		}
		fmt.Fprintf(&b, " GROUP BY %s", cols[0])
		if g.chance(0.3) {
			fmt.Fprintf(&b, " HAVING count(*) > %d", g.r.Intn(3))
		}
	case 1: // window function, filtered on in an outer query without alias
		w := g.pick(windows)
		if strings.Contains(w, "%s") {
			w = fmt.Sprintf(w, g.pick(cols))
		}
		fmt.Fprintf(&b, "SELECT x, y FROM (SELECT %s AS x, %s AS y, %s OVER (PARTITION BY %s ORDER BY %s) AS rank FROM %s) WHERE rank <= %d",
			g.pick(cols), g.pick(cols), w, g.pick(cols), g.pick(cols), from, 1+g.r.Intn(3))
	case 2: // set operation
		l, _ := g.selectSimple(from, cols)
		r, _ := g.selectSimple(from, cols)
		fmt.Fprintf(&b, "%s %s %s", l, g.pick([]string{"UNION ALL", "UNION", "INTERSECT", "EXCEPT"}), r)
	default:
		s, _ := g.selectSimple(from, cols)
		b.WriteString(s)
		if g.chance(0.3) {
			fmt.Fprintf(&b, " ORDER BY 1 LIMIT %d", 1+g.r.Intn(5))
		}
	}
	return b.String(), []string{"x", "y"}
}

func (g *Gen) selectSimple(from string, cols []string) (string, []string) {
	s := fmt.Sprintf("SELECT %s AS x, %s AS y FROM %s", g.intExpr(cols, 3), g.intExpr(cols, 2), from)
	if g.chance(0.6) {
		s += " WHERE " + g.boolExpr(cols, 3)
	}
	return s, []string{"x", "y"}
}

// deep returns a statement nested n levels in one of several ways.
func (g *Gen) deep(n int) string {
	switch g.r.Intn(7) {
	case 0:
		return "SELECT " + strings.Repeat("1+", n) + "1"
	case 1:
		return "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n)
	case 2:
		return "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", n) + "t1" + strings.Repeat(")", n)
	case 3:
		return "SELECT a" + strings.Repeat("::int", n) + " FROM t1"
	case 4:
		return "CREATE MATERIALIZED VIEW deep" + fmt.Sprint(g.n) + " AS SELECT " + strings.Repeat("a + ", n) + "a AS x FROM t1"
	case 5:
		return strings.Repeat("SELECT a FROM t1 UNION ALL ", n) + "SELECT a FROM t1"
	default:
		return "SELECT " + strings.Repeat("coalesce(", n) + "1" + strings.Repeat(", 0)", n)
	}
}

// mangle cuts, doubles or swaps a few of s's words.
func (g *Gen) mangle(s string) string {
	w := strings.Fields(s)
	if len(w) < 2 {
		return s
	}
	for k := 1 + g.r.Intn(3); k > 0; k-- {
		i, j := g.r.Intn(len(w)), g.r.Intn(len(w))
		switch g.r.Intn(3) {
		case 0:
			w = append(w[:i], w[i+1:]...)
		case 1:
			w = append(w[:i+1], w[i:]...)
		default:
			w[i], w[j] = w[j], w[i]
		}
		if len(w) < 2 {
			break
		}
	}
	return strings.Join(w, " ")
}

// Next returns the next statement.
func (g *Gen) Next() string {
	g.n++
	switch k := g.r.Intn(100); {
	case k < 30:
		s, _ := g.selectCore(2)
		return s
	case k < 42:
		s, _ := g.selectCore(2)
		name := fmt.Sprintf("mv%d", g.n)
		g.views = append(g.views, name)
		return "CREATE MATERIALIZED VIEW " + name + " AS " + s
	case k < 50:
		s, _ := g.selectCore(1)
		name := fmt.Sprintf("v%d", g.n)
		g.views = append(g.views, name)
		return "CREATE VIEW " + name + " AS " + s
	case k < 55 && len(g.views) > 0:
		// May close a cycle: refused with 42P17.
		return "CREATE OR REPLACE VIEW " + g.pick(g.views) + " AS SELECT x, y FROM " + g.pick(g.views)
	case k < 65:
		return fmt.Sprintf("INSERT INTO t2 VALUES (%s, %s, %s, now())", g.intExpr(nil, 2), g.intExpr(nil, 2), g.textExpr(nil, 1))
	case k < 70:
		return fmt.Sprintf("INSERT INTO t1 VALUES (%d, %s, %s, %s) ON CONFLICT DO NOTHING", 100+g.n, g.intExpr(nil, 2), g.textExpr(nil, 1), g.intExpr(nil, 1))
	case k < 75:
		return "UPDATE t2 SET e = " + g.intExpr([]string{"a", "e"}, 2) + " WHERE " + g.boolExpr([]string{"a", "e"}, 2)
	case k < 78:
		return "DELETE FROM t2 WHERE " + g.boolExpr([]string{"a", "e"}, 2)
	case k < 82 && len(g.views) > 0:
		return "DROP " + g.pick([]string{"VIEW", "MATERIALIZED VIEW"}) + " IF EXISTS " + g.pick(g.views) + " CASCADE"
	case k < 87:
		return g.deep([]int{10, 500, 3000, 40000}[g.r.Intn(4)])
	case k < 89:
		return "SELECT length('" + strings.Repeat("x", g.r.Intn(g.Huge+1)) + "')"
	case k < 90:
		return "INSERT INTO t2 (a, f) VALUES (0, '" + strings.Repeat("y", g.r.Intn(g.Huge+1)) + "')"
	default:
		s, _ := g.selectCore(2)
		return g.mangle(s)
	}
}
