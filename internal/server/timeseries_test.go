package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/storage"
)

// Time-series tables (internal/tsdb) over pgwire: WITH (time_index, ttl,
// append_mode), tags from PRIMARY KEY, GreptimeDB's dedup on tags and
// time, duplicates kept in append mode, rows past the TTL absent from
// batch reads and from a view's backfill at once, and from storage after
// compaction; bad options fail with their SQLSTATE.
func TestTimeSeriesTables(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE TABLE cpu (host TEXT, ts TIMESTAMPTZ, usage DOUBLE PRECISION, PRIMARY KEY (host))
		WITH (time_index = 'ts', ttl = '7d')`)
	mustExec(t, conn, `CREATE TABLE logs (host TEXT, ts TIMESTAMP, msg TEXT, PRIMARY KEY (host))
		WITH (time_index = 'ts', append_mode = 'true')`)
	now := time.Now().UTC().Truncate(time.Second)
	old := now.Add(-30 * 24 * time.Hour)
	for i := range 3 {
		mustExec(t, conn, "INSERT INTO cpu VALUES ($1, $2, $3), ($1, $4, $3)", fmt.Sprintf("h%d", i), now, float64(i), old)
	}
	// Same tags and time: the later row replaces the earlier (no 23505).
	mustExec(t, conn, "INSERT INTO cpu VALUES ('h1', $1, 99)", now)
	mustExec(t, conn, "INSERT INTO logs VALUES ('a', '2020-01-01 00:00:00', 'x'), ('a', '2020-01-01 00:00:00', 'x')")
	mustExec(t, conn, "INSERT INTO logs VALUES ('a', '2020-01-01 00:00:00', 'x')")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT host, usage FROM cpu ORDER BY host"); fmt.Sprint(got) != "[h0|0 h1|99 h2|2]" {
		t.Fatalf("cpu (old rows past the TTL must not show, h1 replaced) = %v", got)
	}
	if got := queryStrings(t, conn, "SELECT count(*) FROM cpu WHERE ts < now() - interval '8 days'"); fmt.Sprint(got) != "[0]" {
		t.Fatalf("expired rows visible to a filtered scan: %v", got)
	}
	if got := queryStrings(t, conn, "SELECT count(*) FROM logs"); fmt.Sprint(got) != "[3]" {
		t.Fatalf("append-mode duplicates = %v; want 3 kept", got)
	}
	// A view's backfill reads the table as a batch read does.
	mustExec(t, conn, "CREATE MATERIALIZED VIEW cpu_n AS SELECT count(*) AS n FROM cpu")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT n FROM cpu_n"); fmt.Sprint(got) != "[3]" {
		t.Fatalf("view over the table counted %v; want 3 (expired rows not backfilled)", got)
	}
	if got := queryStrings(t, conn, `SELECT column_name FROM information_schema.columns WHERE table_name = 'logs' ORDER BY ordinal_position`); fmt.Sprint(got) != "[host ts msg]" {
		t.Fatalf("logs columns = %v (the append-mode row id must stay hidden)", got)
	}

	// Compaction drops the expired rows from storage: with the read
	// filter removed, they are gone.
	rel := ts.srv.catalog.Relations(func(r *catalog.Relation) bool { return r.Name == "cpu" })[0]
	ctx := context.Background()
	for {
		ran, err := ts.srv.store.Compact(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			break
		}
	}
	tid := storage.TableID(rel.StateTable)
	ts.srv.store.SetRetention(tid, nil)
	it, err := ts.srv.store.Iter(ctx, tid, nil, nil, ts.srv.store.CommittedEpoch(), storage.ReadOptions{CommittedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		n++
	}
	it.Close()
	if n != 3 {
		t.Fatalf("after compaction storage holds %d rows of cpu; want 3 (the expired ones dropped)", n)
	}

	for _, c := range []struct{ sql, state string }{
		{"CREATE TABLE e1 (ts TIMESTAMP, v INT) WITH (time_index = 'nope')", "42703"},
		{"CREATE TABLE e2 (ts INT, v INT) WITH (time_index = 'ts')", "42804"},
		{"CREATE TABLE e3 (ts TIMESTAMP, v INT) WITH (time_index = 'ts', ttl = '7 fortnights')", "22023"},
		{"CREATE TABLE e4 (ts TIMESTAMP, v INT) WITH (time_index = 'ts', append_mode = 'maybe')", "22023"},
		{"CREATE TABLE e5 (ts TIMESTAMP, v INT, PRIMARY KEY (ts)) WITH (time_index = 'ts')", "42P16"},
	} {
		if got := execState(conn, c.sql); got != c.state {
			t.Errorf("%s: SQLSTATE %s; want %s", c.sql, got, c.state)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE e1 (ts TIMESTAMP, v INT) WITH (time_index = 'nope')"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("error does not name the column: %v", err)
	}
}

// GreptimeDB's CREATE TABLE form: TIME INDEX as a column constraint or an
// element, PRIMARY KEY as the tags, STRING and DOUBLE, ENGINE = mito and
// GreptimeDB's WITH options.
func TestGreptimeCreateTable(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE TABLE monitor (
		host STRING,
		ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP TIME INDEX,
		cpu DOUBLE DEFAULT 0,
		memory DOUBLE,
		PRIMARY KEY(host)) ENGINE = mito WITH (ttl = '7d', append_mode = 'false')`)
	mustExec(t, conn, `CREATE TABLE IF NOT EXISTS events (app STRING, ts TIMESTAMP(3), msg STRING, TIME INDEX (ts), PRIMARY KEY (app)) WITH (append_mode = 'true')`)
	mustExec(t, conn, "INSERT INTO monitor VALUES ('a', now(), 1.5, 2), ('a', now() - interval '30 days', 1, 1)")
	mustExec(t, conn, "INSERT INTO events VALUES ('x', '2026-01-01', 'm'), ('x', '2026-01-01', 'm')")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT host, cpu, memory FROM monitor"); fmt.Sprint(got) != "[a|1.5|2]" {
		t.Fatalf("monitor = %v", got)
	}
	if got := queryStrings(t, conn, "SELECT count(*) FROM events"); fmt.Sprint(got) != "[2]" {
		t.Fatalf("events = %v; want the duplicate kept", got)
	}
	if got := queryStrings(t, conn, "SELECT data_type FROM information_schema.columns WHERE table_name = 'monitor' ORDER BY ordinal_position"); fmt.Sprint(got) != "[text timestamp without time zone double precision double precision]" {
		t.Fatalf("monitor types = %v", got)
	}
}

