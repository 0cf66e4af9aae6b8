package difftest

import (
	"os"
	"strings"
	"testing"
)

// Confirmed mismatches between Runnel and PostgreSQL, minimised from the
// randomized differentials. A test for an open bug is skipped with
// knownBug("…") until the owning package fixes it (RUNNEL_DIFF_RUN_SKIPPED=1
// runs it anyway: it must fail while the bug exists); fixed ones run as
// regression tests.

// knownBug skips t unless RUNNEL_DIFF_RUN_SKIPPED is set.
func knownBug(t *testing.T, desc string) {
	t.Helper()
	if os.Getenv("RUNNEL_DIFF_RUN_SKIPPED") == "" {
		t.Skip("bug: " + desc)
	}
	t.Logf("known bug (running anyway): %s", desc)
}

// checkRepro runs setup on both systems (MATERIALIZED VIEW statements go to
// Runnel as written and to PostgreSQL as plain views), flushes, and
// compares each query's answer as a multiset.
func checkRepro(t *testing.T, setup []string, queries ...string) {
	t.Helper()
	p := newPair(t)
	for _, s := range setup {
		if strings.EqualFold(s, "FLUSH") {
			p.flush()
			continue
		}
		if strings.HasPrefix(s, "CREATE MATERIALIZED VIEW ") {
			p.trace = append(p.trace, s+";")
			if err := execOn(p.rw, s); err != nil {
				t.Fatalf("runnel: %s: %v", s, err)
			}
			pgSQL := "CREATE VIEW " + strings.TrimPrefix(s, "CREATE MATERIALIZED VIEW ")
			if err := execOn(p.pg, pgSQL); err != nil {
				t.Fatalf("postgres: %s: %v", pgSQL, err)
			}
			continue
		}
		p.mustBoth(s)
	}
	p.flush()
	for _, q := range queries {
		want := query(p.pg, q, canon{})
		got := query(p.rw, q, canon{})
		if want.code() != got.code() {
			t.Fatalf("%s: postgres error %v; runnel error %v", q, want.err, got.err)
		}
		if ok, diff := sameMultiset(want.rows, got.rows); !ok {
			t.Errorf("%s:\n postgres: %q\n runnel:   %q\n%s", q, want.rows, got.rows, diff)
		}
	}
}

// Found by TestViewDifferential: a materialized view joining an INT column
// with a BIGINT column fails to build; PostgreSQL (and Runnel's batch
// path) compare the keys as bigint.
func TestBugJoinKeyIntBigint(t *testing.T) {
	checkRepro(t, []string{
		"CREATE TABLE a (id INT PRIMARY KEY, k INT)",
		"CREATE TABLE b (id INT PRIMARY KEY, k BIGINT)",
		"INSERT INTO a VALUES (1, 1), (2, 2)",
		"INSERT INTO b VALUES (10, 1), (20, 3)",
		"CREATE MATERIALIZED VIEW v AS SELECT a.id AS aid, b.id AS bid FROM a JOIN b ON a.k = b.k",
	}, "SELECT * FROM v")
}

// Found by TestViewDifferential (seed 1796218883918958945, shrunk by
// TestMinimize from 59 to 52 statements; smaller subsets stopped
// reproducing): with a second join view v1 over the same two tables, view
// v0 (a LEFT JOIN feeding a FULL JOIN) keeps rows of t1 that were deleted
// (c2 = 6, 7, 12, 14 joined to t0's k = 3 rows) and lacks the
// NULL-extended rows PostgreSQL has. Without v1 the same statements give
// the right answer. See testdata/two_join_views.sql.
func TestBugJoinViewStaleWithSecondJoinView(t *testing.T) {
	data, err := os.ReadFile("testdata/two_join_views.sql")
	if err != nil {
		t.Fatal(err)
	}
	var setup []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		setup = append(setup, strings.TrimSpace(line))
	}
	checkRepro(t, setup, "SELECT * FROM v0", "SELECT * FROM v1")
}

// Found by TestViewDifferential: PostgreSQL refuses a non-integer constant
// as a GROUP BY item (42601); Runnel accepts it, in queries and views.
func TestBugGroupByNonIntegerConstant(t *testing.T) {
	p := newPair(t)
	p.mustBoth("CREATE TABLE t (id INT PRIMARY KEY, g INT)")
	p.mustBoth("INSERT INTO t VALUES (1, 1), (2, 1)")
	p.flush()
	for _, q := range []string{
		"SELECT 1.76 AS c, count(*) FROM t GROUP BY 1.76",
		"SELECT g, count(*) FROM t GROUP BY 'x', g",
	} {
		want, got := query(p.pg, q, canon{}), query(p.rw, q, canon{})
		if want.code() != got.code() {
			t.Errorf("%s:\n postgres: %v\n runnel:   %v %q", q, want.err, got.err, got.rows)
		}
	}
	want := execOn(p.pg, "CREATE VIEW v AS SELECT 1.76 AS c, count(*) FROM t GROUP BY 1.76")
	got := execOn(p.rw, "CREATE MATERIALIZED VIEW v AS SELECT 1.76 AS c, count(*) FROM t GROUP BY 1.76")
	if sqlstate(want) != sqlstate(got) {
		t.Errorf("CREATE [MATERIALIZED] VIEW … GROUP BY 1.76:\n postgres: %v\n runnel:   %v", want, got)
	}
}

