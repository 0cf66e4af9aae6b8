package meta

import (
	"context"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/stream"
)

// hasKeys fails unless ev carries every key.
func hasKeys(t *testing.T, ev map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := ev[k]; !ok {
			t.Fatalf("event %v lacks key %q", ev, k)
		}
	}
}

// TestLogEvents (issue 17 item 7): a recovery logs one recovery event and
// a barrier round slower than the threshold one slow_barrier event, with
// the keys docs/operations.md lists.
func TestLogEvents(t *testing.T) {
	log, events := obs.NewEventLog()
	store := &fakeStore{}
	actors := stream.NewBarrierManager(nil)
	loop := NewBarrierLoop(log, time.Hour, actors, store)
	loop.SetRebuilder(rebuildFunc(func(context.Context, uint64) error { return nil }))
	spawnSource(actors)
	loop.Start()
	defer loop.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := loop.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(events.Events(obs.EventSlowBarrier)); n != 0 {
		t.Fatalf("%d slow_barrier events under the default threshold of %s", n, DefaultSlowBarrier(time.Hour))
	}
	loop.SetSlowBarrierThreshold(time.Nanosecond)
	if err := loop.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	slow := events.Events(obs.EventSlowBarrier)
	if len(slow) == 0 {
		t.Fatal("no slow_barrier event for a barrier slower than 1ns")
	}
	hasKeys(t, slow[0], "level", "msg", "epoch", "inject_seconds", "collect_seconds", "commit_seconds", "total_seconds", "threshold_seconds")
	if slow[0]["level"] != "WARN" || slow[0]["msg"] != obs.EventSlowBarrier {
		t.Fatalf("slow_barrier event %v; want level WARN, msg slow_barrier", slow[0])
	}
	if err := loop.Recover(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	rec := events.Events(obs.EventRecovery)
	if len(rec) != 1 {
		t.Fatalf("%d recovery events for one RECOVER; want 1", len(rec))
	}
	hasKeys(t, rec[0], "reason", "reason_class", "scope", "database", "result", "reset_seconds", "rebuild_seconds", "epoch")
	if rec[0]["reason"] != "test" || rec[0]["scope"] != "all" || rec[0]["result"] != "ok" || rec[0]["level"] != "INFO" {
		t.Fatalf("recovery event %v; want reason test, scope all, result ok at INFO", rec[0])
	}
}
