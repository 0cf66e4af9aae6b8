package server

import (
	"fmt"
	"testing"
)

// A lookup by the whole primary key is a point read (state.Table.Get, not
// an iterator): inside an UPDATE/DELETE it sees the table's uncommitted
// writes of earlier statements (updated, deleted and inserted rows of the
// current epoch), and a SELECT sees the committed epoch, tombstones
// included.
func TestPointReadsSeeLatestVersion(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO t SELECT i, i FROM generate_series(1, 10) i")
	mustExec(t, conn, "FLUSH")
	for _, c := range []struct {
		q    string
		args []any
		want string
	}{
		{"UPDATE t SET v = 100 WHERE id = $1 RETURNING v", []any{int64(3)}, "[100]"},
		{"UPDATE t SET v = v + 1 WHERE id = $1 RETURNING v", []any{int64(3)}, "[101]"},
		{"DELETE FROM t WHERE id = $1 RETURNING v", []any{int64(4)}, "[4]"},
		{"UPDATE t SET v = 1 WHERE id = $1 RETURNING v", []any{int64(4)}, "[]"},
		{"INSERT INTO t VALUES ($1, 5) RETURNING v", []any{int64(11)}, "[5]"},
		{"UPDATE t SET v = v * 2 WHERE id = $1 RETURNING v", []any{int64(11)}, "[10]"},
		{"UPDATE t SET v = 0 WHERE id = $1 RETURNING v", []any{int64(12)}, "[]"},
		{"DELETE FROM t WHERE id = $1 RETURNING v", []any{int64(12)}, "[]"},
	} {
		if got := queryStrings(t, conn, c.q, c.args...); fmt.Sprint(got) != c.want {
			t.Errorf("%s %v = %v; want %s", c.q, c.args, got, c.want)
		}
	}
	mustExec(t, conn, "FLUSH")
	for id, want := range map[int64]string{3: "[101]", 4: "[]", 11: "[10]", 12: "[]", 5: "[5]"} {
		if got := queryStrings(t, conn, "SELECT v FROM t WHERE id = $1", id); fmt.Sprint(got) != want {
			t.Errorf("SELECT v FROM t WHERE id = %d: %v; want %s", id, got, want)
		}
	}
}
