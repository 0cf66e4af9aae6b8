package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/backup"
	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/s3test"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// ctl runs `runnel ctl args...` and returns its exit status and output.
func ctl(args ...string) (int, string) {
	var out, errOut strings.Builder
	code := ctlMain(args, &out, &errOut)
	return code, out.String() + errOut.String()
}

// TestBackupRestore (issue 17 item 5): a backup taken while the server
// runs, restored into an empty data directory, shows exactly the data of
// the backed-up epoch — tables and views, and none of what was written
// after — on both metastores and both object stores; the restored server
// keeps working, and `ctl storage check` is clean on the restored and on
// the source data directory after the backup is deleted (I1: the backup's
// pin released, every restored object referenced).
func TestBackupRestore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		postgres bool
		s3       bool
	}{
		{"sqlite-local", false, false},
		{"postgres-s3", true, true},
		{"sqlite-s3", false, true},
		{"postgres-local", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s3 *s3test.Server
			if tc.s3 {
				s3 = s3test.Start(t)
				s3.SetEnv(t)
			}
			// store returns the (meta, objects) URLs of a fresh data
			// directory of this case, and the backup store's URL.
			store := func(name string) (dir, meta, objects string) {
				dir = filepath.Join(t.TempDir(), name)
				meta, objects = filepath.Join(dir, "meta.db"), filepath.Join(dir, "objects")
				if tc.postgres {
					meta = pgtest.NewDatabase(t)
				}
				if tc.s3 {
					objects = s3.URL(s3.NewBucket(t), name)
				}
				return dir, meta, objects
			}
			dirA, metaA, objA := store("a")
			dirB, metaB, objB := store("b")
			backups := filepath.Join(t.TempDir(), "backups")
			if tc.s3 {
				backups = s3.URL(s3.NewBucket(t), "backups")
			}
			with := func(meta, objects string) servertest.Option {
				return servertest.WithConfig(func(c *server.Config) { c.MetaStoreURL, c.ObjectStoreURL = meta, objects })
			}
			a := servertest.Start(t, servertest.WithDataDir(dirA), with(metaA, objA))
			conn := a.Connect(t)
			for _, q := range []string{
				`CREATE TABLE t (k INT PRIMARY KEY, v INT, pad TEXT)`,
				// Enough bytes that commits upload SSTs, not only inline ones.
				`INSERT INTO t SELECT i, i % 7, repeat('x', 40) FROM generate_series(1, 3000) g(i)`,
				`CREATE MATERIALIZED VIEW mv AS SELECT v, count(*) AS n, sum(k) AS s FROM t GROUP BY v`,
				`DELETE FROM t WHERE k % 5 = 0`,
				`FLUSH`,
			} {
				servertest.Exec(t, conn, q)
			}
			const qt, qmv = `SELECT k, v FROM t ORDER BY k`, `SELECT v, n, s FROM mv ORDER BY v`
			wantT, wantMV := servertest.QueryText(t, conn, qt), servertest.QueryText(t, conn, qmv)

			code, out := ctl("backup", "create", "--data-dir", dirA, "--meta-store", metaA, "--object-store", objA, "--backup-store", backups)
			id, ok := strings.CutPrefix(strings.TrimSpace(out), "backup ")
			if code != 0 || !ok {
				t.Fatalf("backup create: exit %d\n%s", code, out)
			}
			// Written after the backup: the restore must not show it.
			for _, q := range []string{
				`INSERT INTO t SELECT i, 100, 'late' FROM generate_series(5001, 5100) g(i)`,
				`UPDATE t SET v = v + 1 WHERE k < 100`,
				`CREATE MATERIALIZED VIEW late AS SELECT count(*) FROM t`,
				`FLUSH`,
			} {
				servertest.Exec(t, conn, q)
			}
			if code, out := ctl("backup", "list", "--backup-store", backups); code != 0 || !strings.HasPrefix(out, id+"  epoch ") || strings.Count(out, "\n") != 1 {
				t.Fatalf("backup list: exit %d\n%s", code, out)
			}
			if code, out := ctl("backup", "restore", "--data-dir", dirB, "--meta-store", metaA, "--object-store", objB, "--backup-store", backups, "--id", id); code != 1 || !strings.Contains(out, "not empty") {
				t.Fatalf("restore into a metastore in use: exit %d; want 1, not empty\n%s", code, out)
			}
			if code, out := ctl("backup", "restore", "--data-dir", dirB, "--meta-store", metaB, "--object-store", objB, "--backup-store", backups, "--id", id); code != 0 {
				t.Fatalf("backup restore: exit %d\n%s", code, out)
			}
			b := servertest.Start(t, servertest.WithDataDir(dirB), with(metaB, objB))
			connB := b.Connect(t)
			if got := servertest.QueryText(t, connB, qt); !slices.Equal(got, wantT) {
				t.Fatalf("restored t: %d rows; want the %d backed up (first %v)", len(got), len(wantT), first(got))
			}
			if got := servertest.QueryText(t, connB, qmv); !slices.Equal(got, wantMV) {
				t.Fatalf("restored mv = %v; want %v", got, wantMV)
			}
			if _, err := servertest.TryQueryText(connB, `SELECT * FROM late`); err == nil {
				t.Fatal("the view created after the backup exists in the restore")
			}
			// The restored server maintains its views.
			servertest.Exec(t, connB, `INSERT INTO t VALUES (100000, 3, 'new')`)
			servertest.Exec(t, connB, `FLUSH`)
			if got := servertest.QueryText(t, connB, `SELECT n FROM mv WHERE v = 3`); len(got) != 1 || got[0] != fmt.Sprint(countV(wantT, "3")+1) {
				t.Fatalf("restored mv after an insert: n = %v; want %d", got, countV(wantT, "3")+1)
			}
			if err := b.Stop(); err != nil {
				t.Fatal(err)
			}
			if code, out := ctl("storage", "check", "--data-dir", dirB, "--meta-store", metaB, "--object-store", objB, "--grace", "0s"); code != 0 {
				t.Fatalf("storage check of the restore: exit %d\n%s", code, out)
			}
			if code, out := ctl("backup", "delete", "--backup-store", backups, "--id", id, "--data-dir", dirA, "--meta-store", metaA); code != 0 {
				t.Fatalf("backup delete: exit %d\n%s", code, out)
			}
			if code, out := ctl("backup", "list", "--backup-store", backups); code != 0 || out != "" {
				t.Fatalf("backup list after delete: exit %d\n%s", code, out)
			}
			if code, out := ctl("storage", "check", "--data-dir", dirA, "--meta-store", metaA, "--object-store", objA); code != 0 || strings.Contains(out, "pins") {
				t.Fatalf("storage check of the source after delete: exit %d\n%s", code, out)
			}
		})
	}
}

