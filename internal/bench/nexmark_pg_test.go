package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// nexmarkCheckEvents is the default event count of TestNexmarkMatchesPostgres;
// RUNNEL_NEXMARK_CHECK_EVENTS overrides it for a longer run.
const nexmarkCheckEvents = 10_000

// nexmarkCheckOptions are the source options of the check, besides the
// table type. An event rate of 100 events per second of event time spreads
// 10,000 events over 100 s, so the 10 s windows of q5, q7 and q8 see ten
// tumbling and fifty hopping windows rather than one. Two splits make each
// source interleave its rows as a parallel source does.
func nexmarkCheckOptions(events int64) map[string]string {
	return map[string]string{
		"nexmark.event.num":           strconv.FormatInt(events, 10),
		"nexmark.event.rate":          "100",
		"nexmark.split.num":           "2",
		"nexmark.min.event.gap.in.ns": "0",
	}
}

// TestNexmarkMatchesPostgres checks the acceptance criterion of the Nexmark
// benchmark: each query's materialized view over N generated events holds
// exactly the rows (as a multiset) PostgreSQL returns for the same query
// over the same events loaded as tables. A query Runnel rejects as not
// supported (0A000) is skipped with the server's message.
func TestNexmarkMatchesPostgres(t *testing.T) {
	events := int64(nexmarkCheckEvents)
	if s := os.Getenv("RUNNEL_NEXMARK_CHECK_EVENTS"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			t.Fatalf("RUNNEL_NEXMARK_CHECK_EVENTS=%q: want a positive integer", s)
		}
		events = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	options := nexmarkCheckOptions(events)

	pg, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	if err := LoadNexmarkPostgres(ctx, pg, options); err != nil {
		t.Fatal(err)
	}

	e, err := startEmbedded(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	rw, err := e.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close(context.Background())
	for _, name := range []string{"person", "auction", "bid"} {
		var with []string
		for _, k := range slices.Sorted(maps.Keys(options)) {
			with = append(with, fmt.Sprintf("%s = '%s'", k, options[k]))
		}
		stmt := fmt.Sprintf("CREATE SOURCE %s WITH (connector = 'nexmark', nexmark.table.type = '%s', %s)",
			nexmarkSourceColumns(name, true), name, strings.Join(with, ", "))
		if _, err := rw.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	for _, q := range nexmarkCheckQueries() {
		t.Run(q.Name, func(t *testing.T) {
			pgSQL, err := NexmarkPostgresSQL(q.SQL)
			if err != nil {
				t.Fatal(err)
			}
			want, err := textRows(ctx, pg, pgSQL)
			if err != nil {
				t.Fatalf("PostgreSQL: %v\n%s", err, pgSQL)
			}
			// Every checked query is supported: a refusal (0A000 or any
			// other) fails the test.
			if _, err := rw.Exec(ctx, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", q.Name, q.SQL)); err != nil {
				t.Fatalf("create view: %v", err)
			}
			if err := e.srv.WaitSources(ctx, q.Name); err != nil {
				t.Fatal(err)
			}
			if _, err := rw.Exec(ctx, "FLUSH"); err != nil {
				t.Fatal(err)
			}
			got, err := textRows(ctx, rw, "SELECT * FROM "+q.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Errorf("PostgreSQL's answer is empty: the check proves nothing for %d events", events)
			}
			if diff := multisetDiff(got, want); diff != "" {
				t.Errorf("%s over %d events: view rows (got) differ from PostgreSQL (want), %d vs %d rows:\n%s\nPostgreSQL SQL:\n%s",
					q.Name, events, len(got), len(want), diff, pgSQL)
			}
			t.Logf("%s: %d rows equal", q.Name, len(got))
		})
	}
}

// nexmarkCheckQueries are the benchmark's queries as the check runs them.
func nexmarkCheckQueries() []NexmarkQuery { return NexmarkQueries }

// textRows runs query and returns each row as its columns' text forms
// joined by " | " (NULL as "NULL").
func textRows(ctx context.Context, conn *pgx.Conn, query string) ([]string, error) {
	rows, err := conn.Query(ctx, query, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var cols []string
		for _, raw := range rows.RawValues() {
			if raw == nil {
				cols = append(cols, "NULL")
			} else {
				cols = append(cols, string(raw))
			}
		}
		out = append(out, strings.Join(cols, " | "))
	}
	return out, rows.Err()
}

// multisetDiff describes how got and want differ as multisets (at most 20
// rows each way), or returns "" when they are equal.
func multisetDiff(got, want []string) string {
	count := map[string]int{}
	for _, r := range got {
		count[r]++
	}
	for _, r := range want {
		count[r]--
	}
	var extra, missing []string
	for _, r := range slices.Sorted(maps.Keys(count)) {
		for n := count[r]; n > 0; n-- {
			extra = append(extra, r)
		}
		for n := count[r]; n < 0; n++ {
			missing = append(missing, r)
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	var b strings.Builder
	show := func(label string, rows []string) {
		fmt.Fprintf(&b, "%s (%d):\n", label, len(rows))
		for i, r := range rows {
			if i == 20 {
				fmt.Fprintf(&b, "  ... %d more\n", len(rows)-20)
				break
			}
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	show("only in the view", extra)
	show("only in PostgreSQL", missing)
	return b.String()
}

func TestMultisetDiff(t *testing.T) {
	if d := multisetDiff([]string{"a", "b", "a"}, []string{"a", "a", "b"}); d != "" {
		t.Errorf("equal multisets: got diff %q", d)
	}
	d := multisetDiff([]string{"a", "a", "b"}, []string{"a", "b", "c"})
	if !strings.Contains(d, "only in the view (1):\n  a\n") || !strings.Contains(d, "only in PostgreSQL (1):\n  c\n") {
		t.Errorf("diff of {a,a,b} and {a,b,c}:\n%s", d)
	}
}
