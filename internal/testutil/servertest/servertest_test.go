package servertest

import (
	"slices"
	"testing"
	"time"

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

// TestWaitReadyPortTaken: when another server holds the port a process
// was started on (FreeAddr's port was taken before runnel bound it),
// WaitReady must not hand that other server to the test: it starts runnel
// again on a fresh port, and the session reaches runnel's own (empty)
// catalog. Before, the test's first CREATE TABLE failed with 42P07 against
// the other server's table.
func TestWaitReadyPortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the runnel binary")
	}
	other := Start(t)
	Exec(t, other.Connect(t), "CREATE TABLE t (k int PRIMARY KEY)")
	p := startProcessOn(t, BuildBinary(t), ProcessOptions{DataDir: t.TempDir()}, other.Addr)
	p.WaitReady(t, time.Minute)
	if p.Addr == other.Addr || p.restarts == 0 {
		t.Fatalf("WaitReady kept the taken address %s (restarts %d)", p.Addr, p.restarts)
	}
	conn := Connect(t, p.URL())
	Exec(t, conn, "CREATE TABLE t (k int PRIMARY KEY)")
	if owner := listenerOwner(p.Cmd.Process.Pid, p.Addr); owner != ownerSelf {
		t.Fatalf("listenerOwner of runnel's own port = %d; want ownerSelf", owner)
	}
	if owner := listenerOwner(p.Cmd.Process.Pid, other.Addr); owner != ownerOther {
		t.Fatalf("listenerOwner of the in-process server's port = %d; want ownerOther", owner)
	}
}
