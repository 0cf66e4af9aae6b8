package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// copyRows loads ids [lo, hi) into t (id BIGINT PRIMARY KEY, v TEXT) with
// binary COPY (pgx CopyFrom), plus the extra ids.
func copyRows(ctx context.Context, conn *pgx.Conn, lo, hi int64, extra ...int64) (int64, error) {
	i := lo - 1
	j := -1
	return conn.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"id", "v"}, pgx.CopyFromFunc(func() ([]any, error) {
		if i++; i < hi {
			return []any{i, fmt.Sprint("v", i)}, nil
		}
		if j++; j < len(extra) {
			return []any{extra[j], "extra"}, nil
		}
		return nil, nil
	}))
}

// COPY, multi-row INSERT and INSERT ... SELECT take the bulk path
// (exec.InsertBatch): a view downstream sees every row, a key twice in a
// statement or a key already stored fails the whole statement with 23505,
// and a table without a primary key takes every row.
func TestBulkLoadPaths(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t)
	conn := servertest.Connect(t, s.URL())
	for _, q := range []string{
		"CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)",
		"CREATE MATERIALIZED VIEW c AS SELECT count(*) AS n, sum(id) AS s FROM t",
		"CREATE TABLE nk (a INT, b TEXT)",
		"CREATE MATERIALIZED VIEW nkc AS SELECT count(*) AS n, count(DISTINCT a) AS d FROM nk",
	} {
		servertest.Exec(t, conn, q)
	}
	if n, err := copyRows(ctx, conn, 0, 20000); err != nil || n != 20000 {
		t.Fatalf("COPY = %d, %v", n, err)
	}
	// Appended after the stored keys: new in every vnode group.
	if n, err := copyRows(ctx, conn, 20000, 30000); err != nil || n != 10000 {
		t.Fatalf("second COPY = %d, %v", n, err)
	}
	if _, err := copyRows(ctx, conn, 40000, 41000, 40500); sqlState(err) != "23505" {
		t.Fatalf("COPY with a key twice: %v; want 23505", err)
	}
	if _, err := copyRows(ctx, conn, 50000, 51000, 12345); sqlState(err) != "23505" || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("COPY with a stored key: %v; want 23505", err)
	}
	var vals []string
	for i := 60000; i < 60200; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 'm')", i))
	}
	servertest.Exec(t, conn, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	servertest.Exec(t, conn, "INSERT INTO t SELECT i, 's' FROM generate_series(70000, 79999) g(i)")
	if _, err := conn.Exec(ctx, "INSERT INTO t SELECT i, 's' FROM generate_series(79900, 80100) g(i)"); sqlState(err) != "23505" {
		t.Fatalf("INSERT ... SELECT over stored keys: %v; want 23505", err)
	}
	servertest.Exec(t, conn, "INSERT INTO nk SELECT i % 100, 'x' FROM generate_series(1, 5000) g(i)")
	servertest.Exec(t, conn, "INSERT INTO nk SELECT i % 100, 'y' FROM generate_series(1, 5000) g(i)")
	servertest.Exec(t, conn, "FLUSH")

	wantN := int64(30000 + 200 + 10000)
	wantS := int64(30000*29999/2) + (60000+60199)*200/2 + (70000+79999)*10000/2
	got := servertest.QueryStrings(t, conn, "SELECT n, s::bigint FROM c")
	if want := fmt.Sprintf("[%d|%d]", wantN, wantS); fmt.Sprint(got) != want {
		t.Fatalf("view c = %v; want %s (every loaded row, none of the failed statements')", got, want)
	}
	if got := servertest.QueryStrings(t, conn, "SELECT count(*), sum(id)::bigint FROM t"); fmt.Sprint(got) != fmt.Sprintf("[%d|%d]", wantN, wantS) {
		t.Fatalf("table t = %v; want %d rows", got, wantN)
	}
	if got := servertest.QueryStrings(t, conn, "SELECT n, d FROM nkc"); fmt.Sprint(got) != "[10000|100]" {
		t.Fatalf("view nkc = %v; want [10000|100]", got)
	}
}

// A bulk load that a recovery interrupts before its epoch commits leaves
// nothing: no row is visible before the commit, none after the recovery,
// and the SSTs its run spilled (owned by their upload job, I1(b)) end on
// the deletion queue, never unowned (I1/I2); the next load works. The
// barrier interval is an hour, so only FLUSH commits, and the write buffer
// is 256 KiB, so the load's run spills.
func TestBulkLoadInterruptedByRecovery(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, servertest.WithConfig(func(c *server.Config) {
		c.BarrierInterval = time.Hour
		c.WriteBufferBytes = 256 << 10
	}))
	conn := servertest.Connect(t, s.URL())
	other := servertest.Connect(t, s.URL())
	servertest.Exec(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)")
	servertest.Exec(t, conn, "CREATE MATERIALIZED VIEW c AS SELECT count(*) AS n FROM t")
	servertest.Exec(t, conn, "FLUSH")
	in := s.Server.Internals()
	start, err := storage.Check(ctx, in.Objects, in.Meta, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := copyRows(ctx, conn, 0, 30000); err != nil || n != 30000 {
		t.Fatalf("COPY = %d, %v", n, err)
	}
	before, err := storage.Check(ctx, in.Objects, in.Meta, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var spilled []string
	for k, c := range before.Objects {
		if _, old := start.Objects[k]; c == storage.ClassJobOwned && !old {
			spilled = append(spilled, k)
		}
	}
	if len(spilled) == 0 {
		t.Fatalf("the load spilled nothing (objects %v); the test needs a spill", before.Counts)
	}
	if got := servertest.QueryStrings(t, other, "SELECT count(*) FROM t"); fmt.Sprint(got) != "[0]" {
		t.Fatalf("before its epoch commits, the load is visible: %v rows", got)
	}
	servertest.Exec(t, other, "RECOVER")
	if _, err := conn.Exec(ctx, "FLUSH"); sqlState(err) != "40001" {
		t.Fatalf("FLUSH after the recovery: %v; want 40001 (the load was rolled back)", err)
	}
	for _, q := range []string{"SELECT count(*) FROM t", "SELECT n FROM c"} {
		if got := servertest.QueryStrings(t, other, q); fmt.Sprint(got) != "[0]" {
			t.Fatalf("after the recovery %s = %v; want [0]", q, got)
		}
	}
	after, err := storage.Check(ctx, in.Objects, in.Meta, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range spilled {
		if c, ok := after.Objects[k]; ok && c != storage.ClassQueued {
			t.Fatalf("spilled SST %s of the rolled-back load is %s after the recovery; want queued for deletion or deleted", k, c)
		}
	}
	if after.Counts[storage.ClassUnowned] != 0 {
		t.Fatalf("unowned objects after the recovery: %v", after.Counts)
	}
	if n, err := copyRows(ctx, conn, 0, 30000); err != nil || n != 30000 {
		t.Fatalf("COPY after the recovery = %d, %v", n, err)
	}
	servertest.Exec(t, conn, "FLUSH")
	if got := servertest.QueryStrings(t, other, "SELECT n FROM c"); fmt.Sprint(got) != "[30000]" {
		t.Fatalf("view after the second load = %v; want [30000]", got)
	}
}
