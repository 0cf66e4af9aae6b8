package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv("PGTEST_HELPER") != "" {
		helperProcess()
		return
	}
	Main(m)
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestNewDatabaseIsolates(t *testing.T) {
	ctx := context.Background()
	a, b := NewDatabase(t), NewDatabase(t)
	if a == b {
		t.Fatalf("NewDatabase returned the same URL twice: %s", a)
	}
	ca, cb := connect(t, a), connect(t, b)
	if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("table created in database a is visible in database b")
	}
	var version string
	if err := ca.QueryRow(ctx, "SHOW server_version_num").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if v, _ := strconv.Atoi(version); v < 150000 {
		t.Logf("note: server version %s is older than 15", version)
	}
	var fsync string
	if err := ca.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil {
		t.Fatal(err)
	}
	if fsync != "off" {
		t.Fatalf("fsync = %s; want off", fsync)
	}
}

func TestNewDatabaseDroppedAtCleanup(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		url := NewDatabase(t)
		name = url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
		connect(t, url) // an open session must not block the drop
	})
	conn := connect(t, Start(t))
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after its test ended", name)
	}
}

func TestSharedIsShared(t *testing.T) {
	if Shared(t) != Shared(t) {
		t.Fatal("Shared returned two different clusters")
	}
}

func TestGoleakOptionsCoverPgtestGoroutines(t *testing.T) {
	Shared(t)
	if err := goleak.Find(append(GoleakOptions(), goleak.IgnoreCurrent())...); err != nil {
		t.Fatalf("goroutines not covered by GoleakOptions: %v", err)
	}
}

func TestStandaloneStopAndReuse(t *testing.T) {
	if _, err := BinDir(); err != nil {
		t.Skip(err)
	}
	// Not t.TempDir: its parent is private to root, out of the postgres
	// user's reach.
	parent, err := os.MkdirTemp("", "pgtest-standalone-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "pg")
	c, err := StartCluster(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	pid := c.PID()
	conn := connect(t, c.URL("postgres"))
	if _, err := conn.Exec(context.Background(), "CREATE TABLE survives (x int); INSERT INTO survives VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if processAlive(pid) {
		t.Fatalf("postmaster %d alive after Stop", pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err != nil {
		t.Fatalf("Stop removed a caller-owned directory: %v", err)
	}

	url, stop, err := StartStandalone(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	conn = connect(t, url)
	var x int
	if err := conn.QueryRow(context.Background(), "SELECT x FROM survives").Scan(&x); err != nil || x != 7 {
		t.Fatalf("reused cluster: x=%d err=%v; want 7", x, err)
	}
}

func TestStandaloneTempDirRemoved(t *testing.T) {
	if _, err := BinDir(); err != nil {
		t.Skip(err)
	}
	c, err := StartCluster("")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir %s still there after Stop (err=%v)", c.Dir, err)
	}
}

// helperProcess starts a cluster, reports it, then dies without cleanup in
// the way PGTEST_HELPER asks.
func helperProcess() {
	c, err := StartCluster("")
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	fmt.Printf("PID %d %s\n", c.PID(), c.Dir)
	os.Stdout.Sync()
	switch os.Getenv("PGTEST_HELPER") {
	case "exit":
		os.Exit(0)
	case "sigkill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "panic":
		panic("helper dies")
	}
	time.Sleep(time.Minute)
}

// TestNoOrphanWhenBinaryDies checks that a test binary that dies without
// stopping its cluster does not leave a postmaster running.
func TestNoOrphanWhenBinaryDies(t *testing.T) {
	if _, err := BinDir(); err != nil {
		t.Skip(err)
	}
	for _, how := range []string{"exit", "sigkill", "panic"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "PGTEST_HELPER="+how)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			cmd.Wait()
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "PID" {
				t.Fatalf("helper said %q", line)
			}
			pid, _ := strconv.Atoi(f[1])
			deadline := time.Now().Add(30 * time.Second)
			for processAlive(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("postmaster %d still alive 30s after its test binary died (%s)", pid, how)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// The next start sweeps the directory the dead binary left.
			sweepStale()
			if _, err := os.Stat(f[2]); !os.IsNotExist(err) {
				t.Fatalf("stale dir %s not swept (err=%v)", f[2], err)
			}
		})
	}
}

func TestDatabaseName(t *testing.T) {
	got := databaseName("TestFoo/sub-case_"+strings.Repeat("x", 80), 12)
	if len(got) > 63 || !strings.HasPrefix(got, "t12_testfoo_sub_case_") {
		t.Fatalf("databaseName = %q", got)
	}
}

func TestSharedLogicalHasLogicalWAL(t *testing.T) {
	ctx := context.Background()
	plain := connect(t, NewDatabase(t))
	logicalDB := connect(t, NewLogicalDatabase(t))
	var a, b string
	if err := plain.QueryRow(ctx, "SHOW wal_level").Scan(&a); err != nil {
		t.Fatal(err)
	}
	if err := logicalDB.QueryRow(ctx, "SHOW wal_level").Scan(&b); err != nil {
		t.Fatal(err)
	}
	if a == "logical" || b != "logical" {
		t.Fatalf("wal_level: Shared %s, SharedLogical %s; want replica, logical", a, b)
	}
}
