package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/wiretest"
)

const psqlPath = "/usr/bin/psql"

// runPsql runs one psql command against the test server and returns its
// output; psql's exit status must be 0 and stderr empty.
func runPsql(t *testing.T, ts *testServer, command string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, psqlPath, "-X", "-h", host, "-p", port, "-U", "root", "-d", "dev", "-c", command)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PAGER=", "PSQL_PAGER=", "COLUMNS=200")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("psql -c %q: %v\nstdout:\n%s\nstderr:\n%s", command, err, out, stderr.String())
	}
	return string(out)
}

// wantLines checks that every wanted line occurs in out (trailing blanks
// ignored).
func wantLines(t *testing.T, command, out string, want ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		have[strings.TrimRight(l, " ")] = true
	}
	for _, w := range want {
		if !have[strings.TrimRight(w, " ")] {
			t.Errorf("%s: missing line %q in output:\n%s", command, w, out)
		}
	}
}

func setupCatalogObjects(t *testing.T) *testServer {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id int PRIMARY KEY, name varchar(10) NOT NULL, n int DEFAULT 5)")
	mustExec(t, conn, "CREATE TABLE nopk (a bigint, b text)")
	mustExec(t, conn, "CREATE TABLE comp (x int, \"Y\" int, z numeric(10,2), PRIMARY KEY (x, \"Y\"))")
	mustExec(t, conn, "CREATE VIEW v AS SELECT id, name FROM t")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW mv AS SELECT count(*) AS c FROM t")
	mustExec(t, conn, "CREATE SCHEMA other")
	mustExec(t, conn, "CREATE TABLE other.hidden (k int)")
	return ts
}

func TestPsqlMetaCommands(t *testing.T) {
	if _, err := os.Stat(psqlPath); err != nil {
		t.Skip("psql not installed")
	}
	ts := setupCatalogObjects(t)

	out := runPsql(t, ts, `\dt`)
	wantLines(t, `\dt`, out,
		" Schema | Name | Type  | Owner",
		" public | comp | table | root",
		" public | nopk | table | root",
		" public | t    | table | root",
		"(3 rows)")
	if strings.Contains(out, "hidden") {
		t.Errorf(`\dt lists a table outside search_path:\n%s`, out)
	}

	out = runPsql(t, ts, `\dt t*`)
	wantLines(t, `\dt t*`, out, " public | t    | table | root", "(1 row)")

	out = runPsql(t, ts, `\d t`)
	wantLines(t, `\d t`, out,
		`                        Table "public.t"`,
		" Column |         Type          | Collation | Nullable | Default",
		" id     | integer               |           | not null |",
		" name   | character varying(10) |           | not null |",
		" n      | integer               |           |          | 5",
		"Indexes:",
		`    "t_pkey" PRIMARY KEY, btree (id)`)

	out = runPsql(t, ts, `\d comp`)
	wantLines(t, `\d comp`, out,
		` z      | numeric(10,2) |           |          |`,
		`    "comp_pkey" PRIMARY KEY, btree (x, "Y")`)

	out = runPsql(t, ts, `\d nopk`)
	wantLines(t, `\d nopk`, out, " a      | bigint |           |          |", " b      | text   |           |          |")
	if strings.Contains(out, "_row_id") || strings.Contains(out, "Indexes:") {
		t.Errorf(`\d nopk shows the hidden row id:\n%s`, out)
	}

	out = runPsql(t, ts, `\d+ t`)
	wantLines(t, `\d+ t`, out,
		" n      | integer               |           |          | 5       | plain    |             |              |",
		" name   | character varying(10) |           | not null |         | extended |             |              |",
		`    "t_pkey" PRIMARY KEY, btree (id)`,
		"Access method: heap")

	out = runPsql(t, ts, `\d+ v`)
	wantLines(t, `\d+ v`, out, `                                     View "public.v"`, "View definition:")

	out = runPsql(t, ts, `\l`)
	wantLines(t, `\l`, out, " dev  | root  | UTF8     | C       | C     |            | libc            |")

	out = runPsql(t, ts, `\dn`)
	// rw_catalog (rw_actors, rw_recovery_history) is listed, as RisingWave lists it.
	wantLines(t, `\dn`, out, " other      | root", " public     | root", " rw_catalog | root", "(3 rows)")

	out = runPsql(t, ts, `\dm`)
	wantLines(t, `\dm`, out, " public | mv   | materialized view | root", "(1 row)")

	out = runPsql(t, ts, `\dv`)
	wantLines(t, `\dv`, out, " public | v    | view | root", "(1 row)")

	out = runPsql(t, ts, `\d`)
	wantLines(t, `\d`, out, " public | mv   | materialized view | root", " public | v    | view              | root", "(5 rows)")

	out = runPsql(t, ts, `\di`)
	wantLines(t, `\di`, out, " public | comp_pkey | index | root  | comp", " public | t_pkey    | index | root  | t")

	// Built-in functions and operators (pg_proc, pg_operator) are listed.
	out = runPsql(t, ts, `\df abs`)
	wantLines(t, `\df abs`, out, " pg_catalog | abs  | integer          | integer             | func")
	out = runPsql(t, ts, `\df lag`)
	wantLines(t, `\df lag`, out, " pg_catalog | lag  | anyelement       | anyelement, integer                   | window")
	out = runPsql(t, ts, `\do ||`)
	wantLines(t, `\do ||`, out, " pg_catalog | ||   | text          | text           | text        |")

	out = runPsql(t, ts, `\du`)
	wantLines(t, `\du`, out, " Role name |                  Attributes                   | Member of")

	runPsql(t, ts, `\dt+`)
	runPsql(t, ts, `\l+`)
	runPsql(t, ts, `\d other.hidden`)
	runPsql(t, ts, `\d pg_class`)
}

