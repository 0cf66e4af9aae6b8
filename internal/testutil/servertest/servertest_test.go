package servertest

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestStartRestart checks the harness itself: a started server answers,
// FLUSHed rows survive Restart on the same data directory, and both
// renderings of rows work.
func TestStartRestart(t *testing.T) {
	s := Start(t)
	conn := s.Connect(t)
	Exec(t, conn, "CREATE TABLE h (k int PRIMARY KEY, v text)")
	Exec(t, conn, "INSERT INTO h VALUES ($1, $2), (2, NULL)", 1, "one")
	Exec(t, conn, "FLUSH", pgx.QueryExecModeSimpleProtocol)
	if got := QueryText(t, conn, "SELECT k, v FROM h ORDER BY k"); !slices.Equal(got, []string{"1|one", "2|NULL"}) {
		t.Fatalf("QueryText: %v", got)
	}
	if got := QueryStrings(t, conn, "SELECT k, v FROM h WHERE k = $1", 2); !slices.Equal(got, []string{"2|<nil>"}) {
		t.Fatalf("QueryStrings: %v", got)
	}
	dir := s.DataDir
	s = s.Restart(t)
	if s.DataDir != dir {
		t.Fatalf("Restart moved the data directory: %s; want %s", s.DataDir, dir)
	}
	if got := QueryText(t, s.Connect(t), "SELECT count(*) FROM h"); !slices.Equal(got, []string{"2"}) {
		t.Fatalf("after Restart: %v", got)
	}
	if _, err := TryQueryText(s.Connect(t), "SELECT * FROM missing"); err == nil {
		t.Fatal("TryQueryText: no error for a missing table")
	}
}
