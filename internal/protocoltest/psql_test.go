package protocoltest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// The psql meta-commands' output (\d, \dt, \d+, \l, \dn, \dm, …) against a
// real server is asserted line by line in internal/server/syscat_test.go.
// This file adds \copy in and out, with PostgreSQL as the oracle, and
// \d of a table of every type compared with PostgreSQL's.

const psqlPath = "/usr/bin/psql"

// psql runs one psql command against url and returns its stdout; psql
// must exit 0 with an empty stderr. extra are more psql arguments.
func psql(t *testing.T, url, command string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, psqlPath, append([]string{"-X", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", command}, extra...)...)
	// PGTZ makes libpq set the session time zone on both servers.
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PAGER=", "PSQL_PAGER=", "COLUMNS=200", "PGTZ=UTC")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("psql -c %q: %v\nstdout:\n%s\nstderr:\n%s", command, err, out, stderr.String())
	}
	return string(out)
}

// everyTypeTable is a table with a column of every supported type, and
// copyInput rows for it in CSV: quoting, embedded commas, quotes and
// newlines, empty strings versus NULLs, unicode, special values.
const everyTypeTable = `CREATE TABLE ct (id int PRIMARY KEY, b boolean, s smallint, i integer, l bigint,
	r real, d double precision, n numeric, nn numeric(10,2), v varchar(20), x text, y bytea, dt date,
	tm time, ts timestamp, tz timestamptz, iv interval, j jsonb NOT NULL)`

const copyInput = `1,t,-32768,2147483647,-9223372036854775808,1.5,0.1,12345678901234567890.123456789,3.14,héllo,"with, comma",\x00ff,2024-02-29,23:59:59.999999,2001-09-09 01:46:40.5,2001-09-09 01:46:40.5+00,1 year 2 mons 3 days 04:05:06.7,"{""a"": [1, null]}"
2,f,0,0,0,NaN,-Infinity,NaN,0.00,"","line one
line two",\x,infinity,00:00:00,-infinity,infinity,-1 days +01:00:00,[]
3,,,,,,,,,,,,,,,,,{}
4,t,1,2,3,-0,1e+100,-0.000001,-99999999.99,"quote "" inside",🦀 crab,\xdeadbeef,0001-01-01,12:00:00,1970-01-01 00:00:00,1970-01-01 00:00:00+00,00:00:00,"""ü"""
`

func TestPsqlCopyRoundTrip(t *testing.T) {
	if _, err := os.Stat(psqlPath); err != nil {
		t.Skipf("psql not installed: %v", err)
	}
	srv := servertest.Start(t)
	urls := map[string]string{"runnel": srv.URL(), "postgresql": pgtest.NewDatabase(t)}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte(copyInput), 0o644); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]map[string]string{}
	for name, url := range urls {
		out := map[string]string{}
		outputs[name] = out
		psql(t, url, everyTypeTable)
		if got := psql(t, url, `\copy ct FROM '`+in+`' CSV`); strings.TrimSpace(got) != "COPY 4" {
			t.Fatalf("%s: \\copy from: %q; want COPY 4", name, got)
		}
		if name == "runnel" {
			psql(t, url, "FLUSH")
		}
		files := map[string]string{
			"table csv":  `\copy ct TO '%s' CSV`,
			"query csv":  `\copy (SELECT * FROM ct ORDER BY id) TO '%s' CSV HEADER`,
			"table text": `\copy ct TO '%s'`,
			"query expr": `\copy (SELECT id, n * 2 AS n2, upper(x) AS ux, ts + iv AS later FROM ct WHERE id <> 3 ORDER BY id DESC) TO '%s' WITH (FORMAT csv, HEADER true, NULL 'NULL')`,
		}
		for what, cmdFmt := range files {
			path := filepath.Join(dir, name+"-"+strings.ReplaceAll(what, " ", "-"))
			if got := psql(t, url, strings.Replace(cmdFmt, "%s", path, 1)); !strings.HasPrefix(got, "COPY ") {
				t.Fatalf("%s: %s: %q", name, what, got)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out[what] = string(b)
		}
		// \copy out of the table in CSV gives back the input (as a set of
		// lines: a table has no order).
		if got, want := sortedLines(out["table csv"], true), sortedLines(copyInput, true); !slices.Equal(got, want) {
			t.Errorf("%s: \\copy out differs from what went in:\n%s\nwant:\n%s", name, out["table csv"], copyInput)
		}
	}
	for what, want := range outputs["postgresql"] {
		got := outputs["runnel"][what]
		if strings.HasPrefix(what, "table ") {
			csv := what == "table csv"
			got, want = strings.Join(sortedLines(got, csv), "\n"), strings.Join(sortedLines(want, csv), "\n")
		}
		if got != want {
			t.Errorf("%s: runnel and postgresql differ, %s\nrunnel:\n%s\npostgresql:\n%s", what, diffLines(got, want), got, want)
		}
	}

	// The same file loaded again is a unique violation, reported by psql,
	// and nothing of it is applied.
	cmd := exec.Command(psqlPath, "-X", "-d", srv.URL(), "-c", `\copy ct FROM '`+in+`' CSV`)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "duplicate key value violates unique constraint") {
		t.Errorf("second \\copy: %v %s; want a unique violation", err, b)
	}
	psql(t, srv.URL(), "FLUSH")
	if got := psql(t, srv.URL(), "SELECT count(*) FROM ct"); !strings.Contains(got, "\n     4\n") {
		t.Errorf("after the failed \\copy: %s", got)
	}
}

// sortedLines splits COPY output into records for an unordered
// comparison. In CSV a record may span lines inside quotes; it is kept
// whole (text format escapes newlines).
func sortedLines(s string, csv bool) []string {
	var recs []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		if r == '"' && csv {
			quoted = !quoted
		}
		if r == '\n' && !quoted {
			recs = append(recs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		recs = append(recs, cur.String())
	}
	slices.Sort(recs)
	return recs
}

// TestPsqlDescribeEveryType compares psql's \d and \d+ of a table with a
// column of every type with PostgreSQL's output.
func TestPsqlDescribeEveryType(t *testing.T) {
	if _, err := os.Stat(psqlPath); err != nil {
		t.Skipf("psql not installed: %v", err)
	}
	srv := servertest.Start(t)
	rw, pg := srv.URL(), pgtest.NewDatabase(t)
	psql(t, rw, everyTypeTable)
	psql(t, pg, everyTypeTable)
	for _, c := range []string{`\d ct`, `\d+ ct`, `\dt`, `\dt ct`, `\dn public`} {
		got, want := psql(t, rw, c, "-A"), psql(t, pg, c, "-A")
		// Owners differ (root here, the cluster's superuser there).
		got = strings.ReplaceAll(got, "root", "ROLE")
		want = strings.ReplaceAll(strings.ReplaceAll(want, "pg_database_owner", "ROLE"), "postgres", "ROLE")
		if got != want {
			t.Errorf("%s: %s\nrunnel:\n%s\npostgresql:\n%s", c, diffLines(got, want), got, want)
		}
	}
}
