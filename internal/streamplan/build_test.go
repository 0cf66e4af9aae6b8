package streamplan

import (
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

type fakeCatalog map[string]*catalog.Relation

func (c fakeCatalog) ResolveRelation(schema, name string) (*catalog.Relation, error) {
	if r, ok := c[name]; ok {
		return r, nil
	}
	return nil, sqlerr.Errorf(sqlerr.UndefinedTable, "relation %q does not exist", name)
}

func testCatalog() fakeCatalog {
	return fakeCatalog{
		"t": {ID: 1, Name: "t", Kind: catalog.KindTable, StateTable: 11, PK: []int{0}, DistKey: []int{0},
			Columns: []catalog.Column{{Name: "id", Type: types.Int32}, {Name: "g", Type: types.Int32}, {Name: "v", Type: types.Int64}}},
		"u": {ID: 2, Name: "u", Kind: catalog.KindTable, StateTable: 12, PK: []int{2}, DistKey: []int{2},
			Columns: []catalog.Column{{Name: "tid", Type: types.Int32}, {Name: "w", Type: types.Varchar}, {Name: "_row_id", Type: types.Int64, Hidden: true}}},
	}
}

func planFor(t *testing.T, query string) (*Node, error) {
	t.Helper()
	st, err := parser.ParseOne(query)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sql.Prepare(testCatalog(), st, nil)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return Build(p.Plan)
}

// Every plan keeps a stream key that identifies its rows and exchanges
// data where an operator needs it colocated.
func TestBuildKeysAndExchanges(t *testing.T) {
	cases := []struct {
		query string
		// want lists substrings that must appear in order in the EXPLAIN text.
		want []string
	}{
		{"SELECT v FROM t WHERE v > 1", []string{"StreamMaterialize", "key: [1]", "StreamProject", "StreamFilter", "StreamScan t"}},
		{"SELECT g, sum(v), count(*) FROM t GROUP BY g", []string{"StreamMaterialize", "key: [0]", "StreamHashAgg", "StreamExchange dist hash[0]", "StreamProject"}},
		{"SELECT count(*) FROM t", []string{"StreamMaterialize", "dist: single", "StreamSimpleAgg", "StreamExchange dist single"}},
		{"SELECT t.v, u.w FROM t JOIN u ON t.id = u.tid", []string{"StreamMaterialize", "StreamProject", "StreamHashJoin Inner", "StreamExchange dist hash[3]", "StreamScan t", "StreamExchange dist hash[3]", "StreamScan u"}},
		{"SELECT v FROM t ORDER BY v DESC LIMIT 3", []string{"StreamMaterialize", "StreamTopN", "limit 3", "StreamExchange dist single"}},
		{"SELECT g FROM t UNION ALL SELECT tid FROM u", []string{"StreamMaterialize", "StreamUnionAll"}},
		{"SELECT DISTINCT g FROM t", []string{"StreamMaterialize", "StreamDistinct", "StreamExchange dist hash[0]"}},
		// A correlated aggregate subquery: grouped by the correlation and
		// LEFT-joined on it (correlated.go).
		{"SELECT id, (SELECT max(tid) FROM u WHERE u.tid = t.g) FROM t", []string{"StreamMaterialize", "StreamProject", "StreamHashJoin Left", "StreamScan t", "StreamHashAgg group key [0]", "StreamScan u"}},
		{"SELECT id FROM t WHERE v > (SELECT count(*) FROM u WHERE t.g = u.tid AND u.w <> 'x')", []string{"StreamFilter", "StreamHashJoin Left", "StreamHashAgg", "StreamFilter", "StreamScan u"}},
		{"SELECT id FROM t WHERE v = (SELECT min(x.tid) FROM u x, u y WHERE x.tid = y.tid AND x.tid = t.g AND y.w <> 'a')", []string{"StreamHashJoin Left", "StreamHashAgg", "StreamHashJoin Inner"}},
		// NOT IN, EXISTS and IN as counts joined to the outer rows
		// (membership.go): the hit count grouped by the value, the shape
		// (empty, NULLs) as one row joined ON true.
		{"SELECT * FROM t WHERE id NOT IN (SELECT tid FROM u)", []string{"StreamFilter", "StreamHashJoin Left", "StreamHashJoin Left", "StreamHashAgg group key [0]", "StreamScan u", "StreamSimpleAgg", "StreamScan u"}},
		{"SELECT id, EXISTS (SELECT 1 FROM u WHERE u.tid = t.g) OR v > 1 FROM t", []string{"StreamProject", "StreamHashJoin Left", "StreamScan t", "StreamHashAgg group key [0]", "StreamScan u"}},
		{"SELECT id FROM t WHERE v > 1 OR g IN (SELECT tid FROM u WHERE u.w = 'x' AND u.tid = t.id)", []string{"StreamFilter", "StreamHashJoin Left", "StreamHashJoin Left", "StreamHashAgg group key [0 1]", "StreamHashAgg group key [0]"}},
		// A dynamic filter (dynamicfilter.go): the bound's one row on the
		// right, the rest of the WHERE below the filter on the left.
		{"SELECT id FROM t WHERE g > 0 AND v > (SELECT count(*) FROM u)", []string{"StreamDynamicFilter", "StreamExchange dist single", "StreamFilter", "StreamScan t", "StreamSimpleAgg", "StreamScan u"}},
		// A temporal filter (temporal.go).
		{"SELECT id FROM t WHERE v > 0 AND now() - INTERVAL '1 hour' < to_timestamp(v)", []string{"StreamTemporalFilter", "StreamExchange dist hash[0]", "StreamFilter", "StreamScan t"}},
	}
	for _, c := range cases {
		n, err := planFor(t, c.query)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		text := strings.Join(Format(n), "\n")
		rest := text
		for _, w := range c.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: plan lacks %q (in order):\n%s", c.query, w, text)
				break
			}
			rest = rest[i+len(w):]
		}
		if len(n.Key) == 0 && n.Dist.Kind != DistSingle {
			t.Errorf("%s: empty stream key on a distributed view:\n%s", c.query, text)
		}
	}
}

