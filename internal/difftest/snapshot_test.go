package difftest

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSnapshotConsistency moves money between accounts with concurrent
// single-statement transfers while a reader queries two materialized views
// over the accounts in one statement. Each transfer is one atomic UPDATE of
// two rows, so every epoch keeps the total; a query reads one epoch, so
// both views must always show the initial total.
func TestSnapshotConsistency(t *testing.T) {
	const (
		accounts  = 40
		branches  = 4
		initial   = 1000
		writers   = 3
		readTimes = 150
	)
	seed := time.Now().UnixNano()
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (replay with RUNNEL_TEST_SEED=%d)", seed, seed)
	r := startRunnel(t)
	admin := connect(t, r.url())
	for _, s := range []string{
		"CREATE TABLE acct (id INT PRIMARY KEY, branch INT, bal BIGINT)",
		fmt.Sprintf("INSERT INTO acct SELECT i, i %% %d, %d FROM generate_series(1, %d) i", branches, initial, accounts),
		"CREATE MATERIALIZED VIEW by_branch AS SELECT branch, sum(bal) AS s, count(*) AS n FROM acct GROUP BY branch",
		"CREATE MATERIALIZED VIEW tot AS SELECT sum(bal) AS total, count(*) AS n FROM acct",
		"FLUSH",
	} {
		if err := execOn(admin, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	want := int64(accounts * initial)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var transfers [writers]int
	for w := range writers {
		conn := connect(t, r.url())
		rng := rand.New(rand.NewSource(seed + int64(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				from, to := 1+rng.Intn(accounts), 1+rng.Intn(accounts)
				if from == to {
					continue
				}
				amt := 1 + rng.Intn(100)
				// One statement, two rows: atomic.
				_, err := conn.Exec(ctx, "UPDATE acct SET bal = bal + CASE id WHEN $1 THEN -$3::bigint WHEN $2 THEN $3::bigint END WHERE id IN ($1, $2)",
					from, to, amt)
				if err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("transfer %d→%d: %w", from, to, err)
					}
					return
				}
				transfers[w]++
			}
		}()
	}

	reader := connect(t, r.url())
	q := "SELECT (SELECT sum(s) FROM by_branch), (SELECT total FROM tot), (SELECT sum(n) FROM by_branch), (SELECT n FROM tot)"
	distinct := map[string]bool{}
	for i := range readTimes {
		var s1, s2 string
		var n1, n2 int64
		err := reader.QueryRow(ctx, q, pgx.QueryExecModeSimpleProtocol).Scan(&s1, &s2, &n1, &n2)
		if err != nil {
			t.Fatalf("read %d: %s: %v", i, q, err)
		}
		if s1 != fmt.Sprint(want) || s2 != fmt.Sprint(want) || n1 != accounts || n2 != accounts {
			t.Fatalf("read %d: by_branch total %s, tot %s, counts %d/%d; want %d and %d accounts", i, s1, s2, n1, n2, want, accounts)
		}
		// Also a read of the base table in the same statement as a view.
		var b, v string
		if err := reader.QueryRow(ctx, "SELECT (SELECT sum(bal) FROM acct), (SELECT total FROM tot)", pgx.QueryExecModeSimpleProtocol).Scan(&b, &v); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if b != fmt.Sprint(want) || v != fmt.Sprint(want) {
			t.Fatalf("read %d: acct total %s, tot %s; want %d", i, b, v, want)
		}
		var bal string
		if err := reader.QueryRow(ctx, "SELECT string_agg(s::text, ',' ORDER BY branch) FROM by_branch", pgx.QueryExecModeSimpleProtocol).Scan(&bal); err == nil {
			distinct[bal] = true
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for _, n := range transfers {
		total += n
	}
	t.Logf("%d transfers by %d writers; %d reads; %d distinct per-branch states seen", total, writers, readTimes, len(distinct))
	if total == 0 || len(distinct) < 2 {
		t.Fatalf("the workload did not run concurrently with the reads (%d transfers, %d states seen)", total, len(distinct))
	}
	// Finally the views equal a fresh computation over the table.
	if err := execOn(admin, "FLUSH"); err != nil {
		t.Fatal(err)
	}
	got := query(admin, "SELECT branch, s, n FROM by_branch", canon{})
	exp := query(admin, "SELECT branch, sum(bal), count(*) FROM acct GROUP BY branch", canon{})
	if ok, diff := sameMultiset(exp.rows, got.rows); !ok || got.err != nil || exp.err != nil {
		t.Fatalf("by_branch after the workload differs from its query (%v/%v):\n%s", got.err, exp.err, diff)
	}
}
