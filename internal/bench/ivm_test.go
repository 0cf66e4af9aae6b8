package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// TestRunIVMSmall runs the IVM benchmark end to end on a small data set:
// every update's effect must be read back from both systems' views (RunIVM
// fails on a wrong or missing row), and the report names both systems.
func TestRunIVMSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := RunIVM(ctx, IVMOptions{Rows: 2000, Updates: 2, Seed: 7, PostgresURL: pgtest.NewDatabase(t), Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(res) != len(ivmViews) {
		t.Fatalf("got %d results; want %d", len(res), len(ivmViews))
	}
	for _, r := range res {
		if r.Runnel.MedianMs <= 0 || r.Postgres.MedianMs <= 0 || r.PostgresVersion == "" {
			t.Errorf("result %+v: want positive latencies and a PostgreSQL version", r)
		}
	}
	for _, want := range []string{"order_details", "customer_totals", "PostgreSQL", "speedup"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestIVMDataTotals checks the expected-state bookkeeping the benchmark's
// reads are verified against.
func TestIVMDataTotals(t *testing.T) {
	d := newIVMData(1000, 37, 3)
	var n, sum, wantSum int64
	for c := range d.customers {
		n += d.count[c]
		sum += d.total[c]
	}
	for id := range d.rows {
		wantSum += d.amount[id]
		if c := d.customerOf(id); c < 0 || c >= d.customers {
			t.Fatalf("order %d has customer %d outside [0, %d)", id, c, d.customers)
		}
	}
	if n != d.rows || sum != wantSum {
		t.Fatalf("customer counts sum to %d, totals to %d; want %d and %d", n, sum, d.rows, wantSum)
	}
}

func TestQuantile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if got := quantile(ds, 0.5); got != 10 { // (10+11)/2 in integer nanoseconds
		t.Errorf("median = %v; want 10", got)
	}
	if got := quantile(ds, 0.95); got != 19 {
		t.Errorf("p95 = %v; want 19", got)
	}
	if got := quantile(ds[:1], 0.95); got != 5 {
		t.Errorf("p95 of one = %v; want 5", got)
	}
}
