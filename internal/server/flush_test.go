package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/storage"
)

// I7: a FLUSH that times out keeps the session's pending epochs. Here the
// epoch commit is held, FLUSH times out (57014), then the commit fails and
// the recovery rolls the write back: the next FLUSH must say so (40001),
// not acknowledge a write that is gone.
func TestFlushTimeoutKeepsPendingWrites(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY)")
	mustExec(t, conn, "FLUSH")
	var armed atomic.Bool
	blocked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	remove := ts.srv.store.SetMetaWriteHook(func(op string, after bool) error {
		if op != "commit-delta" || after || !armed.Load() {
			return nil
		}
		once.Do(func() { close(blocked) })
		<-release
		return errors.New("injected: the metastore refused the commit")
	})
	t.Cleanup(remove)
	armed.Store(true)
	mustExec(t, conn, "INSERT INTO t VALUES (1)")
	<-blocked
	mustExec(t, conn, "SET statement_timeout = 300")
	_, err := conn.Exec(context.Background(), "FLUSH")
	if sqlState(err) != "57014" {
		t.Fatalf("FLUSH while the commit is held: %v; want 57014", err)
	}
	armed.Store(false)
	close(release)
	mustExec(t, conn, "SET statement_timeout = 0")
	_, err = conn.Exec(context.Background(), "FLUSH")
	if sqlState(err) != "40001" {
		t.Fatalf("FLUSH after the write was rolled back: %v; want 40001", err)
	}
	if got := queryStrings(t, conn, "SELECT count(*) FROM t"); fmt.Sprint(got) != "[0]" {
		t.Fatalf("rows after the rollback = %v", got)
	}
	mustExec(t, conn, "INSERT INTO t VALUES (1)")
	mustExec(t, conn, "FLUSH")
}

// I2, I7: an epoch commit whose reply is lost (it landed) and whose
// re-read fails too has an unknown outcome. Recovery must settle it
// before it picks the epoch to roll back to: reporting the write lost
// (40001) while it committed makes clients write it twice.
func TestAmbiguousCommitIsNotReportedLost(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY)")
	mustExec(t, conn, "FLUSH")
	var (
		gate, rereadDown atomic.Bool
		target           atomic.Uint64 // the epoch whose commit is made ambiguous
		rereadFailures   atomic.Int32
	)
	blocked, open := make(chan struct{}), make(chan struct{})
	var once sync.Once
	remove := ts.srv.store.SetMetaWriteHook(func(op string, after bool) error {
		switch {
		case op == "commit-delta" && !after && gate.Load():
			// Hold a metastore write in flight: no commit completes until
			// the INSERT is applied and the target known.
			once.Do(func() { close(blocked) })
			<-open
		case op == "commit-delta" && after && target.Load() != 0:
			// The first commit that covers the INSERT's epoch (compaction
			// commits leave the committed epoch as it was).
			desc, err := storage.DescribeVersion(context.Background(), ts.srv.metaDB)
			var committed uint64
			if err == nil {
				_, err = fmt.Sscanf(desc[strings.Index(desc, "committed epoch "):], "committed epoch %d", &committed)
			}
			if err != nil {
				t.Errorf("read the version in the hook: %v", err)
				return nil
			}
			if committed >= target.Load() {
				target.Store(0)
				rereadDown.Store(true)
				return errors.New("injected: the reply to COMMIT was lost")
			}
		case op == "reread-version" && rereadDown.Load():
			rereadFailures.Add(1)
			return errors.New("injected: the metastore is unreachable")
		}
		return nil
	})
	t.Cleanup(remove)
	gate.Store(true)
	<-blocked
	mustExec(t, conn, "INSERT INTO t VALUES (1)")
	// No commit completed since the gate closed, so the INSERT's epoch is
	// uncommitted and at most the epoch being written now.
	target.Store(ts.srv.epochs.CurrentEpoch())
	gate.Store(false)
	flush := execIn(conn, "FLUSH")
	close(open)
	deadline := time.Now().Add(30 * time.Second)
	for rereadFailures.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the ambiguous commit was re-read %d times; want 3", rereadFailures.Load())
		}
		time.Sleep(10 * time.Millisecond) // polling a counter, not ordering a race
	}
	rereadDown.Store(false)
	if err := <-flush; err != nil {
		t.Fatalf("FLUSH of a write whose commit landed: %v; want success", err)
	}
	if got := queryStrings(t, conn, "SELECT count(*) FROM t"); fmt.Sprint(got) != "[1]" {
		t.Fatalf("rows = %v; want 1", got)
	}
}
