package batch

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/expr"
	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

type memSource map[string][]types.Row

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

func (m memSource) Scan(_ context.Context, rel *catalog.Relation) (RowIterator, error) {
	rows, ok := m[rel.Name]
	if !ok {
		return nil, fmt.Errorf("table %s has been dropped", rel.Name)
	}
	return &sliceIter{rows: rows}, nil
}

func countAgg(t *testing.T) *expr.Aggregate {
	a, err := expr.LookupAggregate("count", []types.Type{types.Int64}, false)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func col(i int) expr.Expr { return &expr.ColumnRef{Index: i, Typ: types.Int64} }

func ints(vs ...any) types.Row {
	r := make(types.Row, len(vs))
	for i, v := range vs {
		if v != nil {
			r[i] = types.DInt64(int64(v.(int)))
		}
	}
	return r
}

func rel(name string, n int) (*catalog.Relation, plan.Schema) {
	r := &catalog.Relation{Name: name}
	var s plan.Schema
	for i := 0; i < n; i++ {
		c := catalog.Column{Name: fmt.Sprintf("c%d", i), Type: types.Int64}
		r.Columns = append(r.Columns, c)
		s = append(s, plan.Column{Name: c.Name, Type: c.Type, Table: name})
	}
	return r, s
}

func collect(t *testing.T, src memSource, n plan.Node) []string {
	t.Helper()
	rows, err := Collect(context.Background(), &Env{Data: src}, n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.String()
	}
	return out
}

func eq(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v; want %v", got, want)
	}
}

func TestJoinsNullsAndSort(t *testing.T) {
	a, as := rel("a", 1)
	b, bs := rel("b", 1)
	src := memSource{"a": {ints(1), ints(2), ints(nil)}, "b": {ints(2), ints(3), ints(nil)}}
	mk := func(k plan.JoinKind) plan.Node {
		return &plan.Sort{Input: &plan.Join{Kind: k, Left: &plan.Scan{Rel: a, Out: as}, Right: &plan.Scan{Rel: b, Out: bs},
			LeftKeys: []expr.Expr{col(0)}, RightKeys: []expr.Expr{col(0)}, Out: append(append(plan.Schema{}, as...), bs...)},
			Keys: []plan.SortKey{{Expr: col(0)}, {Expr: col(1)}}}
	}
	eq(t, collect(t, src, mk(plan.InnerJoin)), "(2, 2)")
	eq(t, collect(t, src, mk(plan.LeftJoin)), "(1, NULL)", "(2, 2)", "(NULL, NULL)")
	eq(t, collect(t, src, mk(plan.FullJoin)), "(1, NULL)", "(2, 2)", "(NULL, 3)", "(NULL, NULL)", "(NULL, NULL)")
	semi := &plan.Join{Kind: plan.SemiJoin, Left: &plan.Scan{Rel: a, Out: as}, Right: &plan.Scan{Rel: b, Out: bs},
		LeftKeys: []expr.Expr{col(0)}, RightKeys: []expr.Expr{col(0)}, Out: as}
	eq(t, collect(t, src, semi), "(2)")
	anti := *semi
	anti.Kind = plan.AntiJoin
	eq(t, collect(t, src, &anti), "(1)", "(NULL)")
	// NOT IN with a NULL on the right: nothing qualifies.
	anti.NullAware = true
	eq(t, collect(t, src, &anti))
	// ... and with an empty right side everything does, NULL included.
	eq(t, collect(t, memSource{"a": src["a"], "b": nil}, &anti), "(1)", "(2)", "(NULL)")
	// NULLS FIRST / DESC ordering.
	s := &plan.Sort{Input: &plan.Scan{Rel: a, Out: as}, Keys: []plan.SortKey{{Expr: col(0), Desc: true, NullsFirst: true}}}
	eq(t, collect(t, src, s), "(NULL)", "(2)", "(1)")
}

