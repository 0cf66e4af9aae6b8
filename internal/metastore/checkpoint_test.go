package metastore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/panics"
)

// TestSQLiteCommitsDoNotCheckpoint: a commit never copies the WAL into the
// database file (SQLite's automatic checkpoint made every thousandth page
// cost one commit 50-100 ms); the background checkpointer does, from its
// own connection, and the WAL is then reused from its start. With the
// checkpointer paused, a WAL past SQLite's 1,000-page automatic threshold
// proves no commit checkpointed.
func TestSQLiteCommitsDoNotCheckpoint(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	db, err := openSQLite(ctx, path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := db.ckpt
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
	if _, err := db.Exec(ctx, `CREATE TABLE blobs (k BIGINT PRIMARY KEY, v BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("x"), 16<<10) // 4+ pages per commit
	write := func(n int) {
		t.Helper()
		for i := range n {
			for j := range val { // SQLite skips writing pages that did not change
				val[j] = byte(i + j)
			}
			if err := db.Tx(ctx, func(tx *Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO blobs (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, i%8, val)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	walSize := func() int64 {
		t.Helper()
		st, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	write(400)
	const autoThreshold = 1000 * 4096
	if s := walSize(); s < 3*autoThreshold/2 {
		t.Fatalf("WAL is %d bytes after 400 commits of 16 KiB with the checkpointer paused; want well past %d (no commit checkpoints)", s, autoThreshold)
	}
	c.mu.Lock()
	c.paused = false
	c.mu.Unlock()
	if complete, err := c.checkpoint(ctx); err != nil || !complete {
		t.Fatalf("background checkpoint: complete=%v err=%v", complete, err)
	}
	before := walSize()
	write(100)
	if s := walSize(); s > before {
		t.Fatalf("WAL grew from %d to %d bytes after a complete checkpoint; want it reused from its start", before, s)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM blobs`).Scan(&n); err != nil || n != 8 {
		t.Fatalf("rows: %d %v", n, err)
	}
}

// TestCheckpointerSurvivesPanic: a panicking checkpoint round is logged and
// the next tick checkpoints again (I6); without the recover in loop this
// test binary dies.
func TestCheckpointerSurvivesPanic(t *testing.T) {
	defer panics.Arm(checkpointSite, 2)()
	db, err := openSQLite(context.Background(), filepath.Join(t.TempDir(), "meta.db"), 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		db.ckpt.mu.Lock()
		runs := db.ckpt.runs
		db.ckpt.mu.Unlock()
		if runs >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d checkpoints after two panicked; want the loop to go on", runs)
		}
		time.Sleep(5 * time.Millisecond) // polling a counter, not ordering a race
	}
}
