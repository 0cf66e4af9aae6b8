package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/runneldb/runnel/internal/compute"
)

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func execState(conn *pgx.Conn, sql string, args ...any) string {
	_, err := conn.Exec(context.Background(), sql, args...)
	if err != nil && sqlState(err) == "" {
		return err.Error()
	}
	return sqlState(err)
}

// A transaction block's statements see their own writes, and ROLLBACK
// discards them (before, the rows stayed with only a warning).
func TestTxRollbackDiscards(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = on")
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "CREATE TABLE u (id INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 10)")
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "INSERT INTO t VALUES (2, 20)")
	mustExec(t, conn, "UPDATE t SET v = v + 1 WHERE id = 1")
	mustExec(t, conn, "INSERT INTO u SELECT id, v FROM t")
	mustExec(t, conn, "DELETE FROM t WHERE id = 2")
	if got := fmt.Sprint(queryStrings(t, conn, "SELECT id, v FROM t ORDER BY id")); got != "[1|11]" {
		t.Fatalf("t inside the block: %s", got)
	}
	if got := fmt.Sprint(queryStrings(t, conn, "SELECT id, v FROM u WHERE id = 2")); got != "[2|20]" {
		t.Fatalf("u inside the block (point read): %s", got)
	}
	mustExec(t, conn, "ROLLBACK")
	mustExec(t, conn, "FLUSH")
	if got := fmt.Sprint(queryStrings(t, conn, "SELECT id, v FROM t ORDER BY id")); got != "[1|10]" {
		t.Fatalf("t after ROLLBACK: %s", got)
	}
	if got := queryStrings(t, conn, "SELECT id FROM u"); len(got) != 0 {
		t.Fatalf("u after ROLLBACK: %v", got)
	}
	// COMMIT applies both tables' writes.
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "INSERT INTO t VALUES (2, 20)")
	mustExec(t, conn, "INSERT INTO u SELECT id, v FROM t")
	mustExec(t, conn, "COMMIT")
	if got := fmt.Sprint(queryStrings(t, conn, "SELECT id, v FROM u ORDER BY id")); got != "[1|10 2|20]" {
		t.Fatalf("u after COMMIT: %s", got)
	}
	// The isolation level drivers read is the one blocks have.
	if got := fmt.Sprint(queryStrings(t, conn, "SHOW transaction_isolation")); got != "[repeatable read]" {
		t.Fatalf("transaction_isolation: %s", got)
	}
}

// An error aborts the block (25P02 until its end) and discards its
// writes; COMMIT of an aborted block answers ROLLBACK. A duplicate key is
// reported at the statement (23505), against the snapshot and against the
// block's own writes.
func TestTxErrorAbortsBlock(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = on")
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY)")
	mustExec(t, conn, "INSERT INTO t VALUES (1)")
	for _, dup := range []string{"INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (5)"} {
		mustExec(t, conn, "BEGIN")
		mustExec(t, conn, "INSERT INTO t VALUES (5)")
		if got := execState(conn, dup); got != "23505" {
			t.Fatalf("%s in the block: %s, want 23505", dup, got)
		}
		if got := execState(conn, "SELECT 1"); got != "25P02" {
			t.Fatalf("statement after an error: %s, want 25P02", got)
		}
		tag, err := conn.Exec(context.Background(), "COMMIT")
		if err != nil || tag.String() != "ROLLBACK" {
			t.Fatalf("COMMIT of an aborted block: %v %v", tag, err)
		}
	}
	if got := fmt.Sprint(queryStrings(t, conn, "SELECT id FROM t")); got != "[1]" {
		t.Fatalf("rows: %s", got)
	}
}

