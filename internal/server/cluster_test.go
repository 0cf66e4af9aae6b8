package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestWorkerNodesSingleProcess: the single process registers itself as one
// node with every role, at the address it serves on, and both
// rw_catalog.rw_worker_nodes and SHOW CLUSTER show it; a clean shutdown
// marks it expired, and the restarted process is a new running node.
func TestWorkerNodesSingleProcess(t *testing.T) {
	srv := servertest.Start(t)
	conn := srv.Connect(t)
	_, port, _ := net.SplitHostPort(srv.Addr)
	want := []string{fmt.Sprintf("1|127.0.0.1|%s|meta,compute,frontend,compactor|running|2|true", port)}
	q := `SELECT id, host, port, type, state, parallelism, started_at <= now() FROM rw_catalog.rw_worker_nodes ORDER BY id`
	if got := servertest.QueryStrings(t, conn, q); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rw_worker_nodes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got := servertest.QueryText(t, conn, `SHOW CLUSTER`)
	if len(got) != 1 || !strings.HasPrefix(got[0], "1|"+srv.Addr+"|meta,compute,frontend,compactor|running|2|") {
		t.Fatalf("SHOW CLUSTER = %q", got)
	}

	srv2 := srv.Restart(t)
	conn2 := srv2.Connect(t)
	_, port2, _ := net.SplitHostPort(srv2.Addr)
	want = []string{
		fmt.Sprintf("1|127.0.0.1|%s|meta,compute,frontend,compactor|expired|2|true", port),
		fmt.Sprintf("2|127.0.0.1|%s|meta,compute,frontend,compactor|running|2|true", port2),
	}
	if got := servertest.QueryStrings(t, conn2, q); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rw_worker_nodes after a restart:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSecondProcessFencesFirst: a second process with every role on the
// same metadata store takes the meta leadership over by force (term 2);
// the first one's next commit — an epoch of its barrier loop or a DDL —
// is refused by the term check, and it steps down: Serve returns
// ErrSteppedDown, it does not crash, and nothing it tried after the
// takeover is in the store (I1/I2: one writer). Without the fence both
// processes would commit versions on top of each other.
func TestSecondProcessFencesFirst(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{DataDir: dir, BarrierInterval: servertest.BarrierInterval, Parallelism: 1, Logger: servertest.Logger()}
	first, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- first.Serve(ln) }()
	defer first.Close()
	conn := servertest.Connect(t, servertest.URL(ln.Addr().String()))
	servertest.Exec(t, conn, `CREATE TABLE t (k INT PRIMARY KEY, v INT)`)
	servertest.Exec(t, conn, `INSERT INTO t VALUES (1, 10)`)
	servertest.Exec(t, conn, `FLUSH`)

	second := servertest.Start(t, servertest.WithDataDir(dir))
	li, err := second.Server.MetaLeader(context.Background())
	if err != nil || li.Term != 2 {
		t.Fatalf("meta leadership after the second process started: %+v, %v", li, err)
	}
	// The first process's barrier loop commits an epoch every 50 ms: the
	// first one after the takeover is refused and it steps down.
	select {
	case err := <-served:
		if !errors.Is(err, server.ErrSteppedDown) {
			t.Fatalf("first process's Serve: %v, want ErrSteppedDown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first process did not step down")
	}
	if _, err := conn.Exec(context.Background(), `CREATE TABLE late (k INT)`); err == nil {
		t.Fatal("the stepped-down process accepted DDL")
	}

	conn2 := second.Connect(t)
	if got := servertest.QueryStrings(t, conn2, `SELECT k, v FROM t`); len(got) != 1 || got[0] != "1|10" {
		t.Fatalf("t on the new leader: %q", got)
	}
	if _, err := servertest.TryQueryText(conn2, `SELECT * FROM late`); err == nil {
		t.Fatal("a table created by the fenced process exists")
	}
	got := servertest.QueryStrings(t, conn2, `SELECT id, state FROM rw_catalog.rw_worker_nodes ORDER BY id`)
	if strings.Join(got, ",") != "1|expired,2|running" {
		t.Fatalf("nodes: %q", got)
	}
	servertest.Exec(t, conn2, `INSERT INTO t VALUES (2, 20)`)
	servertest.Exec(t, conn2, `FLUSH`)
}
