package metastore

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/panics"
)

// walCheckpointInterval is how often the SQLite WAL is checkpointed in the
// background. A commit writes a handful of pages, so the WAL stays small
// between checkpoints; a PASSIVE checkpoint never blocks the writer.
const walCheckpointInterval = time.Second

// checkpointer copies the SQLite WAL into the database file from its own
// connection (PRAGMA wal_checkpoint(PASSIVE)): writers go on appending to
// the WAL meanwhile, and SQLite restarts the WAL from its beginning once a
// checkpoint has copied everything. Durability does not depend on it —
// a commit is durable once its WAL frames are synced (synchronous FULL).
type checkpointer struct {
	db       *sql.DB
	interval time.Duration
	quit     chan struct{}
	wg       sync.WaitGroup

	mu     sync.Mutex
	paused bool // test hook: no checkpoints while set
	runs   int  // checkpoints completed (tests)
}

func startCheckpointer(db *sql.DB, interval time.Duration) *checkpointer {
	c := &checkpointer{db: db, interval: interval, quit: make(chan struct{})}
	c.wg.Add(1)
	go c.loop()
	return c
}

// checkpointSite names the checkpointer's rounds for panics.Arm.
const checkpointSite = "metastore.checkpoint"

func (c *checkpointer) loop() {
	defer c.wg.Done()
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			// An error (the database busy or closing) is retried at the
			// next tick; the WAL only grows meanwhile. So is a panic: this
			// goroutine is no actor's, and a panic here must not end the
			// process (I6); commits stay durable without checkpoints.
			err := panics.Catch(checkpointSite, func() error {
				_, err := c.checkpoint(context.Background())
				return err
			})
			if pe := (*panics.Error)(nil); errors.As(err, &pe) {
				slog.Error("metastore: WAL checkpoint panicked; retrying at the next tick", "err", err, "stack", string(pe.Stack))
			}
		}
	}
}

// checkpoint runs one PASSIVE checkpoint and reports whether every WAL
// frame is now in the database file.
func (c *checkpointer) checkpoint(ctx context.Context) (complete bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return false, nil
	}
	var busy, logFrames, done int
	if err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done); err != nil {
		return false, err
	}
	c.runs++
	return busy == 0 && done == logFrames, nil
}

func (c *checkpointer) stop() {
	close(c.quit)
	c.wg.Wait()
	// The store's own connection closes last; SQLite checkpoints and
	// removes the WAL then.
	c.db.Close()
}
