package server

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestAlterOwner: ALTER TABLE | VIEW | MATERIALIZED VIEW | INDEX | SOURCE
// | SINK name OWNER TO role changes the owner that pg_class and the
// rw_catalog relations show, survives a restart, and gives the new owner
// the right to drop; only the owner or a superuser may, a non-superuser
// only to itself, and a missing role is 42704.
func TestAlterOwner(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	for _, q := range []string{
		"CREATE USER alice WITH PASSWORD 'pw'",
		"CREATE USER bob WITH PASSWORD 'pw'",
		"CREATE TABLE t (k int PRIMARY KEY, v int)",
		"CREATE VIEW v AS SELECT k FROM t",
		"CREATE MATERIALIZED VIEW m AS SELECT count(*) AS n FROM t",
		"CREATE INDEX i ON t (v)",
		"CREATE SOURCE s (x int) WITH (connector = 'datagen', datagen.rows.per.second = '1')",
		"CREATE SINK k FROM t WITH (connector = 'blackhole')",
		"ALTER TABLE t OWNER TO alice",
		"ALTER VIEW v OWNER TO alice",
		"ALTER MATERIALIZED VIEW m OWNER TO alice",
		"ALTER INDEX i OWNER TO alice",
		"ALTER SOURCE s OWNER TO alice",
		"ALTER SINK k OWNER TO alice",
		"ALTER TABLE IF EXISTS nosuch OWNER TO alice",
	} {
		mustExec(t, conn, q)
	}
	owners := func(c *pgx.Conn) string {
		rows := queryStrings(t, c, `SELECT c.relname || ':' || r.rolname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
			WHERE c.relname IN ('t', 'v', 'm', 'i', 's') ORDER BY 1`)
		return strings.Join(append(rows, queryStrings(t, c, `SELECT name || ':' || owner FROM rw_catalog.rw_sinks`)...), ",")
	}
	const want = "i:alice,m:alice,s:alice,t:alice,v:alice,k:alice"
	if got := owners(conn); got != want {
		t.Fatalf("owners after ALTER ... OWNER TO: %s; want %s", got, want)
	}
	conn.Close(ctx)
	ts.stop()
	ts = startTestServer(t, dir)
	conn = ts.connect(t)
	if got := owners(conn); got != want {
		t.Fatalf("owners after a restart: %s; want %s", got, want)
	}
	as := func(user string) *pgx.Conn {
		c, err := pgx.Connect(ctx, strings.Replace(ts.url(), "root@", user+":pw@", 1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		return c
	}
	alice, bob := as("alice"), as("bob")
	for _, c := range []struct {
		conn       *pgx.Conn
		sql, state string
	}{
		{bob, "ALTER TABLE t OWNER TO bob", "42501"},   // not the owner
		{alice, "ALTER TABLE t OWNER TO bob", "42501"}, // only to itself
		{conn, "ALTER TABLE t OWNER TO nobody", "42704"},
		{conn, "ALTER SINK k OWNER TO nobody", "42704"},
		{conn, "ALTER TABLE m OWNER TO bob", "42809"}, // a materialized view, not a table
	} {
		if _, err := c.conn.Exec(ctx, c.sql); err == nil || !strings.Contains(err.Error(), c.state) {
			t.Errorf("%s: %v; want %s", c.sql, err, c.state)
		}
	}
	mustExec(t, alice, "ALTER TABLE t OWNER TO CURRENT_USER")
	mustExec(t, alice, "DROP SINK k")
	mustExec(t, alice, "DROP MATERIALIZED VIEW m")
	if _, err := bob.Exec(ctx, "DROP VIEW v"); err == nil || !strings.Contains(err.Error(), "42501") {
		t.Fatalf("DROP VIEW by a non-owner: %v; want 42501", err)
	}
}