func first(rows []string) []string { return rows[:min(3, len(rows))] }

// countV counts rows "k|v" of t whose v is v.
func countV(rows []string, v string) int {
	n := 0
	for _, r := range rows {
		if f := strings.Split(r, "|"); len(f) == 2 && f[1] == v {
			n++
		}
	}
	return n
}

// TestBackupDuringCompactionAndGC (issue 17 item 5): while `ctl backup
// create` copies the SSTs of the version it pinned, the server writes
// more, compaction rewrites every level (retiring the pinned SSTs from the
// live version) and GC runs, fast path and full listing. The copy still
// gets every pinned object (the pin keeps them queued, an owned class,
// I1), the restore equals the backed-up epoch, `ctl storage check` is
// clean on both data directories, and once the backup released its pin
// GC deletes what it held. Without the pin GC deletes the retired SSTs
// under the copy and the backup fails reading them.
func TestBackupDuringCompactionAndGC(t *testing.T) {
	ctx := context.Background()
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	backups := filepath.Join(t.TempDir(), "backups")
	a := servertest.Start(t, servertest.WithDataDir(dirA))
	in := a.Server.Internals()
	conn := a.Connect(t)
	servertest.Exec(t, conn, `CREATE TABLE t (k INT PRIMARY KEY, v INT, pad TEXT)`)
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW mv AS SELECT v, count(*) AS n, sum(k) AS s FROM t GROUP BY v`)
	for i := 0; i < 4; i++ { // several checkpoints: several L0 SSTs to compact
		servertest.Exec(t, conn, fmt.Sprintf(`INSERT INTO t SELECT i, i %% 7, repeat('x', 40) FROM generate_series(%d, %d) g(i)`, i*1500+1, i*1500+1500))
		servertest.Exec(t, conn, `FLUSH`)
	}
	servertest.Exec(t, conn, `DELETE FROM t WHERE k % 5 = 0`)
	servertest.Exec(t, conn, `FLUSH`)
	const qt, qmv = `SELECT k, v FROM t ORDER BY k`, `SELECT v, n, s FROM mv ORDER BY v`
	wantT, wantMV := servertest.QueryText(t, conn, qt), servertest.QueryText(t, conn, qmv)

	var (
		copied     []string
		compacted  int
		gcDuring   int
		hookFailed error
	)
	remove := backup.SetCopyHook(func(key string) {
		copied = append(copied, key)
		if len(copied) != 1 {
			return
		}
		// First object: everything that could take the pinned SSTs away
		// runs now, before the copy reads them.
		servertest.Exec(t, conn, `INSERT INTO t SELECT i, 100, 'late' FROM generate_series(9001, 9400) g(i)`)
		servertest.Exec(t, conn, `UPDATE t SET v = v + 1 WHERE k < 500`)
		servertest.Exec(t, conn, `FLUSH`)
		for i := 0; i < 20; i++ {
			ran, err := in.Store.Compact(ctx, true)
			if err != nil {
				hookFailed = fmt.Errorf("compaction during the copy: %w", err)
				return
			}
			if !ran {
				break
			}
			compacted++
		}
		n, err := in.Store.RunGC(ctx)
		if err != nil {
			hookFailed = fmt.Errorf("GC during the copy: %w", err)
			return
		}
		m, err := in.Store.FullGC(ctx)
		if err != nil {
			hookFailed = fmt.Errorf("full GC during the copy: %w", err)
			return
		}
		gcDuring = n + m
	})
	code, out := ctl("backup", "create", "--data-dir", dirA, "--backup-store", backups)
	remove()
	if hookFailed != nil {
		t.Fatal(hookFailed)
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(out), "backup ")
	if code != 0 || !ok {
		t.Fatalf("backup create with compaction and GC during the copy: exit %d\n%s", code, out)
	}
	if compacted == 0 || len(copied) == 0 {
		t.Fatalf("%d compactions ran during the copy of %d objects; want compactions between the pin and the copy", compacted, len(copied))
	}
	// The version the backup pinned is gone from the live store's
	// version: the pinned SSTs were retired while they were copied.
	live, err := storage.DescribeVersion(ctx, in.Meta)
	if err != nil {
		t.Fatal(err)
	}
	retired := 0
	for _, k := range copied {
		if !strings.Contains(live, k+" ") { // DescribeVersion lists each SST by its key
			retired++
		}
	}
	if retired == 0 {
		t.Fatalf("no copied SST was retired by the compactions during the copy (copied %v; live version %s)", copied, live)
	}
	t.Logf("copied %d SSTs, %d retired by %d compactions during the copy; GC deleted %d objects meanwhile", len(copied), retired, compacted, gcDuring)

	// The backup released its pin: GC may now delete what it held.
	n, err := in.Store.RunGC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n < retired {
		t.Fatalf("GC after the backup deleted %d objects; want at least the %d retired SSTs the pin held", n, retired)
	}
	if code, out := ctl("storage", "check", "--data-dir", dirA); code != 0 {
		t.Fatalf("storage check of the source while it runs: exit %d\n%s", code, out)
	}

	if code, out := ctl("backup", "restore", "--data-dir", dirB, "--backup-store", backups, "--id", id); code != 0 {
		t.Fatalf("backup restore: exit %d\n%s", code, out)
	}
	b := servertest.Start(t, servertest.WithDataDir(dirB))
	connB := b.Connect(t)
	if got := servertest.QueryText(t, connB, qt); !slices.Equal(got, wantT) {
		t.Fatalf("restored t: %d rows; want the %d backed up (first %v)", len(got), len(wantT), first(got))
	}
	if got := servertest.QueryText(t, connB, qmv); !slices.Equal(got, wantMV) {
		t.Fatalf("restored mv = %v; want %v", got, wantMV)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if code, out := ctl("storage", "check", "--data-dir", dirB, "--grace", "0s"); code != 0 {
		t.Fatalf("storage check of the restore: exit %d\n%s", code, out)
	}
}
