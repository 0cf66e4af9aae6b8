package server

import (
	"strings"
	"testing"
)

// A subquery in RETURNING is evaluated (it failed with XX000 "subquery
// evaluated without a runner"; found by sqlsmith) and sees the session's
// earlier writes, which are not flushed yet.
func TestReturningSubquery(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id int PRIMARY KEY, v int)")
	mustExec(t, conn, "CREATE TABLE other (k int)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)")
	mustExec(t, conn, "INSERT INTO other VALUES (7), (8)")
	for _, c := range []struct{ q, want string }{
		{"INSERT INTO t VALUES (4, 40) RETURNING id, (SELECT count(*) FROM other)", "4|2"},
		{"UPDATE t SET v = v + 1 WHERE id = 1 RETURNING v, (SELECT max(k) FROM other WHERE k < v)", "11|8"},
		{"DELETE FROM t WHERE id = 2 RETURNING CASE WHEN v > (SELECT min(k) FROM other) THEN 'big' END", "big"},
		{"DELETE FROM t WHERE id = 3 RETURNING EXISTS (SELECT 1 FROM t WHERE id = 4)", "true"},
	} {
		if got := strings.Join(queryStrings(t, conn, c.q), ","); got != c.want {
			t.Errorf("%s: got %q, want %q", c.q, got, c.want)
		}
	}
	mustExec(t, conn, "FLUSH")
	if got := strings.Join(queryStrings(t, conn, "SELECT id, v FROM t ORDER BY id"), ","); got != "1|11,4|40" {
		t.Errorf("t after the statements: %q", got)
	}
}
