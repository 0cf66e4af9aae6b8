package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Temporal filters (now() compared with a column in a view's WHERE): rows
// leave an expiring view and enter a delaying one as epochs pass, without
// any write; their state holds only the rows that can still change; a
// view over the filter (an aggregate) follows the retractions; all of it
// survives a restart. now() anywhere else in a view is refused with 0A000
// naming the supported form.
func TestTemporalFilterView(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE ev (id INT PRIMARY KEY, at TIMESTAMPTZ, v INT)")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW recent AS SELECT id, v FROM ev WHERE at > now() - INTERVAL '2 seconds' AND v > 0")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW settled AS SELECT id FROM ev WHERE at + INTERVAL '2 seconds' <= now()")
	mustExec(t, conn, "CREATE MATERIALIZED VIEW recent_count AS SELECT count(*) AS n, sum(v) AS s FROM ev WHERE now() - INTERVAL '2 seconds' < at")
	mustExec(t, conn, "INSERT INTO ev VALUES (1, now(), 10), (2, now() - INTERVAL '1 hour', 20), (3, now() + INTERVAL '1 hour', 30), (4, NULL, 40), (5, now(), 0)")
	mustExec(t, conn, "FLUSH")
	check := func(view, sql, want string) {
		t.Helper()
		if got := strings.Join(queryStrings(t, conn, sql), " "); got != want {
			t.Fatalf("%s: got %q, want %q", view, got, want)
		}
	}
	check("recent", "SELECT id FROM recent ORDER BY id", "1 3")
	check("settled", "SELECT id FROM settled ORDER BY id", "2")
	check("recent_count", "SELECT n, s FROM recent_count", "3|40")
	state := func(view string) int { return aggStateRows(t, ts.srv, view) }
	if n := state("recent"); n != 2 {
		t.Fatalf("recent's temporal filter keeps %d rows; want 2 (the live rows 1 and 3)", n)
	}
	if n := state("settled"); n != 3 {
		t.Fatalf("settled's temporal filter keeps %d rows; want 3 (1, 3 and 5 wait)", n)
	}

	// Time passes: row 1 expires from recent (and the count), rows 1 and
	// 5 settle; nothing was written.
	// (Epochs carry wall-clock time: this waits the filters' 2 seconds.)
	for deadline := time.Now().Add(20 * time.Second); ; {
		mustExec(t, conn, "FLUSH")
		if strings.Join(queryStrings(t, conn, "SELECT id FROM settled ORDER BY id"), " ") == "1 2 5" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("settled: rows 1 and 5 did not settle: %v", queryStrings(t, conn, "SELECT id FROM settled ORDER BY id"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	check("recent", "SELECT id FROM recent ORDER BY id", "3")
	check("recent_count", "SELECT n, s FROM recent_count", "1|30")
	if n := state("recent"); n != 1 {
		t.Fatalf("recent's temporal filter keeps %d rows after expiry; want 1 (expired rows leave the state)", n)
	}
	if n := state("settled"); n != 1 {
		t.Fatalf("settled's temporal filter keeps %d rows; want 1 (row 3 waits)", n)
	}

	// Restart: the views and their state come back; changes still flow.
	conn.Close(context.Background())
	ts.stop()
	ts = startTestServer(t, ts.dataDir)
	conn = ts.connect(t)
	check("recent", "SELECT id FROM recent ORDER BY id", "3")
	mustExec(t, conn, "DELETE FROM ev WHERE id = 3")
	mustExec(t, conn, "UPDATE ev SET at = now() WHERE id = 2")
	mustExec(t, conn, "FLUSH")
	check("recent", "SELECT id FROM recent ORDER BY id", "2")
	check("settled", "SELECT id FROM settled ORDER BY id", "1 5")
	check("recent_count", "SELECT n, s FROM recent_count", "1|20")
	if n := state("settled"); n != 1 {
		t.Fatalf("settled's temporal filter keeps %d rows; want 1 (row 2 waits again)", n)
	}

	for _, bad := range []string{
		"CREATE MATERIALIZED VIEW bad AS SELECT id, now() FROM ev",
		"CREATE MATERIALIZED VIEW bad AS SELECT id FROM ev WHERE at > clock_timestamp()",
		"CREATE MATERIALIZED VIEW bad AS SELECT id FROM ev WHERE at > now() OR v > 1",
		"CREATE MATERIALIZED VIEW bad AS SELECT id FROM ev WHERE at - now() > INTERVAL '1 hour'",
		"CREATE MATERIALIZED VIEW bad AS SELECT id FROM ev WHERE v > extract(second FROM now())", // a bound that moves back
	} {
		err := execErr(conn, bad)
		if err == nil || !strings.Contains(err.Error(), "0A000") || !strings.Contains(err.Error(), "temporal filter") {
			t.Fatalf("%s: got %v, want 0A000 naming the temporal filter form", bad, err)
		}
	}
}

func execErr(conn *pgx.Conn, sql string) error {
	_, err := conn.Exec(context.Background(), sql)
	if err != nil {
		return fmt.Errorf("%w (SQLSTATE %s)", err, sqlState(err))
	}
	return nil
}
