package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// ALTER ... RENAME TO and ALTER TABLE ... RENAME COLUMN change only the
// catalog entry (state is keyed by ids), so the renamed objects keep their
// rows and keep working after a restart; renaming what a view or sink
// reads is refused with 2BP01 naming the dependent (its stored SQL names
// the old name and is re-planned from it at restart). Issue 15 item 7.
func TestAlterRename(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY, a INT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 10), (2, 20)")
	mustExec(t, conn, "CREATE TABLE other (x INT)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW m AS SELECT sum(a) AS s FROM t")
	mustExec(t, conn, "CREATE VIEW v AS SELECT s FROM m")

	wantState := func(sql, code, msgPart string) {
		t.Helper()
		_, err := conn.Exec(context.Background(), sql)
		text := fmt.Sprint(err)
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			text += " " + pe.Detail
		}
		if got := sqlState(err); got != code || !strings.Contains(text, msgPart) {
			t.Fatalf("%s: err = %v (SQLSTATE %s), want %s mentioning %q", sql, err, got, code, msgPart)
		}
	}
	// Dependents are named, as PostgreSQL names them.
	wantState("ALTER TABLE t RENAME TO t2", "2BP01", "materialized view m depends on table t")
	wantState("ALTER TABLE t RENAME COLUMN a TO b", "2BP01", "column a of table t")
	wantState("ALTER MATERIALIZED VIEW m RENAME TO m2", "2BP01", "view v depends on materialized view m")
	wantState("ALTER TABLE nope RENAME TO x", "42P01", "nope")
	wantState("ALTER TABLE v RENAME TO x", "42809", "v")
	wantState("ALTER VIEW v RENAME TO other", "42P07", "other")
	wantState("ALTER TABLE other RENAME COLUMN nope TO y", "42703", "nope")
	wantState("ALTER TABLE t RENAME COLUMN id TO a", "42701", "a")
	mustExec(t, conn, "ALTER TABLE IF EXISTS nope RENAME TO x")

	mustExec(t, conn, "ALTER VIEW v RENAME TO v2")
	mustExec(t, conn, "DROP VIEW v2")
	mustExec(t, conn, "ALTER MATERIALIZED VIEW m RENAME TO m2")
	mustExec(t, conn, "CREATE VIEW v AS SELECT s FROM m2")
	mustExec(t, conn, "ALTER TABLE other RENAME TO other2")
	mustExec(t, conn, "ALTER TABLE other2 RENAME COLUMN x TO y")
	mustExec(t, conn, "INSERT INTO other2 (y) VALUES (7)")
	// Sources and sinks (Runnel's grammar); a sink depends on what it reads.
	mustExec(t, conn, `CREATE SOURCE src (v INT) WITH (connector = 'datagen', fields.v.kind = 'sequence', fields.v.start = '1', fields.v.end = '3')`)
	mustExec(t, conn, "ALTER SOURCE src RENAME TO src2")
	mustExec(t, conn, "CREATE SINK sk FROM other2 WITH (connector = 'blackhole', type = 'upsert', primary_key = 'y')")
	wantState("ALTER TABLE other2 RENAME TO other3", "2BP01", "sink sk")
	mustExec(t, conn, "ALTER SINK sk RENAME TO sk2")
	wantState("ALTER SINK sk RENAME TO sk3", "42P01", "sk")
	// A connector maps its fields to columns by name.
	mustExec(t, conn, `CREATE TABLE d (v INT) WITH (connector = 'datagen', fields.v.kind = 'sequence', fields.v.start = '1', fields.v.end = '3')`)
	wantState("ALTER TABLE d RENAME COLUMN v TO w", "0A000", "connector")
	mustExec(t, conn, "ALTER TABLE d RENAME TO d2")
	mustExec(t, conn, "FLUSH")
	conn.Close(context.Background())
	ts.stop()

	ts2 := startTestServer(t, dir)
	conn2 := ts2.connect(t)
	if got := queryStrings(t, conn2, "SELECT y FROM other2"); fmt.Sprint(got) != "[7]" {
		t.Fatalf("renamed table after restart = %v", got)
	}
	if got := queryStrings(t, conn2, "SELECT s FROM v"); fmt.Sprint(got) != "[30]" {
		t.Fatalf("view over renamed materialized view after restart = %v", got)
	}
	mustExec(t, conn2, "INSERT INTO t VALUES (3, 5)")
	mustExec(t, conn2, "FLUSH")
	if got := queryStrings(t, conn2, "SELECT s FROM m2"); fmt.Sprint(got) != "[35]" {
		t.Fatalf("renamed materialized view maintained after restart = %v", got)
	}
	if got := queryStrings(t, conn2, "SELECT relname FROM pg_class WHERE relname IN ('src2', 'sk2', 'd2') ORDER BY 1"); fmt.Sprint(got) != "[d2 sk2 src2]" && fmt.Sprint(got) != "[d2 src2]" {
		t.Fatalf("renamed source, sink, connector table after restart = %v", got)
	}
	mustExec(t, conn2, "DROP SINK sk2")
	mustExec(t, conn2, "CREATE MATERIALIZED VIEW fromsrc AS SELECT count(*) AS n FROM src2")
	if _, err := conn2.Exec(context.Background(), "SELECT * FROM other"); sqlState(err) != "42P01" {
		t.Fatalf("old name after restart: %v", err)
	}
}
