package postgres

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/types"
)

// TestSmallEpochLatency measures what one epoch of one row costs the
// connector (Begin, Write, Commit: the round trips to PostgreSQL and its
// commit), as an upsert sink of a new key, an upsert sink updating a key
// and an append-only sink, against the peer: one transaction inserting
// the row (BEGIN, INSERT, COMMIT from pgx). Alternating, so that both see
// the same load; medians. Off by default (docs/benchmarks.md):
//
//	RUNNEL_SINK_BENCH=1 go test -run TestSmallEpochLatency -v ./internal/sink/postgres/
//
// RUNNEL_SINK_BENCH_EPOCHS sets the epochs per path (default 300).
func TestSmallEpochLatency(t *testing.T) {
	if os.Getenv("RUNNEL_SINK_BENCH") == "" {
		t.Skip("set RUNNEL_SINK_BENCH=1")
	}
	epochs := 300
	if v := os.Getenv("RUNNEL_SINK_BENCH_EPOCHS"); v != "" {
		epochs, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	cols := []sink.Column{{Name: "k", Type: types.Int64}, {Name: "v", Type: types.Int64}, {Name: "s", Type: types.Text}}
	up, pg := targetOf(t, &sink.Config{Name: "up", Type: sink.TypeUpsert, Key: []int{0}, Columns: cols, Options: map[string]string{"table.name": "by_upsert"}},
		"CREATE TABLE by_insert (k bigint PRIMARY KEY, v bigint, s text)",
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
	row := func(k int64, v int64) types.Row {
		return types.Row{types.DInt64(k), types.DInt64(v), types.DVarchar("row " + strconv.FormatInt(k, 10))}
	}
	deliver := func(tg sink.Target, epoch uint64, changes ...sink.Change) time.Duration {
		t0 := time.Now()
		txn, err := tg.Begin(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.Write(ctx, changes); err != nil {
			t.Fatal(err)
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	var peer, newKey, update, appendOnly []time.Duration
	for i := 0; i < epochs; i++ {
		k := int64(i)
		t0 := time.Now()
		tx, err := pg.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO by_insert (k, v, s) VALUES ($1, $2, $3)", k, k, "row "+strconv.FormatInt(k, 10)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		peer = append(peer, time.Since(t0))
		e := uint64(2*i + 1)
		newKey = append(newKey, deliver(up, e, sink.Change{Op: types.OpInsert, Row: row(k, k)}))
		update = append(update, deliver(up, e+1, sink.Change{Op: types.OpUpdateDelete, Row: row(k, k)}, sink.Change{Op: types.OpUpdateInsert, Row: row(k, k+1)}))
		appendOnly = append(appendOnly, deliver(app, uint64(i+1), sink.Change{Op: types.OpInsert, Row: row(k, k)}))
	}
	for _, tbl := range []string{"by_insert", "by_upsert", "by_append"} {
		var c int
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM "+tbl, pgx.QueryExecModeSimpleProtocol).Scan(&c); err != nil || c != epochs {
			t.Fatalf("%s: %d rows (%v), want %d", tbl, c, err, epochs)
		}
	}
	med := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	p := med(peer)
	t.Logf("%d one-row epochs per path, medians", epochs)
	t.Logf("peer, BEGIN; INSERT one row; COMMIT:    %v", p.Round(time.Microsecond))
	for _, r := range []struct {
		name string
		ds   []time.Duration
	}{{"upsert sink, one new key:             ", newKey}, {"upsert sink, one key updated:         ", update}, {"append-only sink, one row:            ", appendOnly}} {
		m := med(r.ds)
		t.Logf("%s %v  %.2fx the peer's time", r.name, m.Round(time.Microsecond), m.Seconds()/p.Seconds())
	}
}
