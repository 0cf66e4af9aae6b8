package server

import (
	"strings"
	"testing"
)

// Savepoints over pgwire: ROLLBACK TO discards exactly the writes made
// after the savepoint (across tables, including a failed statement's),
// leaves the block usable after an error, and RELEASE keeps the writes.
// Before, every savepoint statement failed with 0A000.
func TestSavepoints(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "SET implicit_flush = on")
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "CREATE TABLE u (id INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 10)")
	rows := func(q string) string { return strings.Join(queryStrings(t, conn, q), ",") }

	// Outside a block: 25P01, as in PostgreSQL.
	for _, q := range []string{"SAVEPOINT a", "RELEASE SAVEPOINT a", "ROLLBACK TO SAVEPOINT a"} {
		if got := execState(conn, q); got != "25P01" {
			t.Errorf("%s outside a block: %q; want 25P01", q, got)
		}
	}

	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "SAVEPOINT before_anything") // before the block's first statement
	mustExec(t, conn, "UPDATE t SET v = 11 WHERE id = 1")
	mustExec(t, conn, "SAVEPOINT a")
	mustExec(t, conn, "INSERT INTO t VALUES (2, 20)")
	mustExec(t, conn, "INSERT INTO u VALUES (1, 100)")
	mustExec(t, conn, "DELETE FROM t WHERE id = 1")
	if got := rows("SELECT id, v FROM t ORDER BY id"); got != "2|20" {
		t.Fatalf("inside the block after savepoint a: %s", got)
	}
	mustExec(t, conn, "ROLLBACK TO SAVEPOINT a")
	if got := rows("SELECT id, v FROM t ORDER BY id"); got != "1|11" {
		t.Errorf("t after ROLLBACK TO a: %s; want 1|11", got)
	}
	if got := rows("SELECT count(*) FROM u"); got != "0" {
		t.Errorf("u after ROLLBACK TO a: %s; want 0", got)
	}
	// The savepoint survives ROLLBACK TO; an error aborts the block until
	// ROLLBACK TO, which also drops the failed statement's writes.
	mustExec(t, conn, "INSERT INTO u VALUES (2, 200)")
	if got := execState(conn, "INSERT INTO t VALUES (3, 30), (1, 0)"); got != "23505" {
		t.Fatalf("duplicate key: %q", got)
	}
	if got := execState(conn, "SELECT 1"); got != "25P02" {
		t.Fatalf("after an error: %q; want 25P02", got)
	}
	if got := execState(conn, "RELEASE SAVEPOINT a"); got != "25P02" {
		t.Fatalf("RELEASE in an aborted block: %q; want 25P02", got)
	}
	mustExec(t, conn, "ROLLBACK TO a")
	if got := rows("SELECT id FROM t ORDER BY id"); got != "1" {
		t.Errorf("t after ROLLBACK TO a past an error: %s; want 1", got)
	}
	// Nested savepoints; RELEASE keeps the writes; an unknown name is 3B001.
	mustExec(t, conn, "SAVEPOINT b")
	mustExec(t, conn, "INSERT INTO u VALUES (3, 300)")
	mustExec(t, conn, "SAVEPOINT c")
	mustExec(t, conn, "INSERT INTO u VALUES (4, 400)")
	mustExec(t, conn, "RELEASE SAVEPOINT b") // releases c too
	if got := execState(conn, "ROLLBACK TO SAVEPOINT c"); got != "3B001" {
		t.Fatalf("ROLLBACK TO a released savepoint: %q; want 3B001", got)
	}
	mustExec(t, conn, "ROLLBACK TO SAVEPOINT before_anything") // 3B001 aborted the block; ROLLBACK TO recovers it
	if got := rows("SELECT id, v FROM t ORDER BY id"); got != "1|10" {
		t.Errorf("t after ROLLBACK TO the first savepoint: %s; want 1|10", got)
	}
	mustExec(t, conn, "INSERT INTO u VALUES (5, 500)")
	mustExec(t, conn, "COMMIT")
	if got := rows("SELECT id, v FROM u ORDER BY id"); got != "5|500" {
		t.Errorf("u after COMMIT: %s; want 5|500", got)
	}
	if got := rows("SELECT id, v FROM t ORDER BY id"); got != "1|10" {
		t.Errorf("t after COMMIT: %s; want 1|10", got)
	}

	// Savepoints end with the block.
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "SAVEPOINT a")
	mustExec(t, conn, "COMMIT")
	mustExec(t, conn, "BEGIN")
	if got := execState(conn, "ROLLBACK TO a"); got != "3B001" {
		t.Errorf("savepoint of an ended block: %q; want 3B001", got)
	}
	mustExec(t, conn, "ROLLBACK")
}

// SERIALIZABLE is refused rather than run as snapshot isolation (which
// allows write skew); weaker levels run as REPEATABLE READ.
func TestSerializableRefused(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	for _, q := range []string{
		"BEGIN ISOLATION LEVEL SERIALIZABLE",
		"START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE",
		"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
		"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
		"SET default_transaction_isolation = 'serializable'",
		"SET transaction_isolation = 'serializable'",
	} {
		if got := execState(conn, q); got != "0A000" {
			t.Errorf("%s: %q; want 0A000", q, got)
		}
		execState(conn, "ROLLBACK")
	}
	for _, q := range []string{"BEGIN ISOLATION LEVEL REPEATABLE READ", "BEGIN ISOLATION LEVEL READ COMMITTED", "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"} {
		if got := execState(conn, q); got != "" {
			t.Errorf("%s: %q; want success", q, got)
		}
		if got := strings.Join(queryStrings(t, conn, "SHOW transaction_isolation"), ","); got != "repeatable read" {
			t.Errorf("after %s: transaction_isolation = %s", q, got)
		}
		mustExec(t, conn, "COMMIT")
	}
}
