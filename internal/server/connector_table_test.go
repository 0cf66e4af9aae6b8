package server

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// waitTableIngest waits until the connector of table name has delivered
// every row (bounded connectors only).
func waitTableIngest(t *testing.T, s *Server, name string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		var done <-chan struct{}
		if ti := s.compute.TableIngest(name); ti != nil {
			done = ti.Finished()
		}
		if done != nil {
			select {
			case <-done:
				return
			case <-deadline:
				t.Fatalf("table %s: connector did not finish", name)
			}
		}
		select {
		case <-deadline:
			t.Fatalf("table %s has no running connector", name)
		case <-time.After(10 * time.Millisecond): // the job is being rebuilt
		}
	}
}

// TestTableWithConnector: CREATE TABLE … WITH (connector = …) stores what
// the connector delivers exactly once — across RECOVERs during the ingest
// and a restart — feeds views, accepts DML, and upserts on a declared
// primary key.
func TestTableWithConnector(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	conn := ts.connect(t)
	ctx := context.Background()
	// Paced so that the ingest spans many epochs and the RECOVERs below
	// interrupt it.
	mustExec(t, conn, `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR)
		WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '20000', nexmark.split.num = '2', nexmark.min.event.gap.in.ns = '50000')`)
	mustExec(t, conn, "CREATE MATERIALIZED VIEW per_auction AS SELECT auction, count(*) AS n FROM bid GROUP BY auction")
	ingested := func() int64 {
		if ti := ts.srv.compute.TableIngest("bid"); ti != nil {
			return ti.Rows.Load()
		}
		return 0
	}
	for range 3 {
		// Each RECOVER interrupts an ingest that has made progress since
		// the last one (the rebuilt actor counts from its restart).
		deadline := time.Now().Add(30 * time.Second)
		for ingested() < 1000 {
			if time.Now().After(deadline) {
				t.Fatal("the ingest made no progress")
			}
			time.Sleep(5 * time.Millisecond) // polling a counter, not ordering events
		}
		mustExec(t, conn, "RECOVER")
	}
	waitTableIngest(t, ts.srv, "bid")
	mustExec(t, conn, "FLUSH")
	const bids = 18400 // 46 of every 50 events
	// Rows are keyed by their connector position: a replayed row would
	// overwrite itself in the table but be counted twice by the view.
	if got := queryStrings(t, conn, "SELECT count(*) FROM bid"); fmt.Sprint(got) != fmt.Sprintf("[%d]", bids) {
		t.Fatalf("table after ingest with recoveries = %v; want %d bids", got, bids)
	}
	if got := queryStrings(t, conn, "SELECT sum(n)::bigint FROM per_auction"); fmt.Sprint(got) != fmt.Sprintf("[%d]", bids) {
		t.Fatalf("view over the table = %v", got)
	}
	// DML works on a table with a connector.
	mustExec(t, conn, "DELETE FROM bid WHERE auction = (SELECT min(auction) FROM bid)")
	mustExec(t, conn, "INSERT INTO bid VALUES (-1, 1, 100, 'x', 'u', '2020-01-01', '')")
	mustExec(t, conn, "FLUSH")
	want := queryStrings(t, conn, "SELECT count(*) FROM bid")
	if got := queryStrings(t, conn, "SELECT sum(n)::bigint FROM per_auction"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("view after DML = %v; table has %v", got, want)
	}

	// A declared primary key upserts.
	mustExec(t, conn, `CREATE TABLE d (id INT PRIMARY KEY, v INT) WITH (connector = 'datagen',
		fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '500',
		fields.v.kind = 'sequence', fields.v.start = '1', fields.v.end = '500', datagen.rows.per.second = '1000000')`)
	waitTableIngest(t, ts.srv, "d")
	mustExec(t, conn, "UPDATE d SET v = 0 WHERE id <= 10")
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT count(*), sum(v) FROM d"); fmt.Sprint(got) != "[500|125195]" {
		t.Fatalf("datagen table = %v", got)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE bad (x INT) WITH (connector = 'nexmark', nexmark.table.type = 'Nope')"); err == nil {
		t.Fatal("a table with bad connector options was created")
	}

	// A restart neither re-ingests nor loses anything.
	conn.Close(ctx)
	ts.stop()
	ts2 := startTestServer(t, dir)
	conn2 := ts2.connect(t)
	waitTableIngest(t, ts2.srv, "bid")
	mustExec(t, conn2, "FLUSH")
	if got := queryStrings(t, conn2, "SELECT count(*) FROM bid"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart the table has %v rows; want %v", got, want)
	}
	if got := queryStrings(t, conn2, "SELECT count(*), sum(v) FROM d"); fmt.Sprint(got) != "[500|125195]" {
		t.Fatalf("datagen table after restart = %v", got)
	}
	mustExec(t, conn2, "DROP TABLE d")
	mustExec(t, conn2, "DROP TABLE bid CASCADE")
}
