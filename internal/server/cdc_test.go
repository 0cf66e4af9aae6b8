package server

import (
	"context"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/wiretest"
)

// cdcUpstream is a fresh database in the wal_level=logical cluster.
type cdcUpstream struct {
	conn     *pgx.Conn
	host     string
	port     int
	database string
}

func newCDCUpstream(t *testing.T) *cdcUpstream {
	t.Helper()
	raw := pgtest.NewLogicalDatabase(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	up := &cdcUpstream{conn: conn, host: u.Hostname(), port: port, database: strings.TrimPrefix(u.Path, "/")}
	t.Cleanup(func() {
		// Slots left by a failed test would keep the database from being
		// dropped.
		up.conn.Exec(context.Background(), "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database() AND NOT active")
		conn.Close(context.Background())
	})
	return up
}

// withOptions is the WITH list of a postgres-cdc source on this upstream.
func (u *cdcUpstream) withOptions(extra string) string {
	return fmt.Sprintf("connector = 'postgres-cdc', hostname = '%s', port = '%d', username = 'postgres', password = '', database.name = '%s'%s",
		u.host, u.port, u.database, extra)
}

func (u *cdcUpstream) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := u.conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("upstream %s: %v", sql, err)
	}
}

func (u *cdcUpstream) slots(t *testing.T) []string {
	t.Helper()
	return wiretest.QueryText(t, u.conn, "SELECT slot_name FROM pg_replication_slots WHERE database = current_database() ORDER BY 1")
}

func (u *cdcUpstream) lsn(t *testing.T, sql string) pglogrepl.LSN {
	t.Helper()
	var s *string
	if err := u.conn.QueryRow(context.Background(), sql).Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s == nil {
		return 0
	}
	l, _ := pglogrepl.ParseLSN(*s)
	return l
}

// waitSame waits until query gives the same rows in Runnel (after a
// FLUSH) and upstream.
func waitSame(t *testing.T, runnel *pgx.Conn, up *cdcUpstream, query, when string) {
	t.Helper()
	waitSameAs(t, runnel, up, query, query, when)
}

