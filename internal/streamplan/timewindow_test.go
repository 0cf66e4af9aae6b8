package streamplan

import (
	"slices"
	"testing"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sql"
	"github.com/runneldb/runnel/internal/sql/parser"
	"github.com/runneldb/runnel/internal/types"
)

func timeWindowCatalog() fakeCatalog {
	c := testCatalog()
	c["ev"] = &catalog.Relation{ID: 3, Name: "ev", Kind: catalog.KindSource, PK: []int{3}, AppendOnly: true,
		Columns: []catalog.Column{{Name: "k", Type: types.Int64}, {Name: "at", Type: types.Timestamp},
			{Name: "v", Type: types.Int64}, {Name: "_row_id", Type: types.Int64, Hidden: true}}}
	c["tt"] = &catalog.Relation{ID: 4, Name: "tt", Kind: catalog.KindTable, StateTable: 14, PK: []int{0}, DistKey: []int{0},
		Columns: []catalog.Column{{Name: "id", Type: types.Int32}, {Name: "at", Type: types.Timestamptz}}}
	return c
}

func timeWindowPlan(t *testing.T, query string) *Node {
	t.Helper()
	st, err := parser.ParseOne(query)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sql.Prepare(timeWindowCatalog(), st, nil)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	n, err := Build(p.Plan)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func findOp(n *Node, op Op) *Node {
	if n.Op == op {
		return n
	}
	for _, c := range n.Inputs {
		if f := findOp(c, op); f != nil {
			return f
		}
	}
	return nil
}

// A HOP's stream key is its input's key plus window_start; over a source
// it stays append-only (Materialize's fast path); the projection above it
// is fused into it.
func TestHopWindowPlan(t *testing.T) {
	root := timeWindowPlan(t, "SELECT k, window_start, v FROM HOP(ev, at, INTERVAL '1 second', INTERVAL '3 seconds')")
	if !appendOnly(root.Inputs[0]) {
		t.Fatalf("HOP over a source is not append-only:\n%v", Format(root))
	}
	hop := findOp(root, OpHopWindow)
	if hop == nil || hop.Exprs == nil || findOp(root, OpProject) != nil {
		t.Fatalf("want the projection fused into the hop window:\n%v", Format(root))
	}
	// Output: k, window_start, v, then the hidden _row_id; key: _row_id,
	// window_start.
	if !slices.Equal(hop.Key, []int{3, 1}) || len(hop.Schema) != 4 || !hop.Schema[3].Hidden {
		t.Fatalf("key %v schema %v, want key [3 1] and a hidden _row_id", hop.Key, hop.Schema)
	}
	// Over a table (which takes updates and deletes) it is not.
	root = timeWindowPlan(t, "SELECT * FROM HOP(tt, at, INTERVAL '1 second', INTERVAL '3 seconds')")
	if appendOnly(root.Inputs[0]) {
		t.Fatalf("HOP over a table is append-only:\n%v", Format(root))
	}
	if hop := findOp(root, OpHopWindow); hop == nil || !slices.Equal(hop.Key, []int{0, 2}) {
		t.Fatalf("want key [id, window_start]:\n%v", Format(root))
	}
}

// TUMBLE is a projection; over a source it stays append-only.
func TestTumblePlan(t *testing.T) {
	root := timeWindowPlan(t, "SELECT k, window_start, window_end FROM TUMBLE(ev, at, INTERVAL '5 seconds')")
	if findOp(root, OpHopWindow) != nil || !appendOnly(root.Inputs[0]) {
		t.Fatalf("want an append-only projection:\n%v", Format(root))
	}
	root = timeWindowPlan(t, "SELECT window_start, count(*) FROM TUMBLE(ev, at, INTERVAL '5 seconds') GROUP BY window_start")
	if findOp(root, OpHashAgg) == nil {
		t.Fatalf("want a hash aggregation:\n%v", Format(root))
	}
}
