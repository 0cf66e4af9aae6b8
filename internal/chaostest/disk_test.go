package chaostest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// smallDisk mounts a tmpfs of size bytes at a fresh directory and returns
// it with a function that resizes it; the mount is removed when the test
// ends. The test is skipped where mounting is not permitted.
func smallDisk(t *testing.T, size int64) (string, func(int64) error) {
	t.Helper()
	dir := t.TempDir()
	mnt := filepath.Join(dir, "disk")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v %s", mnt, err, out)
		}
	})
	resize := func(n int64) error {
		out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%d", n), mnt).CombinedOutput()
		if err != nil {
			return fmt.Errorf("remount %s: %v %s", mnt, err, out)
		}
		return nil
	}
	return mnt, resize
}

// TestDiskFull fills the data directory's disk (local object store and
// SQLite metadata on one small tmpfs) under writes. Runnel must stay up,
// fail the writes that cannot be made durable with SQLSTATE 53100
// (disk_full, as PostgreSQL does), keep every acknowledged row, and
// commit again by itself once space is back.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	disk, resize := smallDisk(t, 16<<20)
	bin := os.Getenv("RUNNEL_CHAOS_BIN")
	if bin == "" {
		bin = servertest.BuildBinary(t)
	}
	logPath := filepath.Join(t.TempDir(), "runnel.log")
	dataDir := filepath.Join(disk, "data")
	p := servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: dataDir, LogPath: logPath})
	p.WaitReady(t, healLimit)
	defer func() {
		if t.Failed() {
			t.Logf("runnel log %s:\n%s", logPath, servertest.Tail(logPath))
		}
	}()
	ctx := context.Background()
	url := p.URL() + "&implicit_flush=true"
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Close(ctx) }()
	for _, q := range []string{
		"CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)",
		"CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(length(v)) AS s FROM t",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// Fill the disk: 2,000 rows of ~1 KiB per statement, until a write fails.
	var acked []int64 // first key of each acknowledged batch
	var failures []string
	next := int64(0)
	insert := func() error {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := conn.Exec(sctx, "INSERT INTO t SELECT k, repeat(md5(k::text), 32) FROM generate_series($1::bigint, $2::bigint) k", next, next+1999)
		if err == nil {
			acked = append(acked, next)
		}
		next += 2000
		return err
	}
	for i := 0; i < 200 && len(failures) < 3; i++ {
		err := insert()
		if err == nil {
			continue
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("write on a full disk: %v (want a SQL error, the session must survive)", err)
		}
		if p.Exited() {
			t.Fatalf("runnel died on a full disk: %v", p.WaitErr())
		}
		failures = append(failures, pe.Code+" "+pe.Message+" ("+pe.Detail+")")
		if pe.Code != "53100" {
			t.Errorf("write on a full disk failed with %s %q (%s); want 53100 (disk_full)", pe.Code, pe.Message, pe.Detail)
		}
	}
	if len(failures) == 0 {
		t.Fatalf("the disk never filled (%d rows written)", next)
	}
	t.Logf("disk full after %d acknowledged batches; errors: %q", len(acked), failures)

	// Space comes back: writes must be acknowledged again without a restart.
	if err := resize(512 << 20); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	for {
		if err := insert(); err == nil {
			break
		} else if time.Since(healed) > healLimit {
			t.Fatalf("no write acknowledged within %v after space returned: %v", healLimit, err)
		}
		if p.Exited() {
			t.Fatalf("runnel died: %v", p.WaitErr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("writes acknowledged again %v after space returned", time.Since(healed).Round(time.Millisecond))

	check := func(conn *pgx.Conn) {
		t.Helper()
		for _, lo := range acked {
			var n int64
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM t WHERE k BETWEEN $1 AND $2", lo, lo+1999).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 2000 {
				t.Errorf("acknowledged batch at %d has %d of 2000 rows", lo, n)
			}
		}
		var view, want string
		if err := conn.QueryRow(ctx, "SELECT n || ',' || s FROM total").Scan(&view); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, "SELECT count(*) || ',' || sum(length(v)) FROM t").Scan(&want); err != nil {
			t.Fatal(err)
		}
		if view != want {
			t.Errorf("view total = %s, its query gives %s", view, want)
		}
	}
	check(conn)
	conn.Close(ctx)

	// A clean stop and restart keep everything; every object is owned (I1).
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := servertest.ExitedCleanly(p.WaitErr()); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	if out, err := exec.Command(bin, "ctl", "storage", "check", "--data-dir", dataDir).CombinedOutput(); err != nil {
		t.Errorf("runnel ctl storage check: %v\n%s", err, out)
	}
	p = servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: dataDir, LogPath: logPath})
	p.WaitReady(t, healLimit)
	conn, err = pgx.Connect(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	check(conn)
}
