package postgres

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/types"
)

// TestTargetThroughput measures the connector alone (what it makes
// PostgreSQL do, without Runnel's log store in front) against a plain
// binary COPY of the same rows from Go, in alternating rounds so that both
// see the same load: per round one epoch of n changes handed to the target
// in the worker's batches of 4,096, as an append-only sink, an upsert sink
// of new keys and an upsert sink updating those keys. Off by default
// (docs/benchmarks.md):
//
//	RUNNEL_SINK_BENCH=1 go test -run TestTargetThroughput -v ./internal/sink/postgres/
//
// RUNNEL_SINK_BENCH_ROWS (default 200,000), RUNNEL_SINK_BENCH_ROUNDS
// (default 5).
func TestTargetThroughput(t *testing.T) {
	if os.Getenv("RUNNEL_SINK_BENCH") == "" {
		t.Skip("set RUNNEL_SINK_BENCH=1")
	}
	n, rounds := 200_000, 5
	if v := os.Getenv("RUNNEL_SINK_BENCH_ROWS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("RUNNEL_SINK_BENCH_ROUNDS"); v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	if os.Getenv("RUNNEL_SINK_BENCH_UNSORTED") != "" {
		sortRows = false // as before the sort, for comparison
		defer func() { sortRows = true }()
	}
	ctx := context.Background()
	cols := []sink.Column{{Name: "k", Type: types.Int64}, {Name: "v", Type: types.Int64}, {Name: "s", Type: types.Text}}
	up, pg := targetOf(t, &sink.Config{Name: "up", Type: sink.TypeUpsert, Key: []int{0}, Columns: cols, Options: map[string]string{"table.name": "by_upsert"}},
		"CREATE TABLE by_copy (k bigint PRIMARY KEY, v bigint, s text)",
		"CREATE TABLE by_upsert (k bigint PRIMARY KEY, v bigint, s text)",
		"CREATE TABLE by_append (k bigint PRIMARY KEY, v bigint, s text)")
	app, err := New(&sink.Config{Name: "app", Type: sink.TypeAppendOnly, Columns: cols, Options: map[string]string{"table.name": "by_append", "connector": "jdbc", "jdbc.url": up.(*target).cfg.Options["jdbc.url"]}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for _, tg := range []sink.Target{up, app} {
		if _, err := tg.Open(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// cpu is the CPU time the target's PostgreSQL backend has used (from
	// /proc: the cluster runs on this machine), a measure that the
	// machine's load sways less than wall time.
	cpuOf := func(conn *pgx.Conn) time.Duration {
		var pid int
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
		ut, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
	}
	cpu := func(tg sink.Target) time.Duration { return cpuOf(tg.(*target).conn) }
	// self is this process's CPU time (the connector's side: encoding,
	// sorting, the key sets; the COPY peer's pgx encoding).
	self := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var cpuCopy, cpuApp, cpuNew, cpuUpd, goCopy, goApp, goNew, goUpd []time.Duration
	deliver := func(tg sink.Target, epoch uint64, changes []sink.Change) time.Duration {
		c0, s0 := cpu(tg), self()
		defer func() {
			d, g := cpu(tg)-c0, self()-s0
			switch {
			case tg == app:
				cpuApp, goApp = append(cpuApp, d), append(goApp, g)
			case len(changes) > n:
				cpuUpd, goUpd = append(cpuUpd, d), append(goUpd, g)
			default:
				cpuNew, goNew = append(cpuNew, d), append(goNew, g)
			}
		}()
		t0 := time.Now()
		txn, err := tg.Begin(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(changes); i += 4096 {
			if err := txn.Write(ctx, changes[i:min(i+4096, len(changes))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	// The sink gets the keys as Runnel's log holds them: grouped by vnode
	// (256 here, by a multiplicative hash), in key order within one; the
	// COPY peer gets them in key order.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	vnode := func(i int) int { return int(uint32(i)*2654435761) >> 24 }
	slices.SortFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(vnode(a), vnode(b)), cmp.Compare(a, b)) })
	var copyT, appT, newT, updT []time.Duration
	for round := 0; round < rounds; round++ {
		rows := make([][]any, n)
		ins := make([]sink.Change, n)
		upd := make([]sink.Change, 0, 2*n)
		for i := range rows {
			k := int64(round*n + order[i])
			s := fmt.Sprintf("row %d", k)
			rows[order[i]] = []any{k, k * 7, s}
			ins[i] = sink.Change{Op: types.OpInsert, Row: types.Row{types.DInt64(k), types.DInt64(k * 7), types.DVarchar(s)}}
			upd = append(upd, sink.Change{Op: types.OpUpdateDelete, Row: ins[i].Row},
				sink.Change{Op: types.OpUpdateInsert, Row: types.Row{types.DInt64(k), types.DInt64(k*7 + 1), types.DVarchar(s)}})
		}
		c0, s0 := cpuOf(pg), self()
		t0 := time.Now()
		if _, err := pg.CopyFrom(ctx, pgx.Identifier{"by_copy"}, []string{"k", "v", "s"}, pgx.CopyFromRows(rows)); err != nil {
			t.Fatal(err)
		}
		copyT = append(copyT, time.Since(t0))
		cpuCopy, goCopy = append(cpuCopy, cpuOf(pg)-c0), append(goCopy, self()-s0)
		e := uint64(2*round + 1)
		appT = append(appT, deliver(app, e, ins))
		newT = append(newT, deliver(up, e, ins))
		updT = append(updT, deliver(up, e+1, upd))
		t.Logf("round %d: COPY %v, append-only %v, upsert new keys %v, upsert updates %v", round, copyT[round].Round(time.Millisecond),
			appT[round].Round(time.Millisecond), newT[round].Round(time.Millisecond), updT[round].Round(time.Millisecond))
	}
	for _, tbl := range []string{"by_copy", "by_upsert", "by_append"} {
		var c int
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&c); err != nil || c != rounds*n {
			t.Fatalf("%s: %d rows (%v), want %d", tbl, c, err, rounds*n)
		}
	}
	med := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	c := med(copyT)
	t.Logf("%d rows per round (k bigint primary key, v bigint, s text), %d rounds, medians", n, rounds)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("COPY into PostgreSQL (peer):  %8.0f rows/s (%v); CPU: PostgreSQL backend %v, client %v", rate(c), ms(c), ms(med(cpuCopy)), ms(med(goCopy)))
	for _, p := range []struct {
		name        string
		ds, cpu, gc []time.Duration
	}{{"append-only target:          ", appT, cpuApp, goApp}, {"upsert target, new keys:     ", newT, cpuNew, goNew}, {"upsert target, updates:      ", updT, cpuUpd, goUpd}} {
		m := med(p.ds)
		t.Logf("%s %8.0f rows/s (%v)  %.2fx COPY; CPU: PostgreSQL backend %v, client %v", p.name, rate(m), ms(m), c.Seconds()/m.Seconds(), ms(med(p.cpu)), ms(med(p.gc)))
	}
}
