package difftest

import (
	"fmt"
	"math/rand"
	"strings"
)

// typ is a column type the generators know how to produce values and
// expressions for.
type typ int

const (
	tInt typ = iota
	tBig
	tText
	tNum
	tBool
	tDate
	tTs
	numTypes
)

// cast is the type name used in casts: plain NUMERIC, so that a cast
// never overflows (NUMERIC(10,2) would reject the large bigint values).
func (t typ) cast() string {
	if t == tNum {
		return "NUMERIC"
	}
	return t.sql()
}

func (t typ) sql() string {
	return [...]string{"INT", "BIGINT", "TEXT", "NUMERIC(10,2)", "BOOLEAN", "DATE", "TIMESTAMP"}[t]
}

// integral reports whether values of t are exact integers.
func (t typ) integral() bool { return t == tInt || t == tBig }

// numeric reports whether t takes part in arithmetic.
func (t typ) numeric() bool { return t == tInt || t == tBig || t == tNum }

type column struct {
	name string
	typ  typ
	// unstable marks a derived column whose exact value depends on choices
	// PostgreSQL leaves open (string_agg element order, the scale of avg);
	// views built on top do not compute with it.
	unstable bool
}

// relation is a table or view the generators can read: its columns and,
// when known, a set of columns that is unique over its rows.
type relation struct {
	name   string
	cols   []column
	unique []string
	isView bool
	// sortList are the output positions holding unordered string_agg
	// results (see canon).
	sortList map[int]bool
	// depth is 0 for tables, 1 + the deepest input for views.
	depth int
}

func (r *relation) colsOf(t typ) []column {
	var out []column
	for _, c := range r.cols {
		if c.typ == t && !c.unstable {
			out = append(out, c)
		}
	}
	return out
}

// scopeCol is a column visible to an expression, qualified by its alias.
type scopeCol struct {
	ref string
	typ typ
}

type scope []scopeCol

func (s scope) of(t typ) []scopeCol {
	var out []scopeCol
	for _, c := range s {
		if c.typ == t {
			out = append(out, c)
		}
	}
	return out
}

func scopeFor(alias string, r *relation) scope {
	var s scope
	for _, c := range r.cols {
		if c.unstable {
			continue
		}
		s = append(s, scopeCol{ref: alias + "." + c.name, typ: c.typ})
	}
	return s
}

// gen draws values and expressions from one seeded source.
type gen struct {
	r *rand.Rand
	// noSubquery turns off subqueries in expressions (views).
	noSubquery bool
	// tables are the base tables subqueries may read.
	tables []*relation
	// allowDivision permits numeric division (whose scale PostgreSQL
	// chooses by its own rule; canonicalisation rounds it).
	allowDivision bool
	aliasSeq      int
}

