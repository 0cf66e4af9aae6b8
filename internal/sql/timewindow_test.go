package sql

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/types"
)

// TestTimeWindowsMatchPostgres checks TUMBLE and HOP (which PostgreSQL
// lacks) against PostgreSQL expressions with the same meaning: TUMBLE's
// window_start is date_bin(size, t, epoch + offset); HOP's windows are the
// starts s = date_bin(slide, ...) + k*slide with s <= t < s + size. Times
// are random (before and after 1970, on and off window boundaries, NULL),
// sizes and offsets random per seed. RUNNEL_TW_SEED=n reruns one seed.
func TestTimeWindowsMatchPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "set timezone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	seeds := []int64{time.Now().UnixNano(), 1}
	if s := os.Getenv("RUNNEL_TW_SEED"); s != "" {
		v, _ := strconv.ParseInt(s, 10, 64)
		seeds = []int64{v}
	}
	for _, seed := range seeds {
		runTimeWindowSeed(t, ctx, conn, seed)
	}
}

func runTimeWindowSeed(t *testing.T, ctx context.Context, conn *pgx.Conn, seed int64) {
	r := rand.New(rand.NewSource(seed))
	f := newFakeDB()
	create := "drop table if exists tw; create table tw (id int, v int, ts timestamp, tz timestamptz)"
	if _, err := conn.Exec(ctx, create); err != nil {
		t.Fatal(err)
	}
	f.addTable("tw", "id int", "v int", "ts timestamp", "tz timestamptz")
	const sec = int64(1_000_000)
	randTime := func() string {
		if r.Intn(10) == 0 {
			return "NULL"
		}
		var us int64
		switch r.Intn(3) {
		case 0: // anywhere within ±60 years of 1970, to the microsecond
			us = r.Int63n(120*365*86400*sec) - 60*365*86400*sec
		case 1: // near 1970 (negative times floor downwards)
			us = r.Int63n(200*sec) - 100*sec
		default: // on a boundary of many windows
			us = (r.Int63n(2000) - 1000) * 30 * sec
		}
		return "'" + types.FormatText(types.DTimestamp(us), types.Timestamp, nil) + "'"
	}
	for i := 0; i < 40; i++ {
		tsv, tzv := randTime(), randTime()
		if tzv != "NULL" {
			tzv = tzv[:len(tzv)-1] + "+00'"
		}
		ins := fmt.Sprintf("insert into tw values (%d, %d, %s, %s)", i, r.Intn(5), tsv, tzv)
		if _, err := conn.Exec(ctx, ins); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, ins, err)
		}
		p, err := Prepare(f, mustParse(t, ins), nil)
		if err != nil {
			t.Fatalf("seed %d: runnel %s: %v", seed, ins, err)
		}
		rows, err := runPlan(f, p.Bound.(*binder.Insert).Source)
		if err != nil {
			t.Fatalf("seed %d: runnel %s: %v", seed, ins, err)
		}
		f.rows["tw"] = append(f.rows["tw"], rows...)
	}
	sizes := []string{"1 second", "7 seconds", "250 milliseconds", "90 minutes", "1 day", "1 day 2 hours", "30 seconds"}
	offsets := []string{"0 seconds", "3 seconds", "-2 seconds", "45 minutes", "1 day 1 second"}
	type pair struct{ runnel, pg string }
	var cases []pair
	for i := 0; i < 12; i++ {
		col, origin := "ts", "timestamp '1970-01-01'"
		if r.Intn(2) == 0 {
			col, origin = "tz", "timestamptz '1970-01-01 00:00:00+00'"
		}
		size := sizes[r.Intn(len(sizes))]
		off := offsets[r.Intn(len(offsets))]
		org := fmt.Sprintf("%s + interval '%s'", origin, off)
		bin := fmt.Sprintf("date_bin(interval '%s', %s, %s)", size, col, org)
		cases = append(cases, pair{
			fmt.Sprintf("select id, v, %s, window_start, window_end from tumble(tw, %s, interval '%s', interval '%s')", col, col, size, off),
			fmt.Sprintf("select id, v, %s, %s as window_start, %s + interval '%s' as window_end from tw", col, bin, bin, size),
		})
		// HOP with size = k * slide.
		k := 1 + r.Intn(4)
		slide := sizes[r.Intn(len(sizes))]
		hsize := fmt.Sprintf("interval '%s' * %d", slide, k)
		sbin := fmt.Sprintf("date_bin(interval '%s', %s, %s)", slide, col, org)
		pgHop := fmt.Sprintf("from tw, generate_series(%s - %s, %s + interval '%s', interval '%s') as ws where ws <= %s and %s < ws + %s",
			sbin, hsize, sbin, slide, slide, col, col, hsize)
		hopFrom := fmt.Sprintf("hop(tw, %s, interval '%s', %s, interval '%s')", col, slide, hsize, off)
		cases = append(cases,
			pair{
				fmt.Sprintf("select id, %s, window_start, window_end from %s", col, hopFrom),
				fmt.Sprintf("select id, %s, ws as window_start, ws + %s as window_end %s", col, hsize, pgHop),
			},
			pair{
				fmt.Sprintf("select window_start, count(*) as c, sum(v) as s from %s as h group by window_start", hopFrom),
				fmt.Sprintf("select ws as window_start, count(*) as c, sum(v) as s %s group by ws", pgHop),
			},
			pair{
				// A join of TUMBLE with HOP, both in derived tables.
				fmt.Sprintf("select a.id, b.id, a.window_start from tumble(tw, %s, %s) a join (select * from %s) b on a.window_start = b.window_start and a.v = b.v",
					col, hsize, hopFrom),
				fmt.Sprintf("select a.id, b.id, a.window_start from (select id, v, date_bin(%s, %s, %s) as window_start from tw) a join (select tw.id, tw.v, ws as window_start %s) b on a.window_start = b.window_start and a.v = b.v",
					hsize, col, origin, pgHop),
			})
	}
	for i, c := range cases {
		want, wantCols, err := pgQueryCols(ctx, conn, c.pg)
		if err != nil {
			t.Fatalf("seed %d case %d: postgres: %s: %v", seed, i, c.pg, err)
		}
		got, gotColumns, err := f.query(ctx, c.runnel)
		if err != nil {
			t.Fatalf("seed %d case %d: runnel: %s: %v", seed, i, c.runnel, err)
		}
		var gotCols []string
		for _, col := range gotColumns {
			gotCols = append(gotCols, fmt.Sprintf("%s:%d", col.Name, col.Type.OID()))
		}
		if strings.Join(wantCols, ",") != strings.Join(gotCols, ",") {
			t.Errorf("seed %d case %d: %s\ncolumns: got %v, want %v", seed, i, c.runnel, gotCols, wantCols)
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("seed %d case %d: %s\npostgres: %s\ngot %d rows:\n  %s\nwant %d rows:\n  %s", seed, i, c.runnel, c.pg,
				len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
		}
	}
}