// waitSameAs is waitSame with a different query upstream.
func waitSameAs(t *testing.T, runnel *pgx.Conn, up *cdcUpstream, query, upQuery, when string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		mustExec(t, runnel, "FLUSH")
		got := wiretest.QueryText(t, runnel, query)
		want := wiretest.QueryText(t, up.conn, upQuery)
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s differs\nupstream (%d rows): %s\nrunnel (%d rows): %s", when, query,
				len(want), strings.Join(headLines(want), "\n"), len(got), strings.Join(headLines(got), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func headLines(s []string) []string {
	if len(s) > 20 {
		return append(s[:20:20], "...")
	}
	return s
}

func testSeed(t *testing.T) int64 {
	s := time.Now().UnixNano()
	if v := os.Getenv("RUNNEL_TEST_SEED"); v != "" {
		s, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays)", s, s)
	return s
}

func cdcRandomDML(t *testing.T, up *cdcUpstream, rng *rand.Rand, n int) {
	t.Helper()
	for range n {
		id := rng.Intn(400)
		switch rng.Intn(5) {
		case 0, 1:
			up.exec(t, `INSERT INTO t VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET k = EXCLUDED.k, v = EXCLUDED.v`,
				id, rng.Intn(20), fmt.Sprintf("v%d", rng.Intn(1000)), fmt.Sprintf("%d.%d", rng.Intn(1000), rng.Intn(100)))
		case 2:
			up.exec(t, `UPDATE t SET k = k + 1, n = n * 2 WHERE id % 11 = $1`, rng.Intn(11))
		case 3:
			up.exec(t, `DELETE FROM t WHERE id = $1`, id)
		case 4:
			up.exec(t, `UPDATE t SET id = id + 1000 WHERE id = $1 AND NOT EXISTS (SELECT FROM t WHERE id = $1 + 1000)`, id)
		}
	}
}

const cdcTableQuery = "SELECT id, k, v, n FROM t ORDER BY id"
const cdcViewQuery = "SELECT k, count(*), sum(id) AS s FROM t GROUP BY k ORDER BY k"

// TestCDCTableFollowsUpstream: a PostgreSQL table read through CREATE
// SOURCE ... postgres-cdc and CREATE TABLE ... FROM source TABLE equals the
// upstream table, and a view over it equals the same query upstream, after
// seeded random INSERT/UPDATE/DELETE (key changes included) made before the
// snapshot, right after CREATE (while the snapshot may still run), across a
// RECOVER in the middle of the changes and across a restart: exactly once.
// DROP TABLE drops the table's replication slot.
func TestCDCTableFollowsUpstream(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	up := newCDCUpstream(t)
	up.exec(t, "CREATE TABLE t (id int PRIMARY KEY, k int, v text, n numeric)")
	up.exec(t, "INSERT INTO t SELECT i, i % 20, 'v' || i, i * 1.5 FROM generate_series(1, 2000) i")
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE SOURCE pg WITH ("+up.withOptions(", slot.name = 'rw_slot'")+")")
	mustExec(t, conn, "CREATE TABLE t (id int, k int, v varchar, n numeric, PRIMARY KEY (id)) FROM pg TABLE 'public.t'")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW mv AS SELECT k, count(*), sum(id) AS s FROM t GROUP BY k")
	cdcRandomDML(t, up, rng, 30) // during or after the snapshot
	waitSame(t, conn, up, cdcTableQuery, "after the snapshot")
	waitSameAs(t, conn, up, "SELECT * FROM mv ORDER BY k", cdcViewQuery, "view after the snapshot")

	cdcRandomDML(t, up, rng, 30)
	mustExec(t, conn, "RECOVER")
	cdcRandomDML(t, up, rng, 30)
	waitSame(t, conn, up, cdcTableQuery, "after RECOVER")

	ts.stop()
	cdcRandomDML(t, up, rng, 30) // while Runnel is down
	ts = startTestServer(t, dir)
	conn = ts.connect(t)
	cdcRandomDML(t, up, rng, 30)
	waitSame(t, conn, up, cdcTableQuery, "after restart")
	got := wiretest.QueryText(t, conn, "SELECT * FROM mv ORDER BY k")
	want := wiretest.QueryText(t, up.conn, cdcViewQuery)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("view after restart:\n%v\nwant\n%v", got, want)
	}

	if s := up.slots(t); len(s) != 1 || !strings.HasPrefix(s[0], "rw_slot_") {
		t.Fatalf("slots %v; want one rw_slot_*", s)
	}
	if _, err := conn.Exec(context.Background(), "DROP SOURCE pg"); err == nil || !strings.Contains(err.Error(), "depend") {
		t.Fatalf("DROP SOURCE with a table reading it: %v; want 2BP01", err)
	}
	mustExec(t, conn, "DROP MATERIALIZED VIEW mv")
	mustExec(t, conn, "DROP TABLE t")
	if s := up.slots(t); len(s) != 0 {
		t.Fatalf("slots after DROP TABLE: %v", s)
	}
	mustExec(t, conn, "DROP SOURCE pg")
}

// TestCDCAckWaitsForCommit (I8): while the epoch holding streamed changes
// cannot commit (a hook holds the commit), the slot's confirmed_flush_lsn
// does not move past what Runnel committed; once the commit goes through
// it catches up and the table is right. Single-table form.
func TestCDCAckWaitsForCommit(t *testing.T) {
	up := newCDCUpstream(t)
	up.exec(t, "CREATE TABLE t (id int PRIMARY KEY, k int, v text, n numeric)")
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id int, k int, v varchar, n numeric, PRIMARY KEY (id)) WITH ("+
		up.withOptions(", table.name = 't', slot.name = 'held_slot'")+")")
	up.exec(t, "INSERT INTO t VALUES (1, 1, 'a', 1)")
	waitSame(t, conn, up, cdcTableQuery, "before the hold")
	slotLSN := func() pglogrepl.LSN {
		return up.lsn(t, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'held_slot'")
	}
	// Acknowledged once committed (keepalives move it while idle).
	target := up.lsn(t, "SELECT pg_current_wal_insert_lsn()::text")
	for deadline := time.Now().Add(20 * time.Second); slotLSN() < target; {
		if time.Now().After(deadline) {
			t.Fatalf("confirmed_flush_lsn %s never reached %s while idle", slotLSN(), target)
		}
		time.Sleep(20 * time.Millisecond)
	}

	var armed atomic.Bool
	blocked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	remove := ts.srv.store.SetMetaWriteHook(func(op string, after bool) error {
		if op != "commit-delta" || after || !armed.Load() {
			return nil
		}
		once.Do(func() { close(blocked) })
		<-release
		return nil
	})
	t.Cleanup(remove)
	armed.Store(true)
	<-blocked
	held := slotLSN()
	up.exec(t, "INSERT INTO t SELECT i, i, 'b', i FROM generate_series(2, 500) i")
	after := up.lsn(t, "SELECT pg_current_wal_insert_lsn()::text")
	// Runnel receives the rows (and keepalives) but cannot commit them.
	time.Sleep(time.Second)
	if got := slotLSN(); got != held {
		t.Fatalf("confirmed_flush_lsn moved from %s to %s while the commit was held (I8)", held, got)
	}
	armed.Store(false)
	close(release)
	waitSame(t, conn, up, cdcTableQuery, "after the hold")
	for deadline := time.Now().Add(20 * time.Second); slotLSN() < after; {
		if time.Now().After(deadline) {
			t.Fatalf("confirmed_flush_lsn %s did not reach %s after the commit", slotLSN(), after)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustExec(t, conn, "DROP TABLE t")
	if s := up.slots(t); len(s) != 0 {
		t.Fatalf("slots after DROP TABLE: %v", s)
	}
}

// TestCDCDDLErrors: what CREATE refuses, with the SQLSTATE and the object
// named.
func TestCDCDDLErrors(t *testing.T) {
	up := newCDCUpstream(t)
	up.exec(t, "CREATE TABLE t (id int PRIMARY KEY, v text)")
	up.exec(t, "CREATE TABLE nokey (id int, v text)")
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE SOURCE pg WITH ("+up.withOptions("")+")")
	for _, c := range []struct{ sql, code, text string }{
		{"CREATE SOURCE bad WITH (connector = 'postgres-cdc', hostname = '127.0.0.1', port = '1', username = 'x', database.name = 'x')", "08000", "cannot connect"},
		{"CREATE SOURCE bad WITH (connector = 'postgres-cdc', hostname = 'h', username = 'x')", "22023", "database.name"},
		{"CREATE TABLE a (id int, v varchar, PRIMARY KEY (id)) FROM nosuch TABLE 'public.t'", "42704", "nosuch"},
		{"CREATE TABLE a (id int, v varchar, PRIMARY KEY (id)) FROM pg TABLE 'public.missing'", "42P01", "public.missing"},
		// A non-key column missing upstream is allowed (NULL until ALTER
		// TABLE ADD COLUMN adds it there; TestCDCUpstreamColumnAdded); a
		// key column is not.
		{"CREATE TABLE a (w int, v varchar, PRIMARY KEY (w)) FROM pg TABLE 'public.t'", "42703", `"w"`},
		{"CREATE TABLE a (id int, v varchar) FROM pg TABLE 'public.t'", "42P16", "PRIMARY KEY"},
		{"CREATE TABLE a (id int, v varchar, PRIMARY KEY (id)) FROM pg TABLE 'public.nokey'", "42P16", "replica identity"},
	} {
		_, err := conn.Exec(context.Background(), c.sql)
		if sqlState(err) != c.code || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v; want %s naming %s", c.sql, err, c.code, c.text)
		}
	}
	if s := up.slots(t); len(s) != 0 {
		t.Fatalf("slots after failed CREATEs: %v", s)
	}
}

// TestCDCStarColumnsAndCommitTime: RisingWave's CREATE TABLE t (*) FROM
// source TABLE '...' takes the upstream table's columns (types as
// PostgreSQL names them, typmods kept) and primary key; INCLUDE timestamp
// AS col holds each change's upstream commit time (the Unix epoch for the
// snapshot's rows); other INCLUDE kinds, (*) without a CDC upstream, and
// (*) over an upstream without a key or with a type Runnel lacks are
// refused with a clear error at CREATE.
func TestCDCStarColumnsAndCommitTime(t *testing.T) {
	up := newCDCUpstream(t)
	up.exec(t, "CREATE TABLE wide (a int, b varchar(20), c numeric(10,2), d timestamptz, e jsonb, f text[], g bool, h bytea, i uuid, j date, PRIMARY KEY (b, a))")
	up.exec(t, "INSERT INTO wide VALUES (1, 'x', 1.5, '2024-01-02 03:04:05+00', '{\"k\": 1}', '{p,q}', true, '\\x01', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2020-01-01')")
	up.exec(t, "CREATE TABLE nokey (a int)")
	up.exec(t, "CREATE TYPE mood AS ENUM ('ok')")
	up.exec(t, "CREATE TABLE withenum (id int PRIMARY KEY, m mood)")
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE SOURCE pg WITH ("+up.withOptions("")+")")
	mustExec(t, conn, "CREATE TABLE wide (*) FROM pg TABLE 'public.wide'")
	got := strings.Join(wiretest.QueryText(t, conn, "DESCRIBE wide"), "\n")
	want := strings.Join([]string{
		"a|integer|false|NULL", "b|character varying(20)|false|NULL", "c|numeric(10,2)|false|NULL",
		"d|timestamp with time zone|false|NULL", "e|jsonb|false|NULL", "f|text[]|false|NULL", "g|boolean|false|NULL",
		"h|bytea|false|NULL", "i|uuid|false|NULL", "j|date|false|NULL", "primary key|a, b|NULL|NULL", "distribution key|a, b|NULL|NULL"}, "\n")
	if got != want {
		t.Fatalf("DESCRIBE wide (*):\n%s\nwant\n%s", got, want)
	}
	up.exec(t, "INSERT INTO wide (a, b, c) VALUES (2, 'y', 2.25)")
	waitSame(t, conn, up, "SELECT a, b, c, d, e::text, f, g, h, i, j FROM wide ORDER BY a", "wide (*)")

	mustExec(t, conn, "CREATE TABLE w2 (a int, b varchar, PRIMARY KEY (a, b)) INCLUDE timestamp AS commit_ts FROM pg TABLE 'public.wide'")
	waitSameAs(t, conn, up, "SELECT a, b, commit_ts FROM w2 ORDER BY a",
		"SELECT a, b, '1970-01-01 00:00:00+00'::timestamptz FROM wide ORDER BY a", "snapshot rows' commit time")
	before := time.Now().Add(-time.Minute) // the upstream shares this clock
	up.exec(t, "INSERT INTO wide (a, b) VALUES (3, 'z')")
	waitSameAs(t, conn, up, "SELECT a, b FROM w2 ORDER BY a", "SELECT a, b FROM wide ORDER BY a", "after an upstream insert")
	var ct time.Time
	if err := conn.QueryRow(context.Background(), "SELECT commit_ts FROM w2 WHERE a = 3").Scan(&ct); err != nil {
		t.Fatal(err)
	}
	if ct.Before(before) || ct.After(time.Now().Add(time.Minute)) {
		t.Fatalf("commit_ts of a streamed insert = %v; want the upstream commit time (about %v)", ct, time.Now())
	}

	for _, c := range []struct{ sql, code, text string }{
		{"CREATE TABLE a (*) FROM pg TABLE 'public.nokey'", "42P16", "no primary key"},
		{"CREATE TABLE a (*) FROM pg TABLE 'public.withenum'", "0A000", `"m"`},
		{"CREATE TABLE a (*) WITH (connector = 'datagen')", "0A000", "postgres-cdc"},
		{"CREATE TABLE a (a int, b varchar, PRIMARY KEY (a, b)) INCLUDE key AS k FROM pg TABLE 'public.wide'", "0A000", "INCLUDE key"},
	} {
		_, err := conn.Exec(context.Background(), c.sql)
		if sqlState(err) != c.code || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v; want %s naming %s", c.sql, err, c.code, c.text)
		}
	}
}

// TestCDCSSLMode: RisingWave's ssl.mode reaches the connection: against
// the test cluster (no TLS) 'disabled' and the default work, 'required'
// and 'verify-full' are refused by the upstream check at CREATE SOURCE
// (before, the option was ignored and every connection used prefer); bad
// values are refused.
func TestCDCSSLMode(t *testing.T) {
	up := newCDCUpstream(t)
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE SOURCE plain WITH ("+up.withOptions(", ssl.mode = 'disabled'")+")")
	mustExec(t, conn, "CREATE SOURCE dflt WITH ("+up.withOptions("")+")")
	for _, c := range []struct{ extra, code, text string }{
		{", ssl.mode = 'required'", "08000", "TLS"},
		{", ssl.mode = 'verify-full'", "08000", "TLS"},
		{", ssl.mode = 'sometimes'", "22023", "ssl.mode"},
		{", ssl.root.cert = '/tmp/ca.pem'", "22023", "verify"},
	} {
		_, err := conn.Exec(context.Background(), "CREATE SOURCE bad WITH ("+up.withOptions(c.extra)+")")
		text := fmt.Sprint(err)
		if pe, ok := err.(*pgconn.PgError); ok {
			text += " " + pe.Detail
		}
		if sqlState(err) != c.code || !strings.Contains(text, c.text) {
			t.Errorf("%s: %s; want %s naming %s", c.extra, text, c.code, c.text)
		}
	}
}