// Constructs without incremental maintenance are refused with 0A000.
func TestBuildRejectsUnsupported(t *testing.T) {
	for _, q := range []string{
		"SELECT id, EXISTS (SELECT 1 FROM u WHERE u.tid > t.g) FROM t",                     // EXISTS correlated by a non-equality
		"SELECT id, (SELECT max(tid) FROM u WHERE u.tid > t.g) FROM t",                     // correlated by a non-equality
		"SELECT id, (SELECT max(tid + t.v) FROM u WHERE u.tid = t.g) FROM t",               // the outer row in an aggregate
		"SELECT id, (SELECT tid FROM u WHERE u.tid = t.g LIMIT 1) FROM t",                  // not an aggregate
		"SELECT id, (SELECT max(tid) FROM u WHERE u.tid = t.g HAVING count(*) > 1) FROM t", // HAVING
		"SELECT id FROM t WHERE to_timestamp(v) > now() OR v > 1",                          // now() outside a conjunct
	} {
		_, err := planFor(t, q)
		if sqlerr.Code(err) != sqlerr.FeatureNotSupported {
			t.Errorf("%s: err = %v; want 0A000", q, err)
		}
	}
}

// A volatile call or a subquery deep inside an expression is found: the
// walk over bound expressions once stopped at 64 reflection levels, so
// now() at the end of a 40-term sum slipped into a view. A walk cut at its
// bound refuses the view (54001) rather than miss what it did not see.
func TestBuildSeesDeepExpressions(t *testing.T) {
	// Sums associate to the left: the first term is the deepest.
	sum := strings.Repeat(" + id", 300)
	_, err := planFor(t, "SELECT extract(epoch from now())::int"+sum+" AS x FROM t")
	if sqlerr.Code(err) != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), "now()") {
		t.Errorf("now() under a 300-term sum: err = %v; want 0A000 naming now()", err)
	}
	_, err = planFor(t, "SELECT id FROM t WHERE (SELECT max(tid) FROM u)"+sum+" > 0")
	if err != nil {
		t.Errorf("scalar subquery under a 300-term sum: %v; want it planned as a join", err)
	}
	deep := expr.Expr(&expr.ColumnRef{Index: 0, Typ: types.Int32})
	for range 5000 {
		var berr error
		if deep, berr = expr.NewBinaryOp("+", deep, &expr.Const{Value: types.DInt32(1), Typ: types.Int32}); berr != nil {
			t.Fatal(berr)
		}
	}
	if _, tooDeep := volatileCall(deep); !tooDeep {
		t.Errorf("a 5,000-level expression walked completely; want the walk cut and reported")
	}
}
