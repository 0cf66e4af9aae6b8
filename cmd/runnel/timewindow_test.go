package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestTimeSeriesWindowsOverSQL (issue 18 item 2) over a real server: a
// time-series table WITH (ttl, time_window) written in several epochs
// keeps its SSTs in the window level, one day window each (no L1..L6
// file holds it); rows past the TTL never show and leave storage by
// compaction; a SELECT with a time-index predicate reads fewer SSTs than
// the same query whose predicate cannot be pushed down (storage
// ReadStats) and answers the same; after the server stops `runnel ctl
// storage check` is clean and `ctl storage version` lists the windows.
// Fails without the window level (the table's data lands in L1 and a
// one-day range prunes nothing).
func TestTimeSeriesWindowsOverSQL(t *testing.T) {
	dir := t.TempDir()
	s := servertest.Start(t, servertest.WithDataDir(dir))
	conn := s.Connect(t)
	in := s.Server.Internals()
	ctx := context.Background()
	servertest.Exec(t, conn, `CREATE TABLE cpu (host TEXT, ts TIMESTAMPTZ, v DOUBLE PRECISION, PRIMARY KEY (host))
		WITH (time_index = 'ts', ttl = '7d', time_window = '1d')`)
	_, err := conn.Exec(ctx, `CREATE TABLE bad (host TEXT, ts TIMESTAMPTZ, PRIMARY KEY (host)) WITH (time_index = 'ts', time_window = '0s')`)
	if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "22023" || !strings.Contains(pe.Message, "time_window") {
		t.Fatalf("time_window = '0s': %v; want SQLSTATE 22023 naming the option", err)
	}
	// Ten days of hourly rows for 10 hosts, written in 5 epochs of two days
	// each, newest first (so each epoch's L0 file spans two windows).
	for d := 0; d < 10; d += 2 {
		servertest.Exec(t, conn, fmt.Sprintf(`INSERT INTO cpu SELECT 'h' || (i %% 10), date_trunc('hour', now()) - i * interval '1 hour', i
			FROM generate_series(%d, %d) g(i)`, d*24*10, (d+2)*24*10-1))
		servertest.Exec(t, conn, "FLUSH")
	}
	for {
		ran, err := in.Store.Compact(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			break
		}
	}
	var version string
	st := in.Store.Stats()
	if st.Levels[storage.WindowLevel].SSTs < 7 {
		t.Fatalf("window level after compaction: %d SSTs; want one or more per live day (levels %+v)", st.Levels[storage.WindowLevel].SSTs, st.Levels)
	}
	version, err = storage.DescribeVersion(ctx, in.Meta)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(version, "LW (time windows)") {
		t.Fatalf("storage version lists no window level:\n%s", version)
	}
	if got := servertest.QueryText(t, conn, `SELECT count(*) FROM cpu WHERE ts < now() - interval '7 days'`); !slices.Equal(got, []string{"0"}) {
		t.Fatalf("rows past the TTL: %v; want none", got)
	}
	// The last day: pruned to its windows, same answer as unpushed.
	count := func(q string) (answer []string, opened, pruned uint64) {
		before := in.Store.ReadStats()
		answer = servertest.QueryText(t, conn, q)
		after := in.Store.ReadStats()
		return answer, after.Opened - before.Opened, after.Pruned - before.Pruned
	}
	since := time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
	got, opened, pruned := count(`SELECT count(*), sum(v) FROM cpu WHERE ts >= '` + since + `'`)
	want, openedAll, _ := count(`SELECT count(*), sum(v) FROM cpu WHERE ts + interval '0 s' >= '` + since + `'`)
	if !slices.Equal(got, want) || got[0] == "0|" {
		t.Fatalf("last day: %v; unpushed %v", got, want)
	}
	if pruned == 0 || opened >= openedAll {
		t.Fatalf("last day read %d SSTs (%d pruned); the unpushed query %d: want fewer", opened, pruned, openedAll)
	}
	// now() - interval is pushed down too (the statement's time is fixed).
	gotNow, openedNow, prunedNow := count(`SELECT count(*) FROM cpu WHERE ts >= now() - interval '1 day'`)
	wantNow, _, _ := count(`SELECT count(*) FROM cpu WHERE ts + interval '0 s' >= now() - interval '1 day'`)
	if !slices.Equal(gotNow, wantNow) || prunedNow == 0 || openedNow >= openedAll {
		t.Fatalf("ts >= now() - interval '1 day': %v (unpushed %v), %d SSTs read, %d pruned", gotNow, wantNow, openedNow, prunedNow)
	}
	t.Logf("last day: %d SSTs read, %d pruned; without the pushed range %d read", opened, pruned, openedAll)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if code, out := ctl("storage", "check", "--data-dir", dir, "--grace", "0s"); code != 0 {
		t.Fatalf("ctl storage check: exit %d\n%s", code, out)
	}
}
