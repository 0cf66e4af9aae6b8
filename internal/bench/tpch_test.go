package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// TestTPCHSmall runs `runnel bench tpch` end to end at scale factor
// 0.001: the generated tables loaded into Runnel and PostgreSQL, and all
// 22 queries run on both with results equal (RunTPCH compares every row).
func TestTPCHSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := RunTPCH(ctx, TPCHOptions{Scale: 0.001, Seed: 1, PostgresURL: pgtest.NewDatabase(t), Timeout: time.Minute, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Queries) != 22 || rep.Equal != 22 {
		t.Fatalf("%d of %d queries equal; want 22 of 22\n%s", rep.Equal, len(rep.Queries), out.String())
	}
	if !strings.Contains(out.String(), "geometric mean") {
		t.Errorf("report lacks the geometric mean:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}

// TestTPCHGenDeterministic checks the generator's invariants the queries
// rely on: the same seed gives the same rows, order keys are sparse (8 of
// every 32), a part's four suppliers are distinct, and customers whose key
// is divisible by 3 place no orders.
func TestTPCHGenDeterministic(t *testing.T) {
	for _, scale := range []float64{0.001, 0.01} {
		g1, g2 := NewTPCHGen(scale, 7), NewTPCHGen(scale, 7)
		for _, table := range TPCHTables {
			n := min(g1.Rows(table), 500)
			if table == "lineitem" {
				n = min(g1.orders, 100)
			}
			a, _ := g1.Generate(nil, table, 0, n)
			b, _ := g2.Generate(nil, table, 0, n)
			if !bytes.Equal(a, b) {
				t.Fatalf("scale %g: %s differs between two generators with the same seed", scale, table)
			}
		}
		for p := int64(1); p <= g1.parts; p++ {
			seen := map[int64]bool{}
			for i := int64(0); i < 4; i++ {
				s := g1.partSupplier(p, i)
				if seen[s] || s < 1 || s > g1.suppliers {
					t.Fatalf("scale %g: part %d supplier %d is %d (repeated or out of range)", scale, p, i, s)
				}
				seen[s] = true
			}
		}
		for i := int64(0); i < min(g1.orders, 2000); i++ {
			o := g1.order(i)
			if o.cust%3 == 0 || (o.key-1)%32 >= 8 {
				t.Fatalf("scale %g: order %d has key %d, customer %d", scale, i, o.key, o.cust)
			}
		}
	}
}

// TestTPCHCompare checks the result comparison: equal numbers in
// different scales match, a real difference does not, unordered results
// are compared as sorted sets and ordered ones in order.
func TestTPCHCompare(t *testing.T) {
	for _, c := range []struct {
		a, b    string
		isFloat bool
		want    bool
	}{
		{"1.50", "1.5", false, true},
		{"25.5221843003412969", "25.52218430034129692833", false, true},
		{"25.5221843003412969", "25.5221843003412979", false, false},
		{"0.05", "0.06", false, false},
		{"2.5", "2.6", false, false},
		{"1e+06", "1000000.0000001", true, true},
		{"BRAZIL", "brazil", false, false},
	} {
		if got := tpchCellEqual(c.a, c.b, c.isFloat); got != c.want {
			t.Errorf("tpchCellEqual(%q, %q) = %v; want %v", c.a, c.b, got, c.want)
		}
	}
	x := [][]string{{"a", "1"}, {"b", "2"}}
	y := [][]string{{"b", "2"}, {"a", "1"}}
	if d := tpchCompare(x, y, nil, false); d != "" {
		t.Errorf("unordered: %s", d)
	}
	if d := tpchCompare(x, y, nil, true); d == "" {
		t.Errorf("ordered: rows in another order compared equal")
	}
	if d := tpchCompare(x, x[:1], nil, false); d == "" {
		t.Errorf("a missing row compared equal")
	}
}
