package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/wiretest"
)

// TestCDCUpstreamColumnAdded: a CDC table may declare a non-key column the
// upstream table does not have yet (NULL until then, the snapshot reads it
// as NULL); once ALTER TABLE ... ADD COLUMN adds it upstream its values
// flow in. A column added upstream that the Runnel table does not declare
// is reported in rw_catalog.rw_source_stats naming the table and the
// column, and the other columns keep streaming. A key column missing
// upstream is refused (42703).
func TestCDCUpstreamColumnAdded(t *testing.T) {
	up := newCDCUpstream(t)
	up.exec(t, "CREATE TABLE t (id int PRIMARY KEY, k int)")
	up.exec(t, "INSERT INTO t VALUES (1, 10), (2, 20)")
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	_, err := conn.Exec(context.Background(), "CREATE TABLE bad (id int, extra int, PRIMARY KEY (extra)) WITH ("+
		up.withOptions(", table.name = 't', slot.name = 'bad_slot'")+")")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42703" || !strings.Contains(pe.Message, `"extra"`) {
		t.Fatalf("key column missing upstream: %v; want 42703 naming it", err)
	}
	mustExec(t, conn, "CREATE TABLE t (id int, k int, extra int, PRIMARY KEY (id)) WITH ("+
		up.withOptions(", table.name = 't', slot.name = 'addcol_slot'")+")")
	waitSameAs(t, conn, up, "SELECT id, k, extra FROM t ORDER BY id", "SELECT id, k, NULL::int FROM t ORDER BY id", "after the snapshot")
	up.exec(t, "INSERT INTO t VALUES (3, 30)")
	waitSameAs(t, conn, up, "SELECT id, k, extra FROM t ORDER BY id", "SELECT id, k, NULL::int FROM t ORDER BY id", "before ADD COLUMN")
	// A column missing upstream (a typo, or one to be added) is shown once
	// changes stream (pgoutput describes the table then).
	for deadline := time.Now().Add(20 * time.Second); ; {
		notes := strings.Join(wiretest.QueryText(t, conn, "SELECT notices FROM rw_catalog.rw_source_stats WHERE name = 't'"), "")
		if strings.Contains(notes, `column "extra" is not in upstream table public.t; the Runnel table t stores NULL for it until it is added there`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rw_source_stats notices %q; want one naming column extra missing upstream", notes)
		}
		time.Sleep(50 * time.Millisecond)
	}

	up.exec(t, "ALTER TABLE t ADD COLUMN extra int")
	up.exec(t, "ALTER TABLE t ADD COLUMN other text")
	up.exec(t, "INSERT INTO t VALUES (4, 40, 42, 'x')")
	up.exec(t, "UPDATE t SET extra = 7, other = 'y' WHERE id = 1")
	up.exec(t, "UPDATE t SET k = 21 WHERE id = 2")
	waitSame(t, conn, up, "SELECT id, k, extra FROM t ORDER BY id", "after ADD COLUMN")

	deadline := time.Now().Add(20 * time.Second)
	for {
		notes := strings.Join(wiretest.QueryText(t, conn, "SELECT notices FROM rw_catalog.rw_source_stats WHERE name = 't'"), "")
		if strings.Contains(notes, `column "other" was added to upstream table public.t; the Runnel table t does not store it`) {
			if strings.Contains(notes, `"extra" was added`) {
				t.Fatalf("notices %q report the applied column extra", notes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rw_source_stats notices %q; want one naming column other and table t", notes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
