package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/wiretest"
)

// BenchmarkPointLatency measures the single-statement latencies of
// `runnel bench ivm` (internal/bench/ivm.go) over pgwire, as pgx issues them
// (extended protocol, prepared-statement cache): the single-row UPDATE of
// orders by primary key, and the point reads of its two materialized views.
// The same statements run against a throwaway PostgreSQL in the same loop
// iteration, so machine noise hits both alike; each sub-benchmark reports
// both medians and their ratio.
//
//	go test ./internal/server/ -run '^$' -bench PointLatency -benchtime 400x
//
// RUNNEL_POINT_LATENCY_ROWS sets the orders (default 200,000; the ivm
// benchmark uses 1,000,000). RUNNEL_POINT_LATENCY_PG=0 leaves PostgreSQL
// out (for profiles of Runnel alone). RUNNEL_POINT_LATENCY_PAUSE=500ms
// leaves the server idle that long before each update_flush_read
// iteration, as `runnel bench ivm` does while PostgreSQL refreshes. RUNNEL_POINT_LATENCY_PROFILE=dir
// writes a CPU profile and an execution trace of each sub-benchmark's
// measured loop (not of the load) to dir/<name>.cpu and dir/<name>.trace.
func BenchmarkPointLatency(b *testing.B) {
	rows := int64(200_000)
	var pause time.Duration
	if v := os.Getenv("RUNNEL_POINT_LATENCY_PAUSE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("RUNNEL_POINT_LATENCY_PAUSE=%q: %v", v, err)
		}
		pause = d
	}
	if v := os.Getenv("RUNNEL_POINT_LATENCY_ROWS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 10 {
			b.Fatalf("RUNNEL_POINT_LATENCY_ROWS=%q: want a number ≥ 10", v)
		}
		rows = n
	}
	customers := rows / 10
	ctx := context.Background()

	// The ivm benchmark's server settings (a 1 s barrier tick).
	srv, err := Open(ctx, Config{DataDir: b.TempDir(), BarrierInterval: time.Second, Logger: testLogger()})
	if err != nil {
		b.Fatalf("open server: %v", err)
	}
	served := wiretest.Serve(b, srv)
	type system struct {
		name string
		conn *pgx.Conn
	}
	systems := []system{{name: "runnel", conn: served.Connect(b)}}
	if os.Getenv("RUNNEL_POINT_LATENCY_PG") != "0" {
		pg, err := pgtest.StartCluster("")
		if err != nil {
			b.Skipf("PostgreSQL: %v", err)
		}
		b.Cleanup(func() { pg.Stop() })
		systems = append(systems, system{name: "postgres", conn: wiretest.Connect(b, pg.URL("postgres"))})
	}

	setup := time.Now()
	customerOf := func(id int64) int64 { return (id * 7919) % customers }
	amount := func(id int64) int64 { return id%1000 + 1 }
	for _, s := range systems {
		for _, stmt := range []string{
			`CREATE TABLE customers (id BIGINT PRIMARY KEY, region VARCHAR NOT NULL, name VARCHAR NOT NULL)`,
			`CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL, amount BIGINT NOT NULL, status VARCHAR NOT NULL)`,
		} {
			mustExec(b, s.conn, stmt)
		}
		var buf bytes.Buffer
		copyRows := func(table string, n int64, line func(i int64) string) {
			for lo := int64(0); lo < n; lo += 100_000 {
				buf.Reset()
				for i := lo; i < min(n, lo+100_000); i++ {
					buf.WriteString(line(i))
				}
				if _, err := s.conn.PgConn().CopyFrom(ctx, &buf, "COPY "+table+" FROM STDIN"); err != nil {
					b.Fatalf("COPY %s into %s: %v", table, s.name, err)
				}
			}
		}
		copyRows("customers", customers, func(c int64) string {
			return fmt.Sprintf("%d\tregion-%d\tcustomer-%d\n", c, c%8, c)
		})
		copyRows("orders", rows, func(id int64) string {
			return fmt.Sprintf("%d\t%d\t%d\topen\n", id, customerOf(id), amount(id))
		})
		mustExec(b, s.conn, `CREATE MATERIALIZED VIEW order_details AS SELECT o.id, o.customer_id, o.amount, o.status, c.region, c.name
			FROM orders o JOIN customers c ON o.customer_id = c.id`)
		mustExec(b, s.conn, `CREATE MATERIALIZED VIEW customer_totals AS SELECT customer_id, count(*) AS n_orders, sum(amount) AS total FROM orders GROUP BY customer_id`)
		if s.name == "runnel" {
			mustExec(b, s.conn, "FLUSH")
			in := srv.Internals()
			for deadline := time.Now().Add(5 * time.Minute); !in.Store.CompactionIdle(); time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					b.Fatalf("compaction still busy after 5 minutes")
				}
			}
		} else {
			mustExec(b, s.conn, "VACUUM ANALYZE")
			mustExec(b, s.conn, "CHECKPOINT")
		}
	}

	b.Logf("%d orders, %d customers and both views in %v on %d system(s)", rows, customers, time.Since(setup).Round(time.Second), len(systems))

	// next picks the order each iteration touches: a fixed stride, so
	// the rows differ across iterations and between runs alike.
	var seq int64
	next := func() int64 { seq++; return (seq * 104_729) % rows }

	// measure runs op once per system per iteration and reports the
	// medians.
	measure := func(b *testing.B, systems []system, op func(s system, id int64) error) {
		lat := make([][]time.Duration, len(systems))
		defer profile(b)()
		b.ResetTimer()
		for range b.N {
			id := next()
			for i, s := range systems {
				t0 := time.Now()
				if err := op(s, id); err != nil {
					b.Fatalf("%s: %v", s.name, err)
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}
		b.StopTimer()
		med := make([]float64, len(systems))
		for i, s := range systems {
			slices.Sort(lat[i])
			med[i] = float64(lat[i][len(lat[i])/2].Microseconds())
			b.ReportMetric(med[i], s.name+"-median-us")
		}
		if len(systems) == 2 && med[1] > 0 {
			b.ReportMetric(med[0]/med[1], "ratio")
		}
		b.ReportMetric(0, "ns/op")
	}
	update := func(s system, id int64) error {
		tag, err := s.conn.Exec(ctx, "UPDATE orders SET amount = $1 WHERE id = $2", amount(id)+seq, id)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("update of order %d: %s; want UPDATE 1", id, tag)
		}
		return err
	}
	read := func(s system, query string, arg int64) error {
		r, err := s.conn.Query(ctx, query, pgx.QueryResultFormats{pgx.TextFormatCode}, arg)
		if err != nil {
			return err
		}
		n := 0
		for r.Next() {
			n++
		}
		r.Close()
		if err := r.Err(); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%s with $1 = %d: %d rows; want 1", query, arg, n)
		}
		return nil
	}

	b.Run("update", func(b *testing.B) {
		measure(b, systems, update)
	})
	b.Run("read_customer_totals", func(b *testing.B) {
		measure(b, systems, func(s system, id int64) error {
			return read(s, "SELECT n_orders, total FROM customer_totals WHERE customer_id = $1", customerOf(id))
		})
	})
	b.Run("read_order_details", func(b *testing.B) {
		measure(b, systems, func(s system, id int64) error {
			return read(s, "SELECT amount, region, name FROM order_details WHERE id = $1", id)
		})
	})
	// The full path of `runnel bench ivm` for customer_totals (UPDATE +
	// FLUSH + read), Runnel only: PostgreSQL's REFRESH recomputes the
	// view, which is what the ivm benchmark itself compares.
	b.Run("update_flush_read", func(b *testing.B) {
		conn := systems[0].conn
		var lat [4][]time.Duration // total, UPDATE, FLUSH, read
		defer profile(b)()
		b.ResetTimer()
		for range b.N {
			id := next()
			if pause > 0 {
				b.StopTimer()
				time.Sleep(pause)
				b.StartTimer()
			}
			t0 := time.Now()
			if err := update(systems[0], id); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if err := read(systems[0], "SELECT n_orders, total FROM customer_totals WHERE customer_id = $1", customerOf(id)); err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			for i, d := range []time.Duration{t3.Sub(t0), t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)} {
				lat[i] = append(lat[i], d)
			}
		}
		b.StopTimer()
		for i, name := range []string{"total", "update", "flush", "read"} {
			slices.Sort(lat[i])
			b.ReportMetric(float64(lat[i][len(lat[i])/2].Microseconds()), name+"-median-us")
		}
		b.ReportMetric(0, "ns/op")
	})
}

// profile starts a CPU profile and an execution trace of b's measured
// loop if RUNNEL_POINT_LATENCY_PROFILE names a directory, and returns the
// function that stops them.
func profile(b *testing.B) func() {
	dir := os.Getenv("RUNNEL_POINT_LATENCY_PROFILE")
	if dir == "" || b.N == 1 {
		return func() {}
	}
	name := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(b.Name(), "BenchmarkPointLatency/"), "/", "_"))
	cpu, err := os.Create(name + ".cpu")
	if err != nil {
		b.Fatal(err)
	}
	tr, err := os.Create(name + ".trace")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(tr); err != nil {
		b.Fatal(err)
	}
	return func() {
		trace.Stop()
		pprof.StopCPUProfile()
		cpu.Close()
		tr.Close()
	}
}