// Found by TestViewDifferential (seed 1796220910036225799): a self FULL
// JOIN view over one table fails its Materialize actor with "inconsistent
// stream … insert of a key that is already in the view" after a few
// INSERT/UPDATE/DELETE statements, which triggers a recovery that rolls
// back the session's writes (FLUSH returns 40001). See
// testdata/self_full_join.sql (one table, one view, 12 DML statements).
func TestBugSelfFullJoinDuplicateKey(t *testing.T) {
	data, err := os.ReadFile("testdata/self_full_join.sql")
	if err != nil {
		t.Fatal(err)
	}
	var setup []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		setup = append(setup, strings.TrimSpace(line))
	}
	checkRepro(t, setup, "SELECT * FROM v1")
}

// Found by TestQueryDifferential (seed 1796255091037016108, minimised by
// hand): after a FLUSH, DELETE FROM t1 removes a row whose c1 is NULL; the
// next statement, a DELETE whose WHERE is NOT IN (SELECT c1 FROM t1),
// read t1 from the last committed snapshot and so still saw that NULL (NOT
// IN yields NULL, nothing was deleted), where PostgreSQL sees the empty t1
// and deletes every row. A DML statement that reads another relation now
// waits for its session's pending writes first. The INSERT ... SELECT and
// UPDATE ... FROM variants read the other table the same way.
func TestDMLSeesSessionsEarlierWrites(t *testing.T) {
	checkRepro(t, []string{
		"CREATE TABLE t0 (id BIGINT PRIMARY KEY, k BIGINT)",
		"CREATE TABLE t1 (id INT PRIMARY KEY, c1 INT)",
		"CREATE TABLE t2 (id INT PRIMARY KEY, c1 INT)",
		"INSERT INTO t0 VALUES (1, 2), (2, 3)",
		"INSERT INTO t1 VALUES (1, NULL)",
		"FLUSH",
		"DELETE FROM t1",
		"DELETE FROM t0 WHERE 5 NOT IN (SELECT c1 FROM t1)",
		"INSERT INTO t1 VALUES (7, 70), (8, 80)",
		"INSERT INTO t2 SELECT id, c1 + 1 FROM t1",
		"UPDATE t1 SET c1 = t2.c1 FROM t2 WHERE t1.id = t2.id AND t2.id = 7",
		"INSERT INTO t0 SELECT id, c1 FROM t1 WHERE id = 7",
	}, "SELECT count(*) FROM t0", "SELECT * FROM t0", "SELECT * FROM t1", "SELECT * FROM t2")
}

// Found by TestViewDifferential (seed 1796273048054303955): an outer join
// whose NULL-padded side has no stream key columns (a one-row global
// aggregate) or only NULL ones (the NULL group of a GROUP BY) produced a
// padded row and a real row with the same all-NULL stream key, and the
// view's Materialize failed with "insert of a key that is already in the
// view", which triggered a recovery. Padded sides now carry a presence
// column in the key.
func TestOuterJoinPaddedRowsKeepDistinctKeys(t *testing.T) {
	checkRepro(t, []string{
		"CREATE TABLE t1 (id INT PRIMARY KEY, c1 INT)",
		"CREATE TABLE a (id INT PRIMARY KEY, g INT)",
		"CREATE TABLE b (id INT PRIMARY KEY, h INT)",
		"CREATE MATERIALIZED VIEW v0 AS SELECT min(c1) AS c1, count(*) AS n FROM t1",
		"CREATE MATERIALIZED VIEW v1 AS SELECT b.c1 AS c0, c.n AS c1 FROM v0 a RIGHT JOIN v0 b ON a.c1 = b.c1 FULL JOIN v0 c ON a.c1 = c.c1",
		"CREATE MATERIALIZED VIEW va AS SELECT g, count(*) AS n FROM a GROUP BY g",
		"CREATE MATERIALIZED VIEW vb AS SELECT h, count(*) AS m FROM b GROUP BY h",
		"CREATE MATERIALIZED VIEW vj AS SELECT va.g, va.n, vb.h, vb.m FROM va FULL JOIN vb ON va.g = vb.h",
		"CREATE MATERIALIZED VIEW vl AS SELECT va.g, va.n, vb.m FROM va LEFT JOIN vb ON va.g = vb.h",
		"FLUSH",
		"INSERT INTO a VALUES (1, NULL), (2, 1), (3, 2)",
		"INSERT INTO b VALUES (1, NULL), (2, 2), (3, 3)",
		"FLUSH",
		"INSERT INTO t1 VALUES (1, 5)",
		"UPDATE a SET g = 3 WHERE id = 2",
		"DELETE FROM b WHERE id = 1",
		"FLUSH",
		"UPDATE t1 SET c1 = NULL",
		"INSERT INTO b VALUES (4, NULL)",
	}, "SELECT * FROM v1", "SELECT * FROM vj", "SELECT * FROM vl")
}
