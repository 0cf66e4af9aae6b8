package server

import (
	"context"
	"fmt"
	"testing"
)

// A view over a bounded nexmark source sees exactly the generated rows.
func TestNexmarkSourceView(t *testing.T) {
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	mustExec(t, conn, `CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR)
		WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '5000', nexmark.split.num = '2', nexmark.min.event.gap.in.ns = '0')`)
	mustExec(t, conn, "CREATE MATERIALIZED VIEW n AS SELECT count(*) AS c, count(DISTINCT auction) > 0 AS has_auctions FROM bid")
	// A projection view takes Materialize's append-only path: each row is
	// keyed by its unique source position, so none may collapse.
	mustExec(t, conn, "CREATE MATERIALIZED VIEW p AS SELECT auction, price FROM bid WHERE price > 0")
	for _, v := range []string{"n", "p"} {
		if err := ts.srv.WaitSources(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, conn, "FLUSH")
	if got := queryStrings(t, conn, "SELECT count(*) FROM p"); fmt.Sprint(got) != "[4600]" {
		t.Fatalf("projection view over 4600 bids has %v rows", got)
	}
	if got := queryStrings(t, conn, "SELECT c, has_auctions FROM n"); fmt.Sprint(got) != "[4600|true]" {
		t.Fatalf("count over 5000 nexmark events = %v; want 4600 bids", got)
	}
}