func TestGlobalAggregateOnEmptyInput(t *testing.T) {
	a, as := rel("a", 1)
	agg := &plan.Aggregate{Input: &plan.Scan{Rel: a, Out: as}, Aggs: []*plan.AggCall{{Name: "count", Args: []expr.Expr{col(0)}, Func: countAgg(t)}}}
	eq(t, collect(t, memSource{"a": nil}, agg), "(0)")
	grouped := &plan.Aggregate{Input: &plan.Scan{Rel: a, Out: as}, GroupBy: []expr.Expr{col(0)}, Aggs: agg.Aggs}
	eq(t, collect(t, memSource{"a": nil}, grouped))
	eq(t, collect(t, memSource{"a": {ints(1), ints(nil), ints(1)}}, grouped), "(1, 2)", "(NULL, 0)")
}

func TestSetOps(t *testing.T) {
	a, as := rel("a", 1)
	b, bs := rel("b", 1)
	src := memSource{"a": {ints(1), ints(1), ints(2), ints(nil), ints(nil)}, "b": {ints(1), ints(nil), ints(3)}}
	mk := func(k plan.SetOpKind, all bool) plan.Node {
		return &plan.Sort{Input: &plan.SetOp{Kind: k, All: all, Left: &plan.Scan{Rel: a, Out: as}, Right: &plan.Scan{Rel: b, Out: bs}, Out: as},
			Keys: []plan.SortKey{{Expr: col(0)}}}
	}
	eq(t, collect(t, src, mk(plan.Union, false)), "(1)", "(2)", "(3)", "(NULL)")
	eq(t, collect(t, src, mk(plan.Intersect, false)), "(1)", "(NULL)")
	eq(t, collect(t, src, mk(plan.Intersect, true)), "(1)", "(NULL)")
	eq(t, collect(t, src, mk(plan.Except, false)), "(2)")
	eq(t, collect(t, src, mk(plan.Except, true)), "(1)", "(2)", "(NULL)")
}

func TestScanOfDroppedTableFails(t *testing.T) {
	a, as := rel("gone", 1)
	_, err := Collect(context.Background(), &Env{Data: memSource{}}, &plan.Scan{Rel: a, Out: as})
	if err == nil {
		t.Fatal("scan of a dropped table returned no error (I4)")
	}
}

func TestCancellation(t *testing.T) {
	a, as := rel("a", 1)
	rows := make([]types.Row, 10000)
	for i := range rows {
		rows[i] = ints(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Collect(ctx, &Env{Data: memSource{"a": rows}}, &plan.Sort{Input: &plan.Scan{Rel: a, Out: as}, Keys: []plan.SortKey{{Expr: col(0)}}})
	if err == nil {
		t.Fatal("canceled sort finished")
	}
}

// TopN must return exactly what a stable sort followed by LIMIT/OFFSET
// returns, ties in input order included.
func TestTopNMatchesSortLimit(t *testing.T) {
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	a, as := rel("a", 2)
	for iter := 0; iter < 200; iter++ {
		n := r.Intn(40)
		rows := make([]types.Row, n)
		for i := range rows {
			var k any = r.Intn(5)
			if r.Intn(5) == 0 {
				k = nil
			}
			rows[i] = ints(k, i)
		}
		keys := []plan.SortKey{{Expr: col(0), Desc: r.Intn(2) == 0, NullsFirst: r.Intn(2) == 0}}
		lim := &expr.Const{Value: types.DInt64(int64(r.Intn(8))), Typ: types.Int64}
		off := &expr.Const{Value: types.DInt64(int64(r.Intn(4))), Typ: types.Int64}
		src := memSource{"a": rows}
		want := collect(t, src, &plan.Limit{Input: &plan.Sort{Input: &plan.Scan{Rel: a, Out: as}, Keys: keys}, Limit: lim, Offset: off})
		got := collect(t, src, &plan.TopN{Input: &plan.Scan{Rel: a, Out: as}, Keys: keys, Limit: lim, Offset: off})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d iter %d: topN %v; sort+limit %v", seed, iter, got, want)
		}
	}
}
