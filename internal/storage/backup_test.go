package storage

import (
	"context"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
)

// TestBackupPinHoldsGC: objects a backup pinned stay in the store after a
// compaction removed them from the version and GC ran (I1: they stay
// queued, an owned class), and go once the pin is released. Without
// RunGC's read of storage_backup_pins the first GC pass deletes them.
func TestBackupPinHoldsGC(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) { o.InlineMaxBytes = -1 })
	fillForCompaction(t, e)
	var pinned PinnedVersion
	if err := meta.Tx(ctx, func(tx *metastore.Tx) error {
		var err error
		pinned, err = PinVersion(ctx, tx, "b1", time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(pinned.Objects) != 3 || pinned.CommittedEpoch != 3 {
		t.Fatalf("pinned %+v; want the 3 L0 SSTs of epoch 3", pinned)
	}
	if ran, err := e.Compact(ctx, true); err != nil || !ran {
		t.Fatalf("compaction: ran=%v err=%v", ran, err)
	}
	if n, err := e.RunGC(ctx); err != nil || n != 0 {
		t.Fatalf("GC with a backup pin deleted %d objects (%v); want 0", n, err)
	}
	for _, k := range pinned.Objects {
		if _, err := store.Stat(ctx, k); err != nil {
			t.Fatalf("pinned %s: %v", k, err)
		}
	}
	if r := checkI1(t, store, meta); r.Counts[ClassQueued] != 3 {
		t.Fatalf("pinned objects after compaction: %s; want 3 queued", r.Summary())
	}
	pins, err := BackupPins(ctx, meta)
	if err != nil || pins["b1"] != 3 {
		t.Fatalf("BackupPins = %v, %v; want b1: 3", pins, err)
	}
	if err := ReleasePin(ctx, meta, "b1"); err != nil {
		t.Fatal(err)
	}
	if n, err := e.RunGC(ctx); err != nil || n != 3 {
		t.Fatalf("GC after the release deleted %d (%v); want 3", n, err)
	}
	checkExactlyReferenced(t, store, meta)
}
