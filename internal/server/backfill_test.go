package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/stream/exec"
)

// Changes made to a table while a view over it backfills — held by a test
// hook after its first snapshot batch, so the changes fall on both sides
// of the backfill's position — end up in the view exactly once: the view
// equals its query over the table afterwards. Updates that move rows
// between groups, deletes and new keys; the view aggregates with count,
// sum, min and max (the aggregation keeps its groups in memory during the
// backfill: exec.BackfillGate). It fails if the backfill forwarded the
// changes to keys its snapshot had not reached yet (counted twice), or
// dropped those to keys it had (lost), or if the aggregation did not flush
// at the end of the backfill.
func TestBackfillInterleavesConcurrentChanges(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE big (k INT PRIMARY KEY, v INT)")
	mustExec(t, conn, "INSERT INTO big SELECT g, g % 7 FROM generate_series(1, 3000) g")
	mustExec(t, conn, "FLUSH")
	// Hold the view's backfill at its first batch (as holdBackfill), and
	// record every batch seen for the failure message.
	held := make(chan int64, 1)
	release := make(chan struct{})
	var calls []string
	var callsMu sync.Mutex
	remove := exec.SetBackfillHook(func(ctx context.Context, executor string, rows int64) {
		callsMu.Lock()
		calls = append(calls, fmt.Sprintf("%s: %d", executor, rows))
		callsMu.Unlock()
		if !strings.Contains(executor, "materialized view inter ") {
			return
		}
		select {
		case held <- rows:
		default:
			return
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	t.Cleanup(remove)
	var releaseOnce sync.Once
	unhold := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unhold)
	const query = "SELECT v, count(*) AS n, sum(k) AS s, min(k) AS lo, max(k) AS hi FROM big GROUP BY v"
	done := make(chan error, 1)
	conn2 := ts.connect(t)
	go func() {
		_, err := conn2.Exec(context.Background(), "CREATE MATERIALIZED VIEW inter AS "+query)
		done <- err
	}()
	select {
	case rows := <-held:
		if rows >= 3000 {
			callsMu.Lock()
			defer callsMu.Unlock()
			t.Fatalf("held after %d rows: the backfill was not part-way; batches seen: %v", rows, calls)
		}
	case err := <-done:
		t.Fatalf("CREATE finished before the backfill was held: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("backfill never reached the hook")
	}
	// The table's actor applies these without waiting for the held view
	// (its output channel buffers them).
	mustExec(t, conn, "UPDATE big SET v = v + 10 WHERE k % 3 = 0")
	mustExec(t, conn, "DELETE FROM big WHERE k % 5 = 0")
	mustExec(t, conn, "INSERT INTO big SELECT g, g % 4 FROM generate_series(3001, 3600) g")
	unhold()
	if err := <-done; err != nil {
		t.Fatalf("CREATE: %v", err)
	}
	// More changes after the backfill, through the finished view.
	mustExec(t, conn, "UPDATE big SET v = 1 WHERE k % 11 = 0")
	mustExec(t, conn, "FLUSH")
	got := queryStrings(t, conn, "SELECT v, n, s, lo, hi FROM inter")
	want := queryStrings(t, conn, query)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("view after concurrent changes:\n got  %v\n want %v", got, want)
	}
	if len(want) != 14 { // v in 0..6 and, moved by the update, 10..16
		t.Fatalf("query has %d groups; want 14 (the test's changes did not apply?): %v", len(want), want)
	}
}

// A join view whose backfill is held part-way while both tables change
// (barriers queue behind the held actor, so the backfill spans several
// epochs) equals its query after RECOVER, which rebuilds it from storage
// alone: every write of the join's and the view's state tables made
// during the backfill reached the engine in a committed epoch (I7), and
// the changes on both sides of the backfill's position are in it once.
func TestJoinBackfillStateSurvivesRecover(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, "CREATE TABLE cust (id INT PRIMARY KEY, region INT)")
	mustExec(t, conn, "CREATE TABLE ord (id INT PRIMARY KEY, cid INT, amount INT)")
	mustExec(t, conn, "INSERT INTO cust SELECT g, g % 5 FROM generate_series(1, 300) g")
	mustExec(t, conn, "INSERT INTO ord SELECT g, g % 317, g FROM generate_series(1, 4000) g")
	mustExec(t, conn, "FLUSH")
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	remove := exec.SetBackfillHook(func(ctx context.Context, executor string, rows int64) {
		if !strings.Contains(executor, "materialized view jv from ord") {
			return
		}
		select {
		case held <- struct{}{}:
		default:
			return
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	t.Cleanup(remove)
	var releaseOnce sync.Once
	unhold := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unhold)
	const query = "SELECT o.id, o.amount, c.region FROM ord o JOIN cust c ON o.cid = c.id"
	done := make(chan error, 1)
	conn2 := ts.connect(t)
	go func() {
		_, err := conn2.Exec(context.Background(), "CREATE MATERIALIZED VIEW jv AS "+query)
		done <- err
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("CREATE finished before the backfill was held: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("backfill never reached the hook")
	}
	mustExec(t, conn, "UPDATE ord SET cid = cid + 1 WHERE id % 3 = 0")
	mustExec(t, conn, "DELETE FROM ord WHERE id % 7 = 0")
	mustExec(t, conn, "INSERT INTO cust SELECT g, g % 3 FROM generate_series(301, 320) g")
	mustExec(t, conn, "UPDATE cust SET region = region + 10 WHERE id % 4 = 0")
	unhold()
	if err := <-done; err != nil {
		t.Fatalf("CREATE: %v", err)
	}
	mustExec(t, conn, "RECOVER")
	mustExec(t, conn, "FLUSH")
	got := queryStrings(t, conn, "SELECT id, amount, region FROM jv")
	want := queryStrings(t, conn, query)
	slices.Sort(got)
	slices.Sort(want)
	if len(want) < 3000 || !slices.Equal(got, want) {
		t.Fatalf("join view after RECOVER: %d rows, query %d rows; equal %v", len(got), len(want), slices.Equal(got, want))
	}
}
