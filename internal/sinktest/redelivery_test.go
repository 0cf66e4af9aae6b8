package sinktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestRedeliveryIsSkipped pins the exactly-once mechanism: the server
// stops right after the target committed an epoch and before the log's
// rows of that epoch were released for truncation (a test hook holds the
// worker there), so the restarted server finds them in the log again and
// reads them again; the target's progress row, written in the same
// transaction as the rows, makes it skip them. The target has no key: a
// second delivery would show as duplicate rows.
func TestRedeliveryIsSkipped(t *testing.T) {
	target, pg := targetDB(t)
	mustExec(t, pg, "CREATE TABLE ev (id int, v int)")

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev (id int, v int) APPEND ONLY")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK ev_sink FROM ev WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'ev', type = 'append-only')`, jdbcURL(t, target)))

	held := holdAfterDelivery(t, "ev_sink")["ev_sink"]
	mustExec(t, rw, "INSERT INTO ev SELECT i, i FROM generate_series(1, 100) g(i)")
	mustExec(t, rw, "FLUSH")
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the sink delivered nothing")
	}
	if got := rowsOf(t, pg, "SELECT count(*) FROM ev"); got[0] != "100" {
		t.Fatalf("target has %s rows after the held delivery, want 100", got[0])
	}
	// Unhooked before the restart: the held workers stay blocked in the
	// hook until the old server stops, and the new server's workers,
	// which deliver the held epoch again at once, must not be held too.
	sink.SetDeliveredHook(nil)
	srv = srv.Restart(t)
	rw = srv.Connect(t)
	mustExec(t, rw, "INSERT INTO ev SELECT i, i FROM generate_series(101, 150) g(i)")
	waitEqual(t, rw, pg, "SELECT id, v FROM ev", "SELECT id, v FROM ev", 20*time.Second)
	if dups := rowsOf(t, pg, "SELECT id, count(*) FROM ev GROUP BY id HAVING count(*) > 1"); len(dups) > 0 {
		t.Fatalf("delivered twice: %v", head(dups))
	}
}

// holdAfterDelivery installs the delivered hook for the named sinks: each
// one's worker stops right after its target committed an epoch, as a crash
// there would, until the server stops; the epoch is sent on the sink's
// channel. The hook is removed when the test ends.
func holdAfterDelivery(t *testing.T, names ...string) map[string]chan uint64 {
	held := map[string]chan uint64{}
	for _, n := range names {
		held[n] = make(chan uint64, 1)
	}
	sink.SetDeliveredHook(func(ctx context.Context, name string, epoch uint64) {
		ch := held[name]
		if ch == nil {
			return
		}
		select {
		case ch <- epoch:
		default:
		}
		<-ctx.Done() // "crash" here: until the server stops
	})
	t.Cleanup(func() { sink.SetDeliveredHook(nil) })
	return held
}
