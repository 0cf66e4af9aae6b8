package storage

import (
	"testing"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"go.uber.org/goleak"
)

// TestMain stops the shared PostgreSQL cluster (started only by tests
// that run the engine on a PostgreSQL metastore).
func TestMain(m *testing.M) { pgtest.Main(m) }

// noLeaks fails the test if it leaves goroutines behind (compaction jobs,
// GC loops, sstable writers of aborted outputs). Package-wide
// VerifyTestMain is not used: pebble.CheckComparer leaves a writer
// goroutine of its own.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}
