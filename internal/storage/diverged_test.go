package storage

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/objstore"
)

// The chaos campaign's open defect: the metastore comes back with a
// version behind the engine's (a restore, a standby promoted without the
// last commits). Every commit then failed with "version head is N, delta
// M expects K" and recovery retried forever. Now the engine stops writing
// for good with ErrMetastoreDiverged naming both versions (reloading in
// place would drop acknowledged epochs, I7, and could reference objects GC
// deleted on the strength of the lost deltas, I1): later metastore writes
// fail at once with the same error and GC does nothing.
func TestMetastoreBehindStopsWrites(t *testing.T) {
	ctx := context.Background()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, nil)
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for ep := uint64(10); ep <= 12; ep++ {
		if err := e.Ingest(ep, 1, []KV{{Key: k(int(ep)), Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	// The metastore loses the last commit (as a restore from a backup
	// taken one commit earlier would).
	if _, err := meta.Exec(ctx, `UPDATE storage_counters SET value = value - 1 WHERE name = 'version_id'`); err != nil {
		t.Fatal(err)
	}
	if err := e.Ingest(13, 1, []KV{{Key: k(13), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	err := e.Commit(ctx, 13)
	if !errors.Is(err, ErrMetastoreDiverged) || !strings.Contains(err.Error(), "lost commits that were acknowledged") {
		t.Fatalf("commit against a metastore one version behind: %v; want ErrMetastoreDiverged saying commits were lost", err)
	}
	if err := e.Commit(ctx, 13); !errors.Is(err, ErrMetastoreDiverged) {
		t.Fatalf("second commit: %v; want ErrMetastoreDiverged again", err)
	}
	if err := e.RegisterTables(ctx, 2); !errors.Is(err, ErrMetastoreDiverged) {
		t.Fatalf("a metastore write after the divergence: %v; want ErrMetastoreDiverged", err)
	}
	if n, err := e.RunGC(ctx); n != 0 || err != nil {
		t.Fatalf("GC after the divergence: deleted %d, %v; want nothing done", n, err)
	}
	if e.CommittedEpoch() != 12 {
		t.Fatalf("committed epoch %d; want 12 (nothing reloaded)", e.CommittedEpoch())
	}
}

// I3, I7: after FenceWritesBelow(e), writes of earlier epochs (an actor
// generation a recovery abandoned) are refused; later ones are not.
func TestFenceWritesBelow(t *testing.T) {
	e := openEngine(t, objstore.NewMem(), openMeta(t), nil)
	if err := e.RegisterTables(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.FenceWritesBelow(100)
	e.FenceWritesBelow(50) // never lowered
	if err := e.Ingest(99, 1, []KV{{Key: k(1), Value: []byte("late")}}); !errors.Is(err, ErrWriteFenced) {
		t.Fatalf("ingest below the fence: %v; want ErrWriteFenced", err)
	}
	if err := e.Ingest(100, 1, []KV{{Key: k(1), Value: []byte("new")}}); err != nil {
		t.Fatalf("ingest at the fence: %v", err)
	}
}
