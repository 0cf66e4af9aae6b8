package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/batch"
)

// memoryShapes are the batch operators that keep their input, each in a
// query that keeps about 100,000 rows: under query_memory_limit = 1MB each
// fails with 53200 naming the limit, under 512MB each succeeds. Before
// the accounting, the same shapes over a few hundred million rows grew the
// heap until the kernel killed the server.
var memoryShapes = []struct{ name, sql, want string }{
	{"sort", "SELECT x FROM generate_series(1,100000) x ORDER BY x DESC", "100000 rows"},
	{"distinct", "SELECT DISTINCT x FROM generate_series(1,100000) x", "100000 rows"},
	{"hash aggregate", "SELECT count(*) FROM (SELECT x % 50000, count(*) FROM generate_series(1,100000) x GROUP BY 1) s", "[50000]"},
	{"array_agg", "SELECT cardinality(array_agg(x)) FROM generate_series(1,100000) x", "[100000]"},
	{"string_agg", "SELECT length(string_agg(x::text, ',')) FROM generate_series(1,100000) x", "[588894]"},
	{"jsonb_agg", "SELECT jsonb_array_length(jsonb_agg(x)) FROM generate_series(1,100000) x", "[100000]"},
	{"array_agg ORDER BY", "SELECT cardinality(array_agg(x ORDER BY x DESC)) FROM generate_series(1,100000) x", "[100000]"},
	{"count DISTINCT", "SELECT count(DISTINCT x) FROM generate_series(1,100000) x", "[100000]"},
	{"hash join", "SELECT count(*) FROM generate_series(1,100000) a JOIN generate_series(1,100000) b ON a = b", "[100000]"},
	{"cross join", "SELECT count(*) FROM generate_series(1,3) a, generate_series(1,100000) b", "[300000]"},
	{"window", "SELECT count(*) FROM (SELECT row_number() OVER (PARTITION BY x % 7 ORDER BY x) FROM generate_series(1,100000) x) s", "[100000]"},
	{"union", "SELECT count(*) FROM (SELECT x FROM generate_series(1,100000) x UNION SELECT x FROM generate_series(1,100000) x) s", "[100000]"},
	{"except", "SELECT count(*) FROM (SELECT x FROM generate_series(1,100000) x EXCEPT SELECT x FROM generate_series(1,50000) x) s", "[50000]"},
	{"top-N", "SELECT x FROM generate_series(1,100000) x ORDER BY x LIMIT 90000", "90000 rows"},
	{"recursive CTE", "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r WHERE n < 100000) SELECT count(*) FROM r", "[100000]"},
	{"IN subquery", "SELECT count(*) FROM generate_series(1,10) a WHERE a IN (SELECT x FROM generate_series(1,100000) x)", "[10]"},
	{"insert select", "INSERT INTO memt SELECT x FROM generate_series(1,100000) x", ""},
}

