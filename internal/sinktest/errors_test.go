package sinktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestSinkErrors: CREATE/DROP SINK refuse what RisingWave refuses, with a
// SQLSTATE and a message naming the sink; SHOW CREATE SINK, DESCRIBE and
// dependencies behave like a view's.
func TestSinkErrors(t *testing.T) {
	target, pg := targetDB(t)
	ctx := context.Background()
	mustExec(t, pg, "CREATE TABLE tgt (k int PRIMARY KEY, v int)")
	mustExec(t, pg, "CREATE TABLE nokey (k int, v int)")
	url := jdbcURL(t, target)

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE t (k int PRIMARY KEY, v int)")
	mustExec(t, rw, "CREATE TABLE ev (k int, v int) APPEND ONLY")
	mustExec(t, rw, "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t")
	with := func(extra string) string {
		return fmt.Sprintf("WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'tgt'%s)", url, extra)
	}
	for _, c := range []struct{ sql, code, msg string }{
		{"CREATE SINK s FROM mv " + with(", type = 'append-only'"), "22023", `sink "s" cannot be append-only`},
		{"CREATE SINK s FROM mv " + with(""), "22023", "type option is required"},
		{"CREATE SINK s FROM mv " + with(", type = 'upsert'"), "22023", "needs primary_key"},
		{"CREATE SINK s FROM mv " + with(", type = 'upsert', primary_key = 'nope'"), "42703", `primary_key column "nope"`},
		{"CREATE SINK s FROM mv WITH (connector = 'nope', type = 'upsert', primary_key = 'k')", "0A000", `unknown connector "nope"`},
		{"CREATE SINK s FROM mv WITH (type = 'upsert')", "22023", "connector option is required"},
		{"CREATE SINK s FROM nothere " + with(", type = 'upsert', primary_key = 'k'"), "42P01", "nothere"},
		{"CREATE SINK s FROM mv " + with(", type = 'upsert', primary_key = 'k', force_append_only = 'true'"), "22023", "needs type = 'append-only'"},
		{strings.Replace("CREATE SINK s FROM mv "+with(", type = 'upsert', primary_key = 'k'"), "'tgt'", "'missing'", 1), "42P01", "missing"},
		{strings.Replace("CREATE SINK s FROM mv "+with(", type = 'upsert', primary_key = 'k'"), "'tgt'", "'nokey'", 1), "42P10", "no primary key or unique index"},
		{"CREATE SINK s AS SELECT k, v AS w FROM t " + with(", type = 'upsert', primary_key = 'k'"), "42703", `column "w" of the sink does not exist`},
		{"CREATE SINK s FROM mv WITH (connector = 'jdbc', jdbc.url = 'jdbc:mysql://x/y', table.name = 'tgt', type = 'upsert', primary_key = 'k')", "22023", "jdbc:postgresql://"},
		{"CREATE SINK mv FROM t " + with(", type = 'upsert', primary_key = 'k'"), "42P07", `"mv" already exists`},
		{"DROP SINK nope", "42704", `sink "nope" does not exist`},
		{"DROP SINK mv", "42809", `"mv" is not a sink`},
	} {
		_, err := rw.Exec(ctx, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(pe.Message, c.msg) {
			t.Errorf("%s:\n got %v, want %s %q", c.sql, err, c.code, c.msg)
		}
	}
	// An append-only table needs no force_append_only.
	mustExec(t, rw, "CREATE SINK ev_sink FROM ev WITH (connector = 'blackhole', type = 'append-only')")
	mustExec(t, rw, "CREATE SINK s FROM mv "+with(", type = 'upsert', primary_key = 'k'"))
	for _, c := range []struct{ sql, code string }{
		{"SELECT * FROM s", "42809"},
		{"CREATE MATERIALIZED VIEW v2 AS SELECT * FROM s", "42809"},
		{"DROP MATERIALIZED VIEW mv", "2BP01"},
		{"CREATE SINK s FROM mv " + with(", type = 'upsert', primary_key = 'k'"), "42P07"},
	} {
		_, err := rw.Exec(ctx, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("%s: got %v, want %s", c.sql, err, c.code)
		}
	}
	mustExec(t, rw, "CREATE SINK IF NOT EXISTS s FROM mv "+with(", type = 'upsert', primary_key = 'k'"))
	got := rowsOf(t, rw, "SHOW CREATE SINK s")
	want := fmt.Sprintf(`public.s|CREATE SINK public.s FROM public.mv WITH (connector = 'jdbc', jdbc.url = '%s', primary_key = 'k', table.name = 'tgt', type = 'upsert')`, url)
	if len(got) != 1 || got[0] != want {
		t.Errorf("SHOW CREATE SINK: %v\nwant %s", got, want)
	}
	if got := rowsOf(t, rw, "DESCRIBE s"); len(got) < 2 || got[0] != "k|integer|false|NULL" {
		t.Errorf("DESCRIBE s: %v", got)
	}
	if got := rowsOf(t, rw, "SELECT relname FROM pg_class WHERE relname = 's'"); len(got) != 0 {
		t.Errorf("pg_class lists the sink: %v", got)
	}
	// DROP ... CASCADE drops the sink with the view.
	mustExec(t, rw, "DROP MATERIALIZED VIEW mv CASCADE")
	if got := rowsOf(t, rw, "SHOW SINKS"); len(got) != 1 || got[0] != "ev_sink" {
		t.Errorf("SHOW SINKS after CASCADE: %v", got)
	}
}

// TestSinkUnknownOptionsWarned: a WITH option a sink's connector does not
// use (a misspelt table.name here) gets a WARNING naming it; the options
// every sink takes and the connector's own get none.
func TestSinkUnknownOptionsWarned(t *testing.T) {
	target, pg := targetDB(t)
	mustExec(t, pg, "CREATE TABLE tgt (k int PRIMARY KEY, v int)")
	srv := servertest.Start(t)
	rw, noticed := servertest.ConnectNotices(t, srv.URL())
	mustExec(t, rw, "CREATE TABLE t (k int PRIMARY KEY, v int)")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK ok1 FROM t WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'tgt', type = 'upsert',
		primary_key = 'k', sink_decouple = 'true', commit_checkpoint_interval = '1')`, jdbcURL(t, target)))
	if notices := noticed(); len(notices) != 0 {
		t.Fatalf("notices for known options: %v", notices)
	}
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK typo FROM t WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'tgt', type = 'upsert',
		primary_key = 'k', tabel.name = 'other')`, jdbcURL(t, target)))
	if notices := noticed(); len(notices) != 1 || !strings.Contains(notices[0], `WARNING: WITH option "tabel.name" is not used by the jdbc sink connector`) {
		t.Fatalf("notices = %v; want one WARNING naming tabel.name", notices)
	}
}
