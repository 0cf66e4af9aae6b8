package sink

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/panics"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/types"
)

// I6, I9: the worker's goroutine runs the target's code outside any actor.
// A panic in it is a delivery failure: shown in the status, retried after
// the backoff, and the worker delivers again once the cause is gone.
// Without the recovers in run this test binary dies.
func TestWorkerPanicIsADeliveryFailure(t *testing.T) {
	ctx := context.Background()
	db, err := metastore.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := storage.Open(ctx, storage.Options{Store: objstore.NewMem(), Meta: db})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const logTable = 100
	if err := e.RegisterTables(ctx, logTable); err != nil {
		t.Fatal(err)
	}
	disarm := panics.Arm(deliverSite, 1<<30) // panics until disarmed
	defer disarm()
	w := NewWorker(WorkerConfig{Name: "s1", Store: e, LogTable: logTable,
		LogSchema: exec.SinkLogSchema("s1 log", []types.Type{types.Int64}), Columns: []int{0},
		Committed: e.CommittedEpoch, Target: blackhole{}})
	w.Start()
	defer w.Stop()
	waitFor := func(what string, ok func(Status) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok(w.Status()) {
			if time.Now().After(deadline) {
				t.Fatalf("status %+v; want %s", w.Status(), what)
			}
			time.Sleep(5 * time.Millisecond) // polling a status, not ordering a race
		}
	}
	waitFor("the panic as the last error, retried", func(s Status) bool {
		return strings.Contains(s.LastError, "sink.deliver panicked") && s.Retries >= 2
	})
	disarm()
	waitFor("healthy again", func(s Status) bool { return s.LastError == "" && s.Retries == 0 })
}