func TestQueryMemoryLimit(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	ctx := context.Background()
	mustExec(t, conn, "CREATE TABLE memt (x INT)")

	if got := queryStrings(t, conn, "SHOW query_memory_limit"); fmt.Sprint(got) != "["+batch.FormatMemory(batch.DefaultQueryMemoryLimit())+"]" {
		t.Fatalf("default query_memory_limit = %v", got)
	}
	for v, want := range map[string]string{"'1MB'": "1MB", "'2GB'": "2GB", "65536": "64MB", "'1536kB'": "1536kB", "0": "0"} {
		mustExec(t, conn, "SET query_memory_limit = "+v)
		if got := queryStrings(t, conn, "SHOW query_memory_limit"); fmt.Sprint(got) != "["+want+"]" {
			t.Fatalf("SET query_memory_limit = %s: SHOW gives %v, want %s", v, got, want)
		}
	}
	for _, bad := range []string{"'abc'", "'-1'", "'5 parsecs'", "'1kB'", "'99999999999TB'"} {
		if pe := pgErr(t, conn, "SET query_memory_limit = "+bad); pe == nil || pe.Code != "22023" {
			t.Fatalf("SET query_memory_limit = %s: %v, want 22023", bad, pe)
		}
	}

	for _, sh := range memoryShapes {
		mustExec(t, conn, "SET query_memory_limit = '1MB'")
		pe := pgErr(t, conn, sh.sql)
		if pe == nil || pe.Code != "53200" || !strings.Contains(pe.Message, "query_memory_limit (1MB)") {
			t.Fatalf("%s under 1MB: %v; want 53200 naming query_memory_limit", sh.name, pe)
		}
		t.Logf("%s: %s", sh.name, pe.Message)
		if in := batch.ProcessMemoryInUse(); in != 0 {
			t.Fatalf("%s: %d bytes still held after the failed statement", sh.name, in)
		}
		mustExec(t, conn, "SET query_memory_limit = '512MB'")
		if sh.want == "" {
			mustExec(t, conn, sh.sql)
			continue
		}
		got := queryStrings(t, conn, sh.sql)
		s := fmt.Sprint(got)
		if strings.HasSuffix(sh.want, " rows") {
			s = fmt.Sprintf("%d rows", len(got))
		}
		if s != sh.want {
			t.Fatalf("%s under 512MB: %s, want %s", sh.name, s, sh.want)
		}
	}
	if in := batch.ProcessMemoryInUse(); in != 0 {
		t.Fatalf("%d bytes still held when no statement runs", in)
	}
	// The multi-statement and prepared paths carry the limit too.
	mustExec(t, conn, "SET query_memory_limit = '1MB'")
	if _, err := conn.Exec(ctx, memoryShapes[0].sql+" LIMIT $1", 100000); err == nil || !strings.Contains(err.Error(), "53200") {
		t.Fatalf("prepared sort under 1MB: %v", err)
	}
	if got := queryStrings(t, conn, "SELECT 1"); fmt.Sprint(got) != "[1]" {
		t.Fatalf("session after the failures: %v", got)
	}
}

// The process-wide cap bounds statements of different sessions together:
// while one session's sort holds its rows (its result is being read), a
// second that needs as much fails with 53200 naming the server's limit,
// and succeeds once the first is done.
func TestProcessMemoryLimitAcrossSessions(t *testing.T) {
	old := batch.ProcessMemoryLimit()
	batch.SetProcessMemoryLimit(128 << 20)
	defer batch.SetProcessMemoryLimit(old)
	ts := startTestServer(t, "")
	a, b := ts.connect(t), ts.connect(t)
	ctx := context.Background()
	// About 75 MB charged; 50 MB of result, more than the socket buffers
	// hold, so the statement stays open until A reads on.
	const q = "SELECT x, repeat('a', 500) FROM generate_series(1,100000) x ORDER BY x"
	for _, c := range []string{"SET query_memory_limit = 0"} {
		mustExec(t, a, c)
		mustExec(t, b, c)
	}
	rows, err := a.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatalf("A: no first row: %v", rows.Err())
	}
	// The sort has read all its input before its first row: it holds it.
	if in := batch.ProcessMemoryInUse(); in < 60<<20 {
		t.Fatalf("A's sort holds %d bytes, want about 75 MB", in)
	}
	pe := pgErr(t, b, q)
	if pe == nil || pe.Code != "53200" || !strings.Contains(pe.Message, "batch memory limit (128MB)") {
		t.Fatalf("B while A holds its sort: %v; want 53200 naming the batch memory limit", pe)
	}
	t.Logf("B: %s", pe.Message)
	n := 1
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 100000 {
		t.Fatalf("A read %d rows: %v", n, rows.Err())
	}
	rows.Close()
	if got := queryStrings(t, b, "SELECT count(*) FROM ("+q+") s"); fmt.Sprint(got) != "[100000]" {
		t.Fatalf("B after A: %v", got)
	}
	if in := batch.ProcessMemoryInUse(); in != 0 {
		t.Fatalf("%d bytes still held when no statement runs", in)
	}
}
