package metastore

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSQLiteDiskFullIsENOSPC: a transaction that fails because the
// SQLite file's disk is full matches syscall.ENOSPC, so the server can
// answer 53100 (disk_full) instead of a bare retry code.
func TestSQLiteDiskFullIsENOSPC(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	db, err := Open(bg, filepath.Join(mnt, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(bg, "CREATE TABLE fill (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	blob := []byte(strings.Repeat("x", 64<<10))
	for i := 0; i < 200; i++ {
		err := db.Tx(bg, func(tx *Tx) error {
			_, err := tx.Exec(bg, "INSERT INTO fill VALUES ($1)", blob)
			return err
		})
		if err == nil {
			continue
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("transaction on a full disk failed with %v; want it to match syscall.ENOSPC", err)
		}
		return
	}
	t.Fatalf("wrote %d KiB to a 2 MiB disk without an error", 200*64)
}
