package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/types"
)

// TestInconsistentInputStrict and TestInconsistentInputNonStrict play an
// upstream that contradicts the state of a view's hash aggregation and of
// its hash join (I6) through a running server: the first chunk with an
// insert reaching each executor gets two deletes of that row and the
// insert again, so the second delete is of a row the executor does not
// hold. Strict: the job fails (never the process), the database recovers
// with an error naming the state table, key and row, the writer's INSERT
// fails with 40001 and, retried, lands. Non-strict (ALTER SYSTEM SET
// streaming_strict_consistency = false before the views are created):
// nothing fails, the violations are counted per view in
// rw_catalog.rw_streaming_errors, and the views stay right.
func TestInconsistentInputStrict(t *testing.T)    { testInconsistentInput(t, true) }
func TestInconsistentInputNonStrict(t *testing.T) { testInconsistentInput(t, false) }

func testInconsistentInput(t *testing.T, strict bool) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	if !strict {
		mustExec(t, conn, "ALTER SYSTEM SET streaming_strict_consistency = false")
	}
	mustExec(t, conn, "SET implicit_flush = true")
	mustExec(t, conn, "CREATE TABLE t (k INT PRIMARY KEY, g INT, v INT)")
	mustExec(t, conn, "CREATE TABLE u (g INT PRIMARY KEY, name TEXT)")
	mustExec(t, conn, "INSERT INTO t VALUES (1, 1, 10), (2, 2, 20)")
	mustExec(t, conn, "INSERT INTO u VALUES (1, 'one'), (2, 'two'), (777, 'many')")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW ca AS SELECT g, count(*) AS n, min(v) AS m FROM t GROUP BY g")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW cj AS SELECT t.k, u.name FROM t JOIN u ON t.g = u.g")
	recoveries := len(ts.srv.epochs.Recoveries())

	var mu sync.Mutex
	fired := map[string]bool{}
	remove := exec.SetStatefulInputHook(func(executor string, c *types.Chunk) *types.Chunk {
		kind := ""
		switch {
		case strings.HasPrefix(executor, "HashAgg("):
			kind = "agg"
		case strings.HasPrefix(executor, "HashJoin(") && strings.HasSuffix(executor, " side 0"):
			kind = "join"
		default:
			return c
		}
		mu.Lock()
		defer mu.Unlock()
		for i, op := range c.Ops {
			if op == types.OpInsert && !fired[kind] {
				fired[kind] = true
				out := &types.Chunk{}
				for j := range c.Rows {
					out.Append(c.Ops[j], c.Rows[j])
				}
				r := c.Rows[i]
				out.Append(types.OpDelete, r)
				out.Append(types.OpDelete, r) // never inserted (any more)
				out.Append(types.OpInsert, r)
				return out
			}
		}
		return c
	})
	defer remove()

	var errs []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := conn.Exec(context.Background(), "INSERT INTO t VALUES (100, 777, 5)")
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "40001") && !strings.Contains(err.Error(), "23505") {
			t.Fatalf("INSERT: %v", err)
		}
		errs = append(errs, err.Error())
		if strings.Contains(err.Error(), "23505") || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	if !fired["agg"] || !fired["join"] {
		t.Fatalf("the hook did not fire in both executors: %v", fired)
	}
	mu.Unlock()
	recovered := len(ts.srv.epochs.Recoveries()) - recoveries
	if strict {
		if len(errs) == 0 || recovered == 0 {
			t.Fatalf("strict: errors %v, %d recoveries; want the job failed and recovered", errs, recovered)
		}
		got := queryStrings(t, conn, "SELECT reason || coalesce(error, '') FROM rw_catalog.rw_recovery_history")
		if len(got) == 0 || !strings.Contains(got[0], "(state table") || !strings.Contains(got[0], "never inserted") {
			t.Errorf("strict: recovery errors %v do not name the state table and the row", got)
		}
	} else {
		if len(errs) > 0 || recovered != 0 {
			t.Fatalf("non-strict: errors %v, %d recoveries; want none", errs, recovered)
		}
		got := queryStrings(t, conn, `SELECT job, inconsistencies, last_error LIKE '%(state table%never inserted%'
			FROM rw_catalog.rw_streaming_errors WHERE job IN ('materialized view ca', 'materialized view cj') ORDER BY job`)
		if fmt.Sprint(got) != "[materialized view ca|1|true materialized view cj|1|true]" {
			t.Errorf("non-strict: rw_streaming_errors = %v", got)
		}
	}
	// The server is up and both views are right, and stay maintained.
	mustExec(t, conn, "INSERT INTO t VALUES (101, 777, 3)")
	mustExec(t, conn, "DELETE FROM t WHERE k = 1")
	for _, q := range []string{
		"SELECT g, count(*), min(v) FROM t GROUP BY g ORDER BY g|SELECT * FROM ca ORDER BY g",
		"SELECT t.k, u.name FROM t JOIN u ON t.g = u.g ORDER BY k|SELECT * FROM cj ORDER BY k",
	} {
		want, view, _ := strings.Cut(q, "|")
		if w, g := queryStrings(t, conn, want), queryStrings(t, conn, view); fmt.Sprint(w) != fmt.Sprint(g) {
			t.Errorf("%s = %v; want %v", view, g, w)
		}
	}
}
