package storage

import (
	"context"
	"testing"

	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/obs"
)

// TestLogEvents (issue 17 item 7): a compaction logs one compaction event
// and a GC cycle that deletes objects one gc event, with the keys
// docs/operations.md lists and the sizes of the work done.
func TestLogEvents(t *testing.T) {
	ctx := context.Background()
	log, events := obs.NewEventLog()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) { o.InlineMaxBytes = -1; o.Logger = log })
	fillForCompaction(t, e)
	if ran, err := e.Compact(ctx, true); err != nil || !ran {
		t.Fatalf("compaction: ran=%v err=%v", ran, err)
	}
	comp := events.Events(obs.EventCompaction)
	if len(comp) != 1 {
		t.Fatalf("%d compaction events for one compaction; want 1", len(comp))
	}
	c := comp[0]
	for _, k := range []string{"job", "result", "output_level", "inputs", "input_bytes", "outputs", "output_bytes", "duration_seconds"} {
		if _, ok := c[k]; !ok {
			t.Fatalf("compaction event %v lacks %q", c, k)
		}
	}
	if c["result"] != "committed" || c["inputs"] != float64(3) || !(c["input_bytes"].(float64) > 0) || !(c["outputs"].(float64) >= 1) || c["level"] != "INFO" {
		t.Fatalf("compaction event %v; want committed, 3 inputs with bytes, outputs, at INFO", c)
	}
	if n, err := e.RunGC(ctx); err != nil || n != 3 {
		t.Fatalf("GC deleted %d (%v); want the 3 compacted inputs", n, err)
	}
	var gc map[string]any
	for _, ev := range events.Events(obs.EventGC) {
		if ev["deleted"] == float64(3) {
			gc = ev
		}
	}
	if gc == nil || gc["queued"] != float64(3) || gc["level"] != "INFO" {
		t.Fatalf("gc events %v; want one at INFO with deleted 3, queued 3", events.Events(obs.EventGC))
	}
	if _, ok := gc["duration_seconds"]; !ok {
		t.Fatalf("gc event %v lacks duration_seconds", gc)
	}
}
