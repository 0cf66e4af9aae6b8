package storage

import (
	"testing"

	"go.uber.org/goleak"
)

// noLeaks fails the test if it leaves goroutines behind (compaction jobs,
// GC loops, sstable writers of aborted outputs). Package-wide
// VerifyTestMain is not used: pebble.CheckComparer leaves a writer
// goroutine of its own.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}
