package sql

import (
	"context"
	"fmt"
	"testing"

	"github.com/runneldb/runnel/internal/types"
)

// Benchmarks over a 100k-row table: go test -run - -bench . ./internal/sql
func benchDB(n int) *fakeDB {
	f := newFakeDB()
	f.addTable("big", "p int", "o int", "v int", "s text")
	rows := make([]types.Row, n)
	for i := range rows {
		rows[i] = types.Row{types.DInt32(int32(i % 10)), types.DInt32(int32(i)), types.DInt32(int32(i * 7 % 1000)), types.DVarchar(fmt.Sprint("s", i%100))}
	}
	f.rows["big"] = rows
	f.addTable("small", "o int", "w text")
	for i := 0; i < 1000; i++ {
		f.rows["small"] = append(f.rows["small"], types.Row{types.DInt32(int32(i * 3)), types.DVarchar("w")})
	}
	return f
}

func BenchmarkQueries(b *testing.B) {
	f := benchDB(100000)
	for _, q := range []string{
		"select p, count(*), sum(v), avg(v) from big group by p",
		"select count(distinct s) from big",
		"select o from big order by v desc, o limit 10",
		"select * from big order by s, o",
		"select count(*) from big join small using (o)",
		"select count(*) from big where o in (select o from small)",
		"select p, o, sum(v) over (partition by p order by o) from big",
		"select p, o, sum(v) over (partition by p order by o rows between 10 preceding and current row) from big",
		"select p, o, max(v) over (partition by p order by o rows between current row and unbounded following) from big",
	} {
		b.Run(q, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := f.query(context.Background(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