func TestSystemCatalogQueries(t *testing.T) {
	ts := setupCatalogObjects(t)
	conn := ts.connect(t)

	got := queryStrings(t, conn, `SELECT column_name, ordinal_position, column_default, is_nullable, data_type,
		character_maximum_length FROM information_schema.columns WHERE table_name = 't' ORDER BY ordinal_position`)
	want := []string{
		"id|1|<nil>|NO|integer|<nil>",
		"name|2|<nil>|NO|character varying|10",
		"n|3|5|YES|integer|<nil>",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("information_schema.columns:\n got %q\nwant %q", got, want)
	}

	got = queryStrings(t, conn, `SELECT table_schema, table_name, table_type FROM information_schema.tables ORDER BY 1, 2`)
	// Materialized views are not listed, as in PostgreSQL.
	want = []string{"other|hidden|BASE TABLE", "public|comp|BASE TABLE", "public|nopk|BASE TABLE", "public|t|BASE TABLE", "public|v|VIEW"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("information_schema.tables:\n got %q\nwant %q", got, want)
	}

	// pgx scans catalog columns into Go types by their reported OIDs, and
	// binds a parameter compared with an oid column.
	ctx := context.Background()
	var (
		oid      int32
		relname  string
		relkind  string
		hasIndex bool
		tuples   float32
	)
	if err := conn.QueryRow(ctx, `SELECT c.oid, c.relname, c.relkind, c.relhasindex, c.reltuples
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, "public", "t").Scan(&oid, &relname, &relkind, &hasIndex, &tuples); err != nil {
		t.Fatal(err)
	}
	if relname != "t" || relkind != "r" || !hasIndex || oid < 16384 { // user objects start at FirstNormalObjectId
		t.Errorf("pg_class row for t: oid=%d relname=%q relkind=%q relhasindex=%v", oid, relname, relkind, hasIndex)
	}
	got = queryStrings(t, conn, `SELECT attname, format_type(atttypid, atttypmod), attnotnull, atthasdef
		FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 ORDER BY attnum`, oid)
	want = []string{"id|integer|true|false", "name|character varying(10)|true|false", "n|integer|false|true"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pg_attribute of t:\n got %q\nwant %q", got, want)
	}
	got = queryStrings(t, conn, `SELECT pg_get_constraintdef(oid), pg_get_indexdef(conindid) FROM pg_constraint WHERE conrelid = $1`, oid)
	want = []string{"PRIMARY KEY (id)|CREATE UNIQUE INDEX t_pkey ON public.t USING btree (id)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pg_constraint of t:\n got %q\nwant %q", got, want)
	}

	// Object-identifier casts look names up (pgx's LoadType starts with
	// "select $1::text::regtype::oid").
	var typOID uint32
	if err := conn.QueryRow(ctx, "select $1::text::regtype::oid", "character varying").Scan(&typOID); err != nil || typOID != 1043 {
		t.Errorf("regtype of character varying: %d, %v", typOID, err)
	}
	got = queryStrings(t, conn, `SELECT 't'::regclass = $1, 'public.t'::regclass = $1, '"t"'::regclass = $1,
		'pg_catalog.pg_class'::regclass = (SELECT oid FROM pg_class WHERE relname = 'pg_class'),
		'public'::regnamespace, 'root'::regrole = (SELECT oid FROM pg_roles WHERE rolname = 'root')`, oid)
	if strings.Join(got, ",") != "true|true|true|true|2200|true" {
		t.Errorf("regclass/regnamespace/regrole casts: %q", got)
	}
	for _, q := range []string{`SELECT 'nope'::regclass`, `SELECT 'nope'::regtype`, `SELECT 'a.b.c.d'::regclass`} {
		if _, err := conn.Exec(ctx, q); err == nil {
			t.Errorf("%s: no error", q)
		}
	}

	// Visibility follows search_path.
	got = queryStrings(t, conn, `SELECT c.relname, pg_table_is_visible(c.oid) FROM pg_class c
		WHERE c.relname IN ('t', 'hidden') ORDER BY 1`)
	if strings.Join(got, ",") != "hidden|false,t|true" {
		t.Errorf("pg_table_is_visible before SET: %q", got)
	}
	mustExec(t, conn, "SET search_path = other, public")
	got = queryStrings(t, conn, `SELECT c.relname, pg_table_is_visible(c.oid) FROM pg_class c
		WHERE c.relname IN ('t', 'hidden') ORDER BY 1`)
	if strings.Join(got, ",") != "hidden|true,t|true" {
		t.Errorf("pg_table_is_visible after SET: %q", got)
	}
	got = queryStrings(t, conn, `SELECT current_database(), current_user, current_schema(), pg_get_userbyid(datdba),
		pg_encoding_to_char(encoding) FROM pg_database`)
	if strings.Join(got, ",") != "dev|root|other|root|UTF8" {
		t.Errorf("session functions: %q", got)
	}
	got = queryStrings(t, conn, `SELECT setting FROM pg_settings WHERE name = 'search_path'`)
	if strings.Join(got, ",") != "other, public" {
		t.Errorf("pg_settings search_path: %q", got)
	}

	// The catalogs' arrays are NULLs; real arrays work (tests/slt/arrays.slt).
	got = queryStrings(t, conn, `SELECT array_to_string(relacl, ','), 1 = ANY(relacl::int[]) FROM pg_class WHERE relname = 't'`)
	if strings.Join(got, ",") != "<nil>|<nil>" {
		t.Errorf("NULL arrays: %q", got)
	}
	if got := queryStrings(t, conn, `SELECT 1 = ANY('{1}')`); strings.Join(got, ",") != "true" {
		t.Errorf("ANY over a real array: %q", got)
	}
}

// TestBuiltinCatalogMatchesPostgres checks pg_proc, pg_operator,
// pg_aggregate and pg_type against a real PostgreSQL: every signature
// Runnel lists (generated from internal/expr's registries) must be listed
// the same way by PostgreSQL — same name, kind, argument and result type
// oids — unless it is one of the documented Runnel-only entries below.
// VARIADIC signatures are compared with the array PostgreSQL declares.
func TestBuiltinCatalogMatchesPostgres(t *testing.T) {
	pgConn := wiretest.Connect(t, pgtest.Start(t))
	ts := startTestServer(t, "")
	conn := ts.connect(t)

	set := func(c *pgx.Conn, q string) map[string]bool {
		out := map[string]bool{}
		for _, r := range queryStrings(t, c, q) {
			out[r] = true
		}
		return out
	}
	// Variadic parameters: PostgreSQL declares the array type; Runnel,
	// which has no arrays, the element type.
	const procQ = `SELECT concat_ws('|', proname, prokind, prorettype, %s, proisstrict) FROM pg_proc WHERE pronamespace = 11 AND %s`
	pgProcs := set(pgConn, fmt.Sprintf(procQ, "proargtypes::text", "provariadic = 0 AND NOT proretset"))
	rnProcs := set(conn, fmt.Sprintf(procQ, "proargtypes", "provariadic = 0"))
	// Runnel-only signatures, each with its reason.
	const noArrays = "PostgreSQL's right operand is text[]; Runnel has no arrays and reads the array literal as text"
	const anyComparable = "Runnel's min/max accept every type with an ordering"
	runnelOnly := map[string]string{
		"#>|b|3802|25|3802": noArrays, "#>>|b|3802|25|25": noArrays, "?&|b|3802|25|16": noArrays, "?||b|3802|25|16": noArrays,
		"+|l|0|1186|1186": "Runnel accepts a unary plus on intervals, like on numbers",
		"max|a|16|16|f":   anyComparable, "min|a|16|16|f": anyComparable, "max|a|17|17|f": anyComparable, "min|a|17|17|f": anyComparable,
		"max|16|n|>": anyComparable, "min|16|n|<": anyComparable, "max|17|n|>": anyComparable, "min|17|n|<": anyComparable,
		"max|a|2950|2950|f": anyComparable, "min|a|2950|2950|f": anyComparable, "max|2950|n|>": anyComparable, "min|2950|n|<": anyComparable,
	}
	var missing []string
	for sig := range rnProcs {
		if !pgProcs[sig] && runnelOnly[sig] == "" {
			missing = append(missing, sig)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("pg_proc rows of Runnel that PostgreSQL lists differently or not at all (name|kind|result|args|strict):\n%s",
			strings.Join(missing, "\n"))
	}
	if len(rnProcs) < 200 {
		t.Errorf("Runnel's pg_proc lists %d non-variadic signatures; the registries hold more", len(rnProcs))
	}

	const operQ = `SELECT concat_ws('|', oprname, oprkind, oprleft, oprright, oprresult) FROM pg_operator`
	pgOpers, rnOpers := set(pgConn, operQ), set(conn, operQ)
	missing = nil
	for sig := range rnOpers {
		if !pgOpers[sig] && runnelOnly[sig] == "" {
			missing = append(missing, sig)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("pg_operator rows of Runnel that PostgreSQL lacks (name|kind|left|right|result):\n%s", strings.Join(missing, "\n"))
	}

	// Aggregates: the plain ones, and min/max's sort operators.
	const aggQ = `SELECT concat_ws('|', p.proname, p.proargtypes, a.aggkind,
		coalesce((SELECT o.oprname FROM pg_operator o WHERE o.oid = a.aggsortop), '-')) FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid WHERE p.provariadic = 0`
	pgAggs, rnAggs := set(pgConn, strings.Replace(aggQ, "p.proargtypes", "p.proargtypes::text", 1)), set(conn, aggQ)
	missing = nil
	for sig := range rnAggs {
		if !pgAggs[sig] && runnelOnly[sig] == "" {
			missing = append(missing, sig)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("pg_aggregate rows of Runnel that PostgreSQL lacks (name|args|kind|sortop):\n%s", strings.Join(missing, "\n"))
	}

	const typeQ = `SELECT concat_ws('|', oid, typname, typtype, typlen, typcategory, typelem) FROM pg_type`
	pgTypes, rnTypes := set(pgConn, typeQ), set(conn, typeQ)
	missing = nil
	for sig := range rnTypes {
		if !pgTypes[sig] {
			missing = append(missing, sig)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("pg_type rows of Runnel that PostgreSQL lists differently (oid|name|typtype|len|category|elem):\n%s", strings.Join(missing, "\n"))
	}

	// sqlsmith reads a function's argument types with unnest(proargtypes).
	q := `SELECT unnest(proargtypes) FROM pg_proc WHERE proname = 'split_part'`
	if got, want := queryStrings(t, conn, q), queryStrings(t, pgConn, q); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s: got %q, PostgreSQL %q", q, got, want)
	}
}
