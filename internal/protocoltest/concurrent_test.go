package protocoltest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// sessions is the number of concurrent sessions the acceptance asks for.
const sessions = 50

// TestConcurrentSessions runs 50 sessions at once, each writing its own
// key range with INSERT (simple and prepared), UPDATE and DELETE, making
// its writes visible (half with implicit flush, half with FLUSH) and
// reading them back exactly, while also reading the shared table. At the
// end one session checks the whole table.
func TestConcurrentSessions(t *testing.T) {
	srv := servertest.Start(t)
	admin := srv.Connect(t)
	servertest.Exec(t, admin, "CREATE TABLE cs (k int PRIMARY KEY, session int NOT NULL, v text)")
	ctx := testCtx(t)

	var g errgroup.Group
	for s := range sessions {
		g.Go(func() error {
			if err := runSession(ctx, srv.URL(), s); err != nil {
				return fmt.Errorf("session %d: %w", s, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}

	servertest.Exec(t, admin, "FLUSH")
	got := servertest.QueryText(t, admin, "SELECT count(*), count(DISTINCT session), sum(k) FROM cs")
	// Every session keeps keys s*100+1..s*100+10, minus the even ones
	// below 5 (deleted): 1, 3, 5..10 → 8 rows.
	var sum int
	for s := range sessions {
		for _, i := range []int{1, 3, 5, 6, 7, 8, 9, 10} {
			sum += s*100 + i
		}
	}
	want := fmt.Sprintf("%d|%d|%d", 8*sessions, sessions, sum)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("final table: %v; want %s", got, want)
	}
}

func runSession(ctx context.Context, url string, s int) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	implicit := s%2 == 0
	if implicit {
		if _, err := conn.Exec(ctx, "SET RW_IMPLICIT_FLUSH TO true"); err != nil {
			return err
		}
	}
	visible := func() error {
		if implicit {
			return nil
		}
		_, err := conn.Exec(ctx, "FLUSH")
		return err
	}
	base := s * 100
	// Five rows in one simple-protocol statement, five through a
	// prepared statement with parameters.
	var vals []string
	for i := 1; i <= 5; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, 'v%d')", base+i, s, i))
	}
	if _, err := conn.Exec(ctx, "INSERT INTO cs VALUES "+strings.Join(vals, ", "), pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	for i := 6; i <= 10; i++ {
		if _, err := conn.Exec(ctx, "INSERT INTO cs VALUES ($1, $2, $3)", base+i, s, fmt.Sprintf("v%d", i)); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, "UPDATE cs SET v = v || '!' WHERE session = $1 AND k % 2 = 1", s); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "DELETE FROM cs WHERE session = $1 AND k - $2 < 5 AND k % 2 = 0", s, base); err != nil {
		return err
	}
	if err := visible(); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, "SELECT k - $2, v FROM cs WHERE session = $1 ORDER BY k", s, base)
	if err != nil {
		return err
	}
	var got []string
	for rows.Next() {
		var k int
		var v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%d=%s", k, v))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	want := []string{"1=v1!", "3=v3!", "5=v5!", "6=v6", "7=v7!", "8=v8", "9=v9!", "10=v10"}
	if !slices.Equal(got, want) {
		return fmt.Errorf("own rows %v; want %v", got, want)
	}
	// A read of the shared table, which other sessions are writing.
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM cs WHERE session <> $1", s).Scan(&n); err != nil {
		return err
	}
	return nil
}