// Scans filtered on a time-series table's time index read only the SSTs
// whose time range overlaps (batch.TimeScanner, storage.ReadOptions.Time);
// the answers must equal those of the same filter written so that nothing
// is pushed down (ts + interval '0'), for ranges over, inside, between and
// at the edges of the files, with parameters too.
func TestTimeIndexPruningAnswers(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE TABLE m (host TEXT, ts TIMESTAMPTZ, v INT, PRIMARY KEY (host)) WITH (time_index = 'ts')`)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for day := range 3 {
		for h := range 5 {
			for i := range 10 {
				mustExec(t, conn, "INSERT INTO m VALUES ($1, $2, $3)", fmt.Sprintf("h%d", h), base.Add(time.Duration(day)*24*time.Hour+time.Duration(i)*time.Hour), day*100+i)
			}
		}
		mustExec(t, conn, "FLUSH") // one epoch (SST) per day
	}
	at := func(day, hour int) time.Time {
		return base.Add(time.Duration(day)*24*time.Hour + time.Duration(hour)*time.Hour)
	}
	for _, c := range []struct{ lo, hi time.Time }{
		{at(0, 0), at(3, 0)}, {at(1, 0), at(1, 9)}, {at(1, 9), at(2, 0)}, {at(0, 10), at(1, 0)},
		{at(1, 3), at(1, 3)}, {at(2, 5), at(9, 0)}, {at(-5, 0), at(0, 0)}, {at(4, 0), at(5, 0)}, {at(2, 0), at(1, 0)},
	} {
		for _, q := range []string{
			"SELECT count(*), coalesce(sum(v), 0) FROM m WHERE ts >= '%s' AND ts <= '%s'",
			"SELECT count(*), coalesce(sum(v), 0) FROM m WHERE ts > '%s' AND '%s' > ts",
			"SELECT count(*), coalesce(sum(v), 0) FROM m WHERE ts BETWEEN '%s' AND '%s' AND host <> 'h2'",
		} {
			lo, hi := c.lo.Format(time.RFC3339), c.hi.Format(time.RFC3339)
			got := queryStrings(t, conn, fmt.Sprintf(q, lo, hi))
			unpushed := strings.ReplaceAll(q, "ts ", "ts + interval '0 s' ")
			unpushed = strings.ReplaceAll(unpushed, "> ts", "> ts + interval '0 s'")
			want := queryStrings(t, conn, fmt.Sprintf(unpushed, lo, hi))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %v; without pushdown %v", fmt.Sprintf(q, lo, hi), got, want)
			}
		}
		got := queryStrings(t, conn, "SELECT count(*) FROM m WHERE ts >= $1 AND ts < $2", c.lo, c.hi)
		want := queryStrings(t, conn, "SELECT count(*) FROM m WHERE ts + interval '0 s' >= $1 AND ts + interval '0 s' < $2", c.lo, c.hi)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("parameters %v..%v: %v; without pushdown %v", c.lo, c.hi, got, want)
		}
	}
}
