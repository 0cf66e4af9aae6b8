package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/metasrv"
)

// DESCRIBE and SHOW COLUMNS list columns (hidden ones marked) over the
// wire, DESCRIBE adds the keys, and SHOW CREATE prints statements that
// create the same objects again.
func TestDescribeAndShowCreate(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE TABLE t (id INT PRIMARY KEY, "Name" VARCHAR NOT NULL, price NUMERIC(10,2) DEFAULT 0, at TIMESTAMP,
		WATERMARK FOR at AS at - INTERVAL '5' SECOND) APPEND ONLY`)
	mustExec(t, conn, "CREATE TABLE nokey (a INT, b TEXT)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW mv AS SELECT id, sum(price) AS total FROM t GROUP BY id")
	mustExec(t, conn, "CREATE VIEW v AS SELECT id FROM t WHERE price > 1")

	got := queryStrings(t, conn, "DESCRIBE t")
	want := "[id|integer|false|<nil> Name|character varying|false|<nil> price|numeric(10,2)|false|<nil> " +
		"at|timestamp without time zone|false|<nil> primary key|id|<nil>|<nil> distribution key|id|<nil>|<nil>]"
	if fmt.Sprint(got) != want {
		t.Fatalf("DESCRIBE t =\n %v\nwant\n %v", got, want)
	}
	if got := queryStrings(t, conn, "SHOW COLUMNS FROM nokey"); fmt.Sprint(got) != "[a|integer|false|<nil> b|text|false|<nil> _row_id|bigint|true|<nil>]" {
		t.Fatalf("SHOW COLUMNS FROM nokey = %v", got)
	}
	if got := queryStrings(t, conn, "DESCRIBE public.mv"); len(got) != 4 || got[2] != "primary key|id|<nil>|<nil>" {
		t.Fatalf("DESCRIBE public.mv = %v", got)
	}

	create := func(stmt string) string {
		t.Helper()
		rows := queryStrings(t, conn, stmt)
		if len(rows) != 1 {
			t.Fatalf("%s = %v", stmt, rows)
		}
		return rows[0]
	}
	table := create("SHOW CREATE TABLE t")
	wantTable := `public.t|CREATE TABLE public.t (id integer, "Name" character varying NOT NULL, price numeric(10,2) DEFAULT 0, ` +
		`at timestamp without time zone, PRIMARY KEY (id), WATERMARK FOR at AS at - INTERVAL '5' SECOND) APPEND ONLY`
	if table != wantTable {
		t.Fatalf("SHOW CREATE TABLE t =\n %s\nwant\n %s", table, wantTable)
	}
	if got := create("SHOW CREATE MATERIALIZED VIEW mv"); !strings.HasPrefix(got, "public.mv|CREATE MATERIALIZED VIEW public.mv AS SELECT") {
		t.Fatalf("SHOW CREATE MATERIALIZED VIEW mv = %s", got)
	}
	if got := create("SHOW CREATE VIEW v"); !strings.HasPrefix(got, "public.v|CREATE VIEW public.v AS SELECT") {
		t.Fatalf("SHOW CREATE VIEW v = %s", got)
	}

	// rw_catalog lists the same statements per kind.
	if got := queryStrings(t, conn, "SELECT name, definition FROM rw_catalog.rw_tables ORDER BY id"); len(got) != 2 || got[0] != "t|"+strings.SplitN(table, "|", 2)[1] {
		t.Fatalf("rw_tables = %v", got)
	}
	if got := queryStrings(t, conn, "SELECT name, append_only FROM rw_materialized_views UNION ALL SELECT name, append_only FROM rw_views"); fmt.Sprint(got) != "[mv|false v|false]" {
		t.Fatalf("rw_materialized_views, rw_views = %v", got)
	}

	// The printed statements create equal objects.
	mustExec(t, conn, "CREATE SCHEMA copy")
	for _, stmt := range []string{"SHOW CREATE TABLE t", "SHOW CREATE TABLE nokey", "SHOW CREATE MATERIALIZED VIEW mv"} {
		text := strings.SplitN(create(stmt), "|", 2)[1]
		text = strings.Replace(text, " public.", " copy.", 1)
		mustExec(t, conn, text)
	}
	for _, name := range []string{"t", "nokey", "mv"} {
		orig := queryStrings(t, conn, "DESCRIBE public."+name)
		cp := queryStrings(t, conn, "DESCRIBE copy."+name)
		if fmt.Sprint(orig) != fmt.Sprint(cp) {
			t.Fatalf("%s re-created from SHOW CREATE differs:\n %v\n %v", name, orig, cp)
		}
	}

	for stmt, code := range map[string]string{
		"DESCRIBE nosuch":                 "42P01",
		"SHOW COLUMNS FROM nosuch":        "42P01",
		"SHOW CREATE TABLE mv":            "42809",
		"SHOW CREATE MATERIALIZED VIEW t": "42809",
		"SHOW CREATE TABLE":               "42601",
		"CANCEL JOBS 987654":              "42704",
	} {
		if pe := pgErr(t, conn, stmt); pe == nil || pe.Code != code {
			t.Errorf("%s: error %v, want %s", stmt, pe, code)
		}
	}
}

// CANCEL JOBS aborts a materialized view held in the middle of its
// backfill: the CREATE fails with 57014, the view and its job are gone,
// and the same view can then be created.
func TestCancelJobs(t *testing.T) {
	conn, _, unhold, created := heldViewCreation(t)
	jobs := queryStrings(t, conn, "SHOW JOBS")
	if len(jobs) != 1 {
		t.Fatalf("SHOW JOBS = %v", jobs)
	}
	id := strings.SplitN(jobs[0], "|", 2)[0]
	// Held in the hook, the backfill cannot pass the barrier that stops
	// the view's actors; release it once the creation is cancelled.
	hook := func(uint64) { unhold() }
	metasrv.JobCancelledHook.Store(&hook)
	t.Cleanup(func() { metasrv.JobCancelledHook.Store(nil) })
	if got := queryStrings(t, conn, "CANCEL JOBS "+id); fmt.Sprint(got) != "["+id+"]" {
		t.Fatalf("CANCEL JOBS %s = %v", id, got)
	}
	if err := <-created; err == nil || !strings.Contains(err.Error(), "57014") || !strings.Contains(err.Error(), "slow") {
		t.Fatalf("cancelled CREATE: %v; want 57014 naming the view", err)
	}
	if jobs := queryStrings(t, conn, "SHOW JOBS"); len(jobs) != 0 {
		t.Fatalf("SHOW JOBS after CANCEL = %v", jobs)
	}
	if pe := pgErr(t, conn, "SELECT * FROM slow"); pe == nil || pe.Code != "42P01" {
		t.Fatalf("the cancelled view is still there: %v", pe)
	}
	if pe := pgErr(t, conn, "CANCEL JOBS "+id); pe == nil || pe.Code != "42704" {
		t.Fatalf("second CANCEL JOBS %s: %v, want 42704", id, pe)
	}
	mustExec(t, conn, "CREATE MATERIALIZED VIEW slow AS SELECT v, count(*) AS n FROM big GROUP BY v")
	if got := queryStrings(t, conn, "SELECT sum(n)::bigint FROM slow"); fmt.Sprint(got) != "[3000]" {
		t.Fatalf("slow = %v", got)
	}
}
