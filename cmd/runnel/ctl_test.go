package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
)

// ctl storage check's exit status honours --grace (I1): an unowned object
// younger than the grace period — a running server's upload listed before
// its job record was read — is reported but is not a violation; once it
// is older, or when a referenced object is missing, the check fails.
func TestCtlStorageCheckGrace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	objects := filepath.Join(dir, "objects")
	store, err := objstore.Open(ctx, objects)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metastore.Open(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := storage.Open(ctx, storage.Options{Store: store, Meta: meta, DisableAutoCompaction: true, GCInterval: -1, InlineMaxBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for ep := uint64(1); ep <= 2; ep++ {
		if err := e.Ingest(ep, 1, []storage.KV{{Key: []byte(fmt.Sprintf("k%d", ep)), Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	meta.Close()

	check := func(grace string) (int, string) {
		var out, errOut strings.Builder
		code := ctlMain([]string{"storage", "check", "--data-dir", dir, "--grace", grace}, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	if code, out := check("1h"); code != 0 {
		t.Fatalf("check of a clean store: exit %d\n%s", code, out)
	}
	// Id 0 is never allocated: below every id watermark, owned by nobody.
	stray := filepath.Join(objects, "sst", "000000000000.sst")
	if err := os.WriteFile(stray, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stray, old, old); err != nil {
		t.Fatal(err)
	}
	if code, out := check("3h"); code != 0 || !strings.Contains(out, "1 unowned objects are younger than --grace") {
		t.Fatalf("check with an unowned object younger than --grace: exit %d; want 0 and a note\n%s", code, out)
	}
	if code, out := check("1h"); code != 1 || !strings.Contains(out, "older than the grace period: sst/000000000000.sst") {
		t.Fatalf("check with an unowned object older than --grace: exit %d; want 1 naming it\n%s", code, out)
	}
	os.Remove(stray)
	ssts, _ := filepath.Glob(filepath.Join(objects, "sst", "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("the commits wrote no object")
	}
	os.Remove(ssts[0])
	if code, out := check("3h"); code != 1 || !strings.Contains(out, "missing: ") {
		t.Fatalf("check with a referenced object missing: exit %d; want 1\n%s", code, out)
	}
}
