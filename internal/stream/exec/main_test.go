package exec

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must end its executors' goroutines (the multi-input pumps
// exit at the stop barrier or with the actor's context). The pebble SST
// writer's queue worker is the storage engine's (an unclosed writer on an
// error path there), not an executor's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/cockroachdb/pebble/v2/sstable.(*writeQueue).runWorker"))
}
