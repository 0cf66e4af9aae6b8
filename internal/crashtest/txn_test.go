package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSIGKILLMidTransaction: writers run transactions that each move an
// amount from a row of one table to a row of another and log the move in
// a third, all in one block, COMMIT acknowledged only once durable
// (implicit_flush). The server is SIGKILLed at random instants, usually
// while commits are in flight. After every restart each transaction is
// there whole or not at all (I7): every row of a and b equals its initial
// value plus the moves the log holds, the view over a and b shows the
// constant total, and every acknowledged transaction is in the log.
// RUNNEL_TXN_CRASH_ITERS sets the number of kills (default 3).
func TestSIGKILLMidTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: skipped with -short")
	}
	seed := envInt(t, "RUNNEL_CRASH_SEED", time.Now().UnixNano())
	iters := int(envInt(t, "RUNNEL_TXN_CRASH_ITERS", 3))
	t.Logf("seed %d (RUNNEL_CRASH_SEED=%d replays the choices), %d kills", seed, seed, iters)
	rng := rand.New(rand.NewSource(seed))
	bin := buildRunnel(t)
	work := t.TempDir()
	dataDir, logPath := filepath.Join(work, "data"), filepath.Join(work, "runnel.log")
	var procs []*proc
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (tail of %s):\n%s", logPath, tail(logPath))
		}
		for _, p := range procs {
			p.signal(syscall.SIGKILL)
		}
	})
	start := func() *proc {
		p := startRunnel(t, bin, dataDir, logPath)
		procs = append(procs, p)
		p.waitReady(t, readyLimit)
		return p
	}
	const rows, initial = 6, 1000
	p := start()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.url())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"CREATE TABLE a (k INT PRIMARY KEY, v BIGINT)",
		"CREATE TABLE b (k INT PRIMARY KEY, v BIGINT)",
		"CREATE TABLE moves (id BIGINT PRIMARY KEY, src VARCHAR, sk INT, dk INT, amount BIGINT)",
		fmt.Sprintf("INSERT INTO a SELECT g, %d FROM generate_series(1, %d) g", initial, rows),
		fmt.Sprintf("INSERT INTO b SELECT g, %d FROM generate_series(1, %d) g", initial, rows),
		"CREATE MATERIALIZED VIEW total AS SELECT sum(v) AS s FROM (SELECT v FROM a UNION ALL SELECT v FROM b) x",
		"FLUSH",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	conn.Close(ctx)

	var (
		mu     sync.Mutex
		acked  = map[int64]bool{}
		nextID int64
	)
	commits := 0
	for it := 0; it < iters; it++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(w int, r *rand.Rand) {
				defer wg.Done()
				c, err := pgx.Connect(ctx, p.url()+"&implicit_flush=on")
				if err != nil {
					return
				}
				defer c.Close(context.Background())
				for {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					nextID++
					id := nextID
					mu.Unlock()
					src, dst := "a", "b"
					if r.Intn(2) == 0 {
						src, dst = "b", "a"
					}
					sk, dk, amt := 1+r.Intn(rows), 1+r.Intn(rows), int64(1+r.Intn(20))
					stmts := []string{
						"BEGIN",
						fmt.Sprintf("UPDATE %s SET v = v - %d WHERE k = %d", src, amt, sk),
						fmt.Sprintf("UPDATE %s SET v = v + %d WHERE k = %d", dst, amt, dk),
						fmt.Sprintf("INSERT INTO moves VALUES (%d, '%s', %d, %d, %d)", id, src, sk, dk, amt),
						"COMMIT",
					}
					var err error
					for _, s := range stmts {
						if _, err = c.Exec(ctx, s); err != nil {
							break
						}
					}
					var pe *pgconn.PgError
					switch {
					case err == nil:
						mu.Lock()
						acked[id] = true
						mu.Unlock()
					case errors.As(err, &pe):
						c.Exec(ctx, "ROLLBACK") // a conflict (40001): go on
					default:
						return // the server is gone
					}
				}
			}(w, rand.New(rand.NewSource(seed+int64(it*10+w))))
		}
		time.Sleep(300*time.Millisecond + time.Duration(rng.Int63n(int64(900*time.Millisecond))))
		p.signal(syscall.SIGKILL)
		close(stop)
		wg.Wait()
		p = start()
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		verifyTransfers(t, p.url(), rows, initial, acked)
		t.Logf("kill %d: %d transactions acknowledged so far; after restart every one is whole", it, n)
		commits = n
		if t.Failed() {
			return
		}
	}
	if commits == 0 {
		t.Fatal("no transaction was acknowledged")
	}
}

// verifyTransfers checks that the tables hold exactly the logged moves.
func verifyTransfers(t *testing.T, url string, rows int, initial int64, acked map[int64]bool) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	want := map[string]int64{}
	for k := 1; k <= rows; k++ {
		want[fmt.Sprintf("a%d", k)] = initial
		want[fmt.Sprintf("b%d", k)] = initial
	}
	logged := map[int64]bool{}
	rs, err := conn.Query(ctx, "SELECT id, src, sk, dk, amount FROM moves")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var id, amt int64
		var src string
		var sk, dk int
		if err := rs.Scan(&id, &src, &sk, &dk, &amt); err != nil {
			t.Fatal(err)
		}
		dst := map[string]string{"a": "b", "b": "a"}[src]
		want[fmt.Sprintf("%s%d", src, sk)] -= amt
		want[fmt.Sprintf("%s%d", dst, dk)] += amt
		logged[id] = true
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	for id := range acked {
		if !logged[id] {
			t.Errorf("acknowledged transaction %d is lost", id)
		}
	}
	for _, tbl := range []string{"a", "b"} {
		rs, err := conn.Query(ctx, "SELECT k, v FROM "+tbl)
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			var k int
			var v int64
			if err := rs.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			if key := fmt.Sprintf("%s%d", tbl, k); want[key] != v {
				t.Errorf("%s.k=%d holds %d; the logged moves make it %d: a transaction is there in part", tbl, k, v, want[key])
			}
		}
		rs.Close()
	}
	var total int64
	if err := conn.QueryRow(ctx, "SELECT s FROM total").Scan(&total); err != nil {
		t.Fatal(err)
	}
	if want := 2 * int64(rows) * initial; total != want {
		t.Errorf("view total %d, want %d", total, want)
	}
}