// Two blocks writing the same row: the first COMMIT wins, the second fails
// with 40001 and applies nothing; blocks on different rows both commit. A
// block reads its snapshot (repeatable read).
func TestTxWriteConflict(t *testing.T) {
	ts := startTestServer(t, "")
	a, b := ts.connect(t), ts.connect(t)
	for _, c := range []*pgx.Conn{a, b} {
		mustExec(t, c, "SET implicit_flush = on")
	}
	mustExec(t, a, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, a, "INSERT INTO t VALUES (1, 0), (2, 0)")
	mustExec(t, a, "BEGIN")
	mustExec(t, b, "BEGIN")
	mustExec(t, a, "UPDATE t SET v = v + 1 WHERE id = 1")
	mustExec(t, b, "UPDATE t SET v = v + 10 WHERE id = 1")
	mustExec(t, b, "UPDATE t SET v = v + 10 WHERE id = 2")
	mustExec(t, a, "COMMIT")
	if got := fmt.Sprint(queryStrings(t, b, "SELECT v FROM t WHERE id = 1")); got != "[10]" {
		t.Fatalf("b's snapshot of row 1: %s", got)
	}
	if got := execState(b, "COMMIT"); got != "40001" {
		t.Fatalf("second COMMIT: %s, want 40001", got)
	}
	if got := fmt.Sprint(queryStrings(t, a, "SELECT id, v FROM t ORDER BY id")); got != "[1|1 2|0]" {
		t.Fatalf("rows: %s", got)
	}
	// Concurrent inserts of one key: the second committer fails.
	mustExec(t, a, "BEGIN")
	mustExec(t, b, "BEGIN")
	mustExec(t, a, "INSERT INTO t VALUES (3, 1)")
	mustExec(t, b, "INSERT INTO t VALUES (3, 2)")
	mustExec(t, b, "INSERT INTO t VALUES (4, 2)")
	mustExec(t, b, "COMMIT")
	if got := execState(a, "COMMIT"); got != "40001" {
		t.Fatalf("second COMMIT of an insert: %s, want 40001", got)
	}
	// A write that leaves the row as it was still conflicts (PostgreSQL
	// compares row versions, not values): the conflict check is by the
	// epoch of the key's last write, not by its value.
	mustExec(t, a, "BEGIN")
	mustExec(t, a, "SELECT 1")
	mustExec(t, b, "UPDATE t SET v = v WHERE id = 4")
	mustExec(t, a, "DELETE FROM t WHERE id = 4")
	if got := execState(a, "COMMIT"); got != "40001" {
		t.Fatalf("COMMIT after a same-value update: %s, want 40001", got)
	}
	// Disjoint rows both commit.
	mustExec(t, a, "BEGIN")
	mustExec(t, b, "BEGIN")
	mustExec(t, a, "UPDATE t SET v = 7 WHERE id = 1")
	mustExec(t, b, "UPDATE t SET v = 8 WHERE id = 2")
	mustExec(t, a, "COMMIT")
	mustExec(t, b, "COMMIT")
	if got := fmt.Sprint(queryStrings(t, a, "SELECT id, v FROM t ORDER BY id")); got != "[1|7 2|8 3|2 4|2]" {
		t.Fatalf("rows: %s", got)
	}
}

// I7: a transaction that moves value between two tables commits in one
// epoch, so a view summing both never shows part of it. Writers transfer
// between rows of a and b (retrying on 40001) while FLUSHes drive barriers
// back to back; a reader polls the view (each SELECT reads one committed
// epoch) and the total must never change.
func TestTxViewNeverSeesHalf(t *testing.T) {
	ts := startTestServer(t, "")
	ctx := context.Background()
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = on")
	mustExec(t, conn, "CREATE TABLE a (k INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "CREATE TABLE b (k INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO a SELECT g, 100 FROM generate_series(1, 8) g")
	mustExec(t, conn, "INSERT INTO b SELECT g, 100 FROM generate_series(1, 8) g")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW total AS SELECT sum(v) AS s, count(*) AS n FROM (SELECT v FROM a UNION ALL SELECT v FROM b) x")
	var mu sync.Mutex
	rounds, split := 0, 0
	compute.TxRoundHook = func(epochs []uint64) {
		mu.Lock()
		defer mu.Unlock()
		rounds++
		for _, e := range epochs {
			if e != epochs[0] {
				split++
				break
			}
		}
	}
	defer func() { compute.TxRoundHook = nil }()

	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	committed := make([]int, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := ts.connect(t)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				from, to, x := 1+(w+i)%8, 1+(w*3+i)%8, 1+i%7
				src, dst := "a", "b"
				if i%2 == 1 {
					src, dst = "b", "a"
				}
				_, err := c.Exec(ctx, "BEGIN")
				if err == nil {
					_, err = c.Exec(ctx, fmt.Sprintf("UPDATE %s SET v = v - $1 WHERE k = $2", src), x, from)
				}
				if err == nil {
					_, err = c.Exec(ctx, fmt.Sprintf("UPDATE %s SET v = v + $1 WHERE k = $2", dst), x, to)
				}
				if err == nil {
					_, err = c.Exec(ctx, "COMMIT")
					if err == nil {
						committed[w]++
					}
				} else {
					c.Exec(ctx, "ROLLBACK")
				}
				if err != nil && sqlState(err) != "40001" {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() { // barriers back to back
		defer wg.Done()
		c := ts.connect(t)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Exec(ctx, "FLUSH"); err != nil {
				errs <- err
				return
			}
		}
	}()
	reads := 0
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		got := fmt.Sprint(queryStrings(t, conn, "SELECT s, n FROM total"))
		if got != "[1600|16]" {
			close(stop)
			wg.Wait()
			t.Fatalf("view shows part of a transaction: %s", got)
		}
		reads++
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	n := 0
	for _, c := range committed {
		n += c
	}
	mu.Lock()
	t.Logf("%d transfers committed, %d view reads, %d commit rounds, %d of them prepared across two epochs and retried", n, reads, rounds, split)
	mu.Unlock()
	if n < 20 {
		t.Fatalf("only %d transfers committed", n)
	}
	mustExec(t, conn, "FLUSH")
	if got := fmt.Sprint(queryStrings(t, conn, "SELECT (SELECT sum(v) FROM a) + (SELECT sum(v) FROM b)")); got != "[1600]" {
		t.Fatalf("tables' total: %s", got)
	}
}
