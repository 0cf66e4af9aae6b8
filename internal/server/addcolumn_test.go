package server

import (
	"context"
	"fmt"
	"testing"
)

// ALTER TABLE ... ADD COLUMN appends a nullable column: stored rows read
// NULL in it (as in PostgreSQL for a column without a default), new rows
// hold it, and both survive a restart. Issue 15 item 7.
func TestAlterTableAddColumn(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, a INT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 10), (4, 40)")
	mustExec(t, conn, "FLUSH")
	mustExec(t, conn, "ALTER TABLE t ADD COLUMN b VARCHAR")
	mustExec(t, conn, "ALTER TABLE t ADD COLUMN IF NOT EXISTS b INT")
	mustExec(t, conn, "INSERT INTO t VALUES (2, 20, 'x')")
	mustExec(t, conn, "UPDATE t SET b = 'y' WHERE id = 1")
	mustExec(t, conn, "INSERT INTO t (id) VALUES (3)")
	mustExec(t, conn, "FLUSH")
	mustExec(t, conn, "CREATE TABLE w (id INT)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW m AS SELECT id FROM w")
	for _, c := range []struct{ sql, code string }{
		{"ALTER TABLE t ADD COLUMN b INT", "42701"},
		{"ALTER TABLE nope ADD COLUMN c INT", "42P01"},
		{"ALTER TABLE t ADD COLUMN c INT DEFAULT 'x'", "22P02"},
		{"ALTER TABLE t ADD COLUMN c INT DEFAULT a", "0A000"},
		{"ALTER TABLE t ADD COLUMN c INT NOT NULL", "0A000"},
		{"ALTER TABLE t ADD COLUMN c nosuchtype", "42704"},
		{"ALTER TABLE w ADD COLUMN c INT", "0A000"},
		{"ALTER TABLE t DROP COLUMN a", "0A000"},
	} {
		if _, err := conn.Exec(context.Background(), c.sql); sqlState(err) != c.code {
			t.Fatalf("%s: %v, want %s", c.sql, err, c.code)
		}
	}
	want := "[1|10|y 2|20|x 3|<nil>|<nil> 4|40|<nil>]"
	if got := queryStrings(t, conn, "SELECT id, a, b FROM t ORDER BY id"); fmt.Sprint(got) != want {
		t.Fatalf("after ADD COLUMN = %v, want %v", got, want)
	}
	conn.Close(context.Background())
	ts.stop()
	ts = startTestServer(t, dir)
	conn = ts.connect(t)
	if got := queryStrings(t, conn, "SELECT id, a, b FROM t ORDER BY id"); fmt.Sprint(got) != want {
		t.Fatalf("after restart = %v, want %v", got, want)
	}
	// A table without a primary key (its hidden _row_id stays hidden).
	mustExec(t, conn, "CREATE TABLE nk (a INT)")
	mustExec(t, conn, "INSERT INTO nk VALUES (1)")
	mustExec(t, conn, "ALTER TABLE nk ADD COLUMN b INT")
	mustExec(t, conn, "INSERT INTO nk VALUES (2, 3)")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT * FROM nk ORDER BY a"); fmt.Sprint(got) != "[1|<nil> 2|3]" {
		t.Fatalf("table without a key after ADD COLUMN = %v", got)
	}
	// ADD COLUMN ... DEFAULT gives the existing rows the default (and new
	// ones), kept across a restart.
	mustExec(t, conn, "ALTER TABLE nk ADD COLUMN d INT DEFAULT 5")
	mustExec(t, conn, "INSERT INTO nk (a) VALUES (9)")
	mustExec(t, conn, "FLUSH")
	wantD := "[1|5 2|5 9|5]"
	if got := queryStrings(t, conn, "SELECT a, d FROM nk ORDER BY a"); fmt.Sprint(got) != wantD {
		t.Fatalf("after ADD COLUMN ... DEFAULT = %v, want %v", got, wantD)
	}
	conn.Close(context.Background())
	ts.stop()
	ts = startTestServer(t, dir)
	conn = ts.connect(t)
	if got := queryStrings(t, conn, "SELECT a, d FROM nk ORDER BY a"); fmt.Sprint(got) != wantD {
		t.Fatalf("ADD COLUMN ... DEFAULT after restart = %v, want %v", got, wantD)
	}
	mustExec(t, conn, "CREATE MATERIALIZED VIEW mb AS SELECT count(b) AS n FROM t")
	if got := queryStrings(t, conn, "SELECT n FROM mb"); fmt.Sprint(got) != "[2]" {
		t.Fatalf("view over the added column = %v", got)
	}
}
