package server

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A transaction block groups nothing (each statement is applied when it
// runs, as in RisingWave): a ROLLBACK after writes must not pass for an
// undo. It warns (01000), the rows stay, and a ROLLBACK of a block without
// writes — or a COMMIT — says nothing.
func TestRollbackAfterWritesWarns(t *testing.T) {
	ts := startTestServer(t, "")
	var (
		mu      sync.Mutex
		notices []*pgconn.Notice
	)
	cfg, err := pgx.ParseConfig(ts.url())
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, n := range notices {
			out = append(out, n.Severity+" "+n.Code+" "+n.Message)
		}
		notices = nil
		return out
	}
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY)")
	for _, stmt := range []string{"BEGIN", "SELECT 1", "ROLLBACK", "BEGIN", "INSERT INTO t VALUES (1)", "COMMIT"} {
		mustExec(t, conn, stmt)
	}
	if got := take(); len(got) != 0 {
		t.Fatalf("notices without a rolled-back write: %v", got)
	}
	for _, stmt := range []string{"BEGIN", "INSERT INTO t VALUES (2)", "UPDATE t SET id = 3 WHERE id = 2", "ROLLBACK"} {
		mustExec(t, conn, stmt)
	}
	if got := fmt.Sprint(take()); got != "[WARNING 01000 ROLLBACK did not undo the writes of this transaction block]" {
		t.Fatalf("notices after ROLLBACK of writes: %s", got)
	}
	mustExec(t, conn, "FLUSH")
	if got := fmt.Sprint(queryStrings(t, conn, "SELECT id FROM t ORDER BY id")); got != "[1 3]" {
		t.Fatalf("rows after the block: %s", got)
	}
	// The next block starts clean.
	for _, stmt := range []string{"BEGIN", "SELECT 1", "ROLLBACK"} {
		mustExec(t, conn, stmt)
	}
	if got := take(); len(got) != 0 {
		t.Fatalf("notices for a later read-only block: %v", got)
	}
}
