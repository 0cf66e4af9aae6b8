package sql

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/types"
)

// A correlated scalar aggregate subquery is computed once per correlation
// key and joined back (internal/batch/decorrelate.go), not re-run for each
// outer row: 20,000 outer rows over 20,000 inner rows answer in well under
// the deadline (per row, it is 400 million inner rows read).
func TestCorrelatedSubqueryScales(t *testing.T) {
	const n, keys = 20000, 5000
	f := newFakeDB()
	f.addTable("o", "id int", "k int", "v int")
	f.addTable("i", "k int", "w int")
	sum := map[int64]int64{}
	cnt := map[int64]int64{}
	for j := 0; j < n; j++ {
		k := types.DInt32(int32(j % keys))
		if j%97 == 0 {
			k = types.NullDatum // no group: count 0, sum NULL
		}
		f.rows["o"] = append(f.rows["o"], types.Row{types.DInt32(int32(j)), k, types.DInt32(int32(j % 13))})
		ik := int64((j * 7) % (keys + 1000)) // some outer keys have no inner rows
		f.rows["i"] = append(f.rows["i"], types.Row{types.DInt32(int32(ik)), types.DInt32(int32(j % 5))})
		sum[ik] += int64(j % 5)
		cnt[ik]++
	}
	// The expected answers, computed directly.
	var gtHalfSum, gtHalfSumFirst, eqCount, noGroup int
	for j := 0; j < n; j++ {
		v := int64(j % 13)
		if j%97 == 0 {
			noGroup++
			if v == 0 {
				eqCount++
			}
			continue
		}
		k := int64(j % keys)
		if c := cnt[k]; c > 0 && 2*v > sum[k] {
			gtHalfSum++
			if j < 100 {
				gtHalfSumFirst++
			}
		}
		if v == cnt[k] {
			eqCount++
		}
	}
	for _, c := range []struct{ q, want string }{
		{"select count(*) from o where v > (select 0.5 * sum(w) from i where i.k = o.k)", fmt.Sprint(gtHalfSum)},
		{"select count(*) from o where v = (select count(*) from i where i.k = o.k)", fmt.Sprint(eqCount)},
		{"select count(*) from o where (select sum(w) from i where i.k = o.k) is null", fmt.Sprint(noGroup + countNoInner(n, keys, cnt))},
		// Inside an IN subquery (TPC-H Q20's shape), run once for the
		// outer rows (few: the IN itself is tested per outer row).
		{"select count(*) from o where id < 100 and id in (select id from o o2 where v > (select 0.5 * sum(w) from i where i.k = o2.k))", fmt.Sprint(gtHalfSumFirst)},
	} {
		t.Logf("%s: want %s", c.q, c.want)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		rows, _, err := f.query(ctx, c.q)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if len(rows) != 1 || rows[0] != c.want {
			t.Errorf("%s: got %v, want %s", c.q, rows, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", c.q, d)
		}
	}
}

// countNoInner counts the outer rows with a non-NULL key and no inner row.
func countNoInner(n, keys int, cnt map[int64]int64) int {
	c := 0
	for j := 0; j < n; j++ {
		if j%97 != 0 && cnt[int64(j%keys)] == 0 {
			c++
		}
	}
	return c
}