// TestTimeWindowErrors pins the errors of bad TUMBLE/HOP calls.
func TestTimeWindowErrors(t *testing.T) {
	f := newFakeDB()
	f.addTable("tw", "id int", "ts timestamp", "d date")
	for _, c := range []struct{ q, code, msg string }{
		{"select * from hop(tw, ts, interval '4 seconds', interval '6 seconds')", sqlerr.InvalidParameterValue, "multiple of its slide"},
		{"select * from hop(tw, ts, interval '-1 second', interval '6 seconds')", sqlerr.InvalidParameterValue, "positive"},
		{"select * from tumble(tw, ts, interval '1 month')", sqlerr.InvalidParameterValue, "months"},
		{"select * from hop(tw, ts, interval '1 day', interval '1 year')", sqlerr.InvalidParameterValue, "months"},
		{"select * from tumble(tw, ts, interval '0 seconds')", sqlerr.InvalidParameterValue, "positive"},
		{"select * from tumble(tw, id, interval '1 second')", sqlerr.DatatypeMismatch, "timestamp"},
		{"select * from tumble(tw, d, interval '1 second')", sqlerr.DatatypeMismatch, "timestamp"},
		{"select * from tumble(tw, nope, interval '1 second')", sqlerr.UndefinedColumn, "nope"},
		{"select * from tumble(nope, ts, interval '1 second')", sqlerr.UndefinedTable, "nope"},
		{"select * from tumble(tw, ts)", sqlerr.UndefinedFunction, "arguments"},
		{"select * from tumble(tw, ts, interval '1 second' * id)", sqlerr.FeatureNotSupported, "constant"},
		{"select * from tumble(tw, ts + interval '1 second', interval '1 second')", sqlerr.FeatureNotSupported, "column"},
		{"select * from tumble(tw, ts, null::interval)", sqlerr.InvalidParameterValue, "NULL"},
		{"select * from tumble(tw, ts, interval '1000000 days')", sqlerr.InvalidParameterValue, "too large"},
		{"select * from tumble('tw', ts, interval '1 second')", sqlerr.FeatureNotSupported, "must name"},
	} {
		_, _, err := f.query(context.Background(), c.q)
		if err == nil {
			t.Errorf("%s: no error", c.q)
			continue
		}
		if sqlerr.Code(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %s %v; want %s containing %q", c.q, sqlerr.Code(err), err, c.code, c.msg)
		}
	}
}

// TestTimeWindowScoping: rel's columns are qualified by the alias, or by
// rel's name without one; the column alias list renames the output.
func TestTimeWindowScoping(t *testing.T) {
	f := newFakeDB()
	f.addTable("tw", "id int", "ts timestamp")
	f.rows["tw"] = []types.Row{{types.DInt32(1), types.DTimestamp(7_500_000)}}
	for _, c := range []struct{ q, want string }{
		{"select tw.id, tw.window_start from tumble(tw, ts, interval '5 seconds')", "1|1970-01-01 00:00:05"},
		{"select x.window_end from tumble(tw, ts, interval '5 seconds') as x", "1970-01-01 00:00:10"},
		{"select b, e from tumble(tw, ts, interval '5 seconds') as x(a, t, b, e)", "1970-01-01 00:00:05|1970-01-01 00:00:10"},
		{"select count(*) from hop(tw, ts, interval '1 second', interval '5 seconds') h where h.window_start <= h.ts", "5"},
		{"with c as (select id, ts from tw) select window_start from tumble(c, ts, interval '1 minute')", "1970-01-01 00:00:00"},
		{"select min(window_start) from hop(tw, ts, interval '5 seconds', interval '10 seconds', interval '1 second')", "1970-01-01 00:00:01"},
	} {
		got, _, err := f.query(context.Background(), c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("%s: got %q, want %q", c.q, got, c.want)
		}
	}
}