func (g *gen) intn(n int) int        { return g.r.Intn(n) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func pick[T any](g *gen, xs []T) T { return xs[g.r.Intn(len(xs))] }

var texts = []string{"a", "b", "ab", "B", "", "x y", "zz", "a%", "Ab"}

// literal returns a SQL literal of type t (never NULL).
func (g *gen) literal(t typ) string {
	switch t {
	case tInt:
		return fmt.Sprint(g.intn(13) - 3)
	case tBig:
		// Typed literals keep the generator's type tracking exact (a bare
		// 5 is an integer).
		if g.chance(0.2) {
			return fmt.Sprintf("%d::bigint", (int64(g.intn(5))+1)*1_000_000_007)
		}
		return fmt.Sprintf("%d::bigint", g.intn(60)-10)
	case tText:
		return "'" + strings.ReplaceAll(pick(g, texts), "'", "''") + "'"
	case tNum:
		return fmt.Sprintf("%d.%02d", g.intn(40)-15, g.intn(100))
	case tBool:
		return pick(g, []string{"true", "false"})
	case tDate:
		return fmt.Sprintf("DATE '2024-0%d-%02d'", 1+g.intn(3), 1+g.intn(28))
	case tTs:
		return fmt.Sprintf("TIMESTAMP '2024-0%d-%02d %02d:%02d:00'", 1+g.intn(3), 1+g.intn(28), g.intn(24), g.intn(4)*15)
	}
	panic("unknown type")
}

// value returns a literal or, with probability pNull, NULL.
func (g *gen) value(t typ, pNull float64) string {
	if g.chance(pNull) {
		return "NULL"
	}
	return g.literal(t)
}

// leaf returns a column of type t from the scope, or a literal.
func (g *gen) leaf(s scope, t typ) string {
	cs := s.of(t)
	if len(cs) > 0 && !g.chance(0.2) {
		return pick(g, cs).ref
	}
	if t == tInt && len(cs) == 0 && !g.chance(0.3) {
		// Derive an int from another column so expressions stay
		// data-dependent.
		if ts := s.of(tText); len(ts) > 0 {
			return "length(" + pick(g, ts).ref + ")"
		}
	}
	if g.chance(0.1) {
		return "NULL::" + t.sql()
	}
	return g.literal(t)
}

// expr returns an expression of type t over scope s.
func (g *gen) expr(s scope, t typ, depth int) string {
	if depth <= 0 || g.chance(0.35) {
		return g.leaf(s, t)
	}
	d := depth - 1
	// Forms shared by every type.
	switch g.intn(10) {
	case 0:
		return fmt.Sprintf("COALESCE(%s, %s)", g.expr(s, t, d), g.expr(s, t, d))
	case 1:
		return fmt.Sprintf("(CASE WHEN %s THEN %s ELSE %s END)", g.expr(s, tBool, d), g.expr(s, t, d), g.expr(s, t, d))
	case 2:
		if !g.noSubquery && len(g.tables) > 0 && g.chance(0.5) {
			return g.scalarSubquery(s, t)
		}
	}
	switch t {
	case tInt:
		switch g.intn(8) {
		case 0:
			return fmt.Sprintf("(%s + %s)", g.expr(s, tInt, d), g.expr(s, tInt, d))
		case 1:
			return fmt.Sprintf("(%s - %s)", g.expr(s, tInt, d), g.expr(s, tInt, d))
		case 2:
			return fmt.Sprintf("(%s * %s)", g.leaf(s, tInt), g.leaf(s, tInt))
		case 3:
			return fmt.Sprintf("abs(%s)", g.expr(s, tInt, d))
		case 4:
			return fmt.Sprintf("(%s %% NULLIF(%s, 0))", g.expr(s, tInt, d), g.leaf(s, tInt))
		case 5:
			return fmt.Sprintf("length(%s)", g.expr(s, tText, d))
		case 6:
			return fmt.Sprintf("%s(%s, %s)", pick(g, []string{"greatest", "least"}), g.expr(s, tInt, d), g.expr(s, tInt, d))
		default:
			return fmt.Sprintf("(%s / NULLIF(%s, 0))", g.expr(s, tInt, d), g.leaf(s, tInt))
		}
	case tBig:
		switch g.intn(4) {
		case 0:
			return fmt.Sprintf("(%s + %s)", g.expr(s, tBig, d), g.expr(s, tInt, d))
		case 1:
			return fmt.Sprintf("(%s - %s)", g.expr(s, tBig, d), g.expr(s, tBig, d))
		case 2:
			return fmt.Sprintf("(%s)::bigint", g.expr(s, tInt, d))
		default:
			return fmt.Sprintf("abs(%s)", g.expr(s, tBig, d))
		}
	case tNum:
		switch g.intn(6) {
		case 0:
			return fmt.Sprintf("(%s + %s)", g.expr(s, tNum, d), g.expr(s, tNum, d))
		case 1:
			return fmt.Sprintf("(%s * %s)", g.expr(s, tNum, d), g.leaf(s, tInt))
		case 2:
			return fmt.Sprintf("round(%s, %d)", g.expr(s, tNum, d), g.intn(2))
		case 3:
			if g.allowDivision {
				return fmt.Sprintf("(%s / NULLIF(%s, 0))", g.expr(s, tNum, d), g.leaf(s, tInt))
			}
			return fmt.Sprintf("abs(%s)", g.expr(s, tNum, d))
		case 4:
			return fmt.Sprintf("(%s)::numeric", g.expr(s, pick(g, []typ{tInt, tBig}), d))
		default:
			return fmt.Sprintf("%s(%s)", pick(g, []string{"abs", "ceil", "floor", "trunc"}), g.expr(s, tNum, d))
		}
	case tText:
		switch g.intn(8) {
		case 0:
			return fmt.Sprintf("upper(%s)", g.expr(s, tText, d))
		case 1:
			return fmt.Sprintf("lower(%s)", g.expr(s, tText, d))
		case 2:
			return fmt.Sprintf("(%s || %s)", g.expr(s, tText, d), g.expr(s, tText, d))
		case 3:
			return fmt.Sprintf("substr(%s, %d, %d)", g.expr(s, tText, d), 1+g.intn(2), g.intn(3))
		case 4:
			return fmt.Sprintf("replace(%s, 'a', 'q')", g.expr(s, tText, d))
		case 5:
			return fmt.Sprintf("(%s)::text", g.expr(s, pick(g, []typ{tInt, tBig, tBool, tDate}), d))
		case 6:
			return fmt.Sprintf("concat(%s, %s)", g.expr(s, tText, d), g.expr(s, tInt, d))
		default:
			return fmt.Sprintf("%s(%s, %d)", pick(g, []string{"left", "right"}), g.expr(s, tText, d), g.intn(3))
		}
	case tBool:
		return g.pred(s, depth)
	case tDate:
		switch g.intn(3) {
		case 0:
			return fmt.Sprintf("(%s + %d)", g.expr(s, tDate, d), g.intn(40)-20)
		case 1:
			return fmt.Sprintf("(%s)::date", g.expr(s, tTs, d))
		default:
			return g.leaf(s, tDate)
		}
	case tTs:
		switch g.intn(3) {
		case 0:
			return fmt.Sprintf("(%s + interval '%d hours')", g.expr(s, tTs, d), g.intn(50)-25)
		case 1:
			return fmt.Sprintf("date_trunc('%s', %s)", pick(g, []string{"day", "hour", "month"}), g.expr(s, tTs, d))
		default:
			return fmt.Sprintf("(%s)::timestamp", g.expr(s, tDate, d))
		}
	}
	panic("unknown type")
}

// comparable picks a type for a comparison, preferring types in scope.
func (g *gen) someType(s scope) typ {
	if len(s) > 0 && !g.chance(0.1) {
		return pick(g, s).typ
	}
	return typ(g.intn(int(numTypes)))
}

// pred returns a boolean expression over s.
func (g *gen) pred(s scope, depth int) string {
	if depth <= 0 {
		if cs := s.of(tBool); len(cs) > 0 && g.chance(0.3) {
			return pick(g, cs).ref
		}
		t := g.someType(s)
		return fmt.Sprintf("%s %s %s", g.leaf(s, t), pick(g, []string{"=", "<>", "<", "<=", ">", ">="}), g.leaf(s, t))
	}
	d := depth - 1
	switch g.intn(12) {
	case 0, 1:
		return fmt.Sprintf("(%s AND %s)", g.pred(s, d), g.pred(s, d))
	case 2:
		return fmt.Sprintf("(%s OR %s)", g.pred(s, d), g.pred(s, d))
	case 3:
		return fmt.Sprintf("NOT (%s)", g.pred(s, d))
	case 4:
		t := g.someType(s)
		return fmt.Sprintf("%s IS %sNULL", g.expr(s, t, d), pick(g, []string{"", "NOT "}))
	case 5:
		t := g.someType(s)
		return fmt.Sprintf("%s BETWEEN %s AND %s", g.expr(s, t, d), g.literal(t), g.literal(t))
	case 6:
		t := g.someType(s)
		n := 1 + g.intn(3)
		lits := make([]string, n)
		for i := range lits {
			lits[i] = g.value(t, 0.1)
		}
		return fmt.Sprintf("%s %sIN (%s)", g.expr(s, t, d), pick(g, []string{"", "NOT "}), strings.Join(lits, ", "))
	case 7:
		return fmt.Sprintf("%s %s '%s'", g.expr(s, tText, d), pick(g, []string{"LIKE", "NOT LIKE", "ILIKE"}), pick(g, []string{"a%", "%b", "_", "%", "A%"}))
	case 8:
		t := g.someType(s)
		return fmt.Sprintf("%s IS %sDISTINCT FROM %s", g.expr(s, t, d), pick(g, []string{"", "NOT "}), g.expr(s, t, d))
	case 9:
		if !g.noSubquery && len(g.tables) > 0 {
			return g.subqueryPred(s)
		}
		fallthrough
	default:
		t := g.someType(s)
		return fmt.Sprintf("%s %s %s", g.expr(s, t, d), pick(g, []string{"=", "<>", "<", "<=", ">", ">="}), g.expr(s, t, d))
	}
}

func (g *gen) alias() string {
	g.aliasSeq++
	return fmt.Sprintf("q%d", g.aliasSeq)
}

// scalarSubquery returns a one-column subquery of type t, correlated with
// s half of the time. It is usually an aggregate (one row); otherwise it
// may return several rows, which must raise 21000 on both systems.
func (g *gen) scalarSubquery(s scope, t typ) string {
	tb := pick(g, g.tables)
	a := g.alias()
	inner := scopeFor(a, tb)
	where := ""
	if g.chance(0.5) {
		where = " WHERE " + g.correlation(s, inner)
	}
	switch {
	case t == tBig && g.chance(0.7):
		return fmt.Sprintf("(SELECT count(*) FROM %s %s%s)", tb.name, a, where)
	case g.chance(0.8) && t != tBool:
		return fmt.Sprintf("(SELECT %s(%s) FROM %s %s%s)", pick(g, []string{"min", "max"}), g.leaf(inner, t), tb.name, a, where)
	default:
		return fmt.Sprintf("(SELECT %s FROM %s %s%s ORDER BY 1 LIMIT 1)", g.leaf(inner, t), tb.name, a, where)
	}
}

// correlation returns an equality between an inner and an outer column of
// the same type, or an inner-only predicate when there is none.
func (g *gen) correlation(outer, inner scope) string {
	for range 4 {
		ic := pick(g, inner)
		if oc := outer.of(ic.typ); len(oc) > 0 {
			return fmt.Sprintf("%s = %s", ic.ref, pick(g, oc).ref)
		}
	}
	return g.pred(inner, 1)
}

// subqueryPred returns IN / NOT IN / EXISTS / NOT EXISTS / ANY predicates.
func (g *gen) subqueryPred(s scope) string {
	tb := pick(g, g.tables)
	a := g.alias()
	inner := scopeFor(a, tb)
	switch g.intn(3) {
	case 0:
		where := g.correlation(s, inner)
		if g.chance(0.5) {
			where += " AND " + g.pred(inner, 1)
		}
		return fmt.Sprintf("%sEXISTS (SELECT 1 FROM %s %s WHERE %s)", pick(g, []string{"", "NOT "}), tb.name, a, where)
	default:
		ic := pick(g, inner)
		where := ""
		if g.chance(0.6) {
			where = " WHERE " + g.pred(inner, 1)
		}
		return fmt.Sprintf("%s %sIN (SELECT %s FROM %s %s%s)", g.leaf(s, ic.typ), pick(g, []string{"", "NOT "}), ic.ref, tb.name, a, where)
	}
}

// randomTable draws a table schema: an integer primary key id, a join key
// k, a group column g and a few more columns of random types.
func (g *gen) randomTable(name string) *relation {
	r := &relation{name: name, unique: []string{"id"}}
	r.cols = append(r.cols, column{name: "id", typ: pick(g, []typ{tInt, tInt, tBig})})
	r.cols = append(r.cols, column{name: "k", typ: pick(g, []typ{tInt, tInt, tBig})})
	r.cols = append(r.cols, column{name: "g", typ: pick(g, []typ{tInt, tText, tBool})})
	n := 2 + g.intn(4)
	for i := range n {
		t := typ(g.intn(int(numTypes)))
		if i == 0 {
			t = pick(g, []typ{tBig, tNum, tInt})
		}
		r.cols = append(r.cols, column{name: fmt.Sprintf("c%d", i), typ: t})
	}
	return r
}

func (r *relation) createSQL() string {
	defs := make([]string, len(r.cols))
	for i, c := range r.cols {
		defs[i] = c.name + " " + c.typ.sql()
		if c.name == "id" {
			defs[i] += " PRIMARY KEY"
		}
	}
	return fmt.Sprintf("CREATE TABLE %s (%s)", r.name, strings.Join(defs, ", "))
}

// keyValue draws a join-key value from a small domain so joins match.
func (g *gen) keyValue() string {
	if g.chance(0.1) {
		return "NULL"
	}
	return fmt.Sprint(g.intn(6))
}

// groupValue draws a group value from a small domain.
func (g *gen) groupValue(t typ) string {
	if g.chance(0.1) {
		return "NULL"
	}
	switch t {
	case tText:
		return pick(g, []string{"'a'", "'b'", "'c'"})
	case tBool:
		return pick(g, []string{"true", "false"})
	}
	return fmt.Sprint(g.intn(4))
}

// rowValues draws one row for r with primary key id.
func (g *gen) rowValues(r *relation, id int) string {
	vals := make([]string, len(r.cols))
	for i, c := range r.cols {
		switch c.name {
		case "id":
			vals[i] = fmt.Sprint(id)
		case "k":
			vals[i] = g.keyValue()
		case "g":
			vals[i] = g.groupValue(c.typ)
		default:
			vals[i] = g.value(c.typ, 0.15)
		}
	}
	return "(" + strings.Join(vals, ", ") + ")"
}

// insert returns an INSERT of n fresh rows into r, advancing *next.
func (g *gen) insert(r *relation, n int, next *int) string {
	rows := make([]string, n)
	for i := range rows {
		rows[i] = g.rowValues(r, *next)
		*next++
	}
	return fmt.Sprintf("INSERT INTO %s VALUES %s", r.name, strings.Join(rows, ", "))
}

// update returns an UPDATE of some non-key columns of r.
func (g *gen) update(r *relation) string {
	s := scope{}
	for _, c := range r.cols {
		s = append(s, scopeCol{ref: c.name, typ: c.typ})
	}
	var sets []string
	for _, c := range r.cols[1:] {
		if len(sets) > 0 && !g.chance(0.3) {
			continue
		}
		if !g.chance(0.5) && len(sets) < 2 {
			continue
		}
		var v string
		switch {
		case c.name == "k":
			v = g.keyValue()
		case c.name == "g":
			v = g.groupValue(c.typ)
		case g.chance(0.5):
			v = g.value(c.typ, 0.15)
		default:
			v = g.updateExpr(s, c)
		}
		sets = append(sets, c.name+" = "+v)
	}
	if len(sets) == 0 {
		c := r.cols[1+g.intn(len(r.cols)-1)]
		sets = append(sets, c.name+" = "+g.value(c.typ, 0.2))
	}
	return fmt.Sprintf("UPDATE %s SET %s WHERE %s", r.name, strings.Join(sets, ", "), g.dmlWhere(r, s))
}

// updateExpr computes a new value from the old ones, without risking
// overflow or out-of-range errors.
func (g *gen) updateExpr(s scope, c column) string {
	switch c.typ {
	case tInt:
		return fmt.Sprintf("COALESCE(%s, 0) %% 7 + %d", c.name, g.intn(5))
	case tBig:
		return fmt.Sprintf("COALESCE(%s, 0) %% 1000 - %d", c.name, g.intn(50))
	case tNum:
		return fmt.Sprintf("round(%s / 2, 2)", c.name)
	case tText:
		return fmt.Sprintf("substr(%s || %s, 1, 3)", c.name, g.literal(tText))
	case tBool:
		return "NOT " + c.name
	case tDate:
		return fmt.Sprintf("%s + %d", c.name, g.intn(5)-2)
	case tTs:
		return fmt.Sprintf("%s + interval '%d minutes'", c.name, 15*(g.intn(9)-4))
	}
	panic("unknown type")
}

// dmlWhere selects a modest share of rows.
func (g *gen) dmlWhere(r *relation, s scope) string {
	switch g.intn(4) {
	case 0:
		return fmt.Sprintf("id %% %d = %d", 2+g.intn(5), g.intn(2))
	case 1:
		return fmt.Sprintf("id IN (%d, %d, %d)", g.intn(40), g.intn(40), g.intn(40))
	case 2:
		return g.pred(s, 1)
	default:
		return fmt.Sprintf("k = %d", g.intn(6))
	}
}

// deleteStmt returns a DELETE of some rows of r.
func (g *gen) deleteStmt(r *relation) string {
	s := scope{}
	for _, c := range r.cols {
		s = append(s, scopeCol{ref: c.name, typ: c.typ})
	}
	return fmt.Sprintf("DELETE FROM %s WHERE %s", r.name, g.dmlWhere(r, s))
}
