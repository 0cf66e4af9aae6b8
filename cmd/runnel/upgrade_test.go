package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// schemaVersions is the newest applied step per metastore component.
func schemaVersions(t *testing.T, metaPath string) map[string]int {
	t.Helper()
	db, err := metastore.Open(context.Background(), metaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	applied, err := db.AppliedMigrations(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, a := range applied {
		out[a.Component] = max(out[a.Component], a.Version)
	}
	return out
}

// TestUpgradeFromOlderFormat (issue 17 item 6): today's binary opens a
// data directory an older runnel wrote (testdata/upgrade: storage schema
// step 2, no catalog schema step, no stored view layouts; README.md there
// says how it was made), migrates it, answers what the old binary
// answered, keeps maintaining its view, and leaves `ctl storage check`
// clean. A data directory a newer runnel wrote is refused with a message
// saying so, for the metastore schema and for the version format alike.
func TestUpgradeFromOlderFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dir, os.DirFS("testdata/upgrade/datadir-e1af516")); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, "meta.db")
	if got := schemaVersions(t, meta); got["storage"] != 2 || got["catalog"] != 0 {
		t.Fatalf("fixture schema %v; want storage at step 2 and no catalog step", got)
	}
	s := servertest.Start(t, servertest.WithDataDir(dir))
	conn := s.Connect(t)
	if got := servertest.QueryText(t, conn, `SELECT count(*), sum(amount) FROM orders`); !slices.Equal(got, []string{"1800|89855"}) {
		t.Fatalf("orders after the upgrade: %v; want 1800|89855 as the old binary answered", got)
	}
	view := servertest.QueryText(t, conn, `SELECT customer, n, total FROM by_customer ORDER BY customer`)
	if len(view) != 13 || view[0] != "customer-0|138|7513" || view[12] != "customer-9|139|7033" {
		t.Fatalf("by_customer after the upgrade: %v", view)
	}
	servertest.Exec(t, conn, `INSERT INTO orders VALUES (5000, 'customer-0', 1000)`)
	servertest.Exec(t, conn, `FLUSH`)
	if got := servertest.QueryText(t, conn, `SELECT n, total FROM by_customer WHERE customer = 'customer-0'`); !slices.Equal(got, []string{"139|8513"}) {
		t.Fatalf("by_customer after an insert: %v; want 139|8513", got)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	// Every step this binary knows has run: the newest of each component.
	wantStorage := storage.Migrations()[len(storage.Migrations())-1].Version
	wantCatalog := catalog.Migrations()[len(catalog.Migrations())-1].Version
	if got := schemaVersions(t, meta); got["storage"] != wantStorage || got["catalog"] != wantCatalog {
		t.Fatalf("schema after the upgrade %v; want storage at step %d, catalog at %d", got, wantStorage, wantCatalog)
	}
	if code, out := ctl("storage", "check", "--data-dir", dir, "--grace", "0s"); code != 0 {
		t.Fatalf("storage check after the upgrade: exit %d\n%s", code, out)
	}

	// Newer than this binary: refused, never half-read.
	ctx := context.Background()
	open := func() error {
		srv, err := server.Open(ctx, server.Config{DataDir: dir, Logger: servertest.Logger()})
		if err == nil {
			srv.Close()
		}
		return err
	}
	db, err := metastore.Open(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, `INSERT INTO runnel_schema_migrations (component, version, name, checksum, applied_ms) VALUES ('storage', 99, 'from the future', 'x', 0)`); err != nil {
		t.Fatal(err)
	}
	if err := open(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("storage is at version 99, newer than this binary knows (%d): a newer runnel wrote it", wantStorage)) {
		t.Fatalf("open with a newer metastore schema: %v", err)
	}
	if _, err := db.Exec(ctx, `DELETE FROM runnel_schema_migrations WHERE version = 99`); err != nil {
		t.Fatal(err)
	}
	// The newest stored version record (a delta, or the checkpoint when
	// no delta follows it) in a format from the future.
	table := "storage_deltas"
	var id int64
	var data []byte
	if err := db.QueryRow(ctx, `SELECT id, data FROM storage_deltas ORDER BY id DESC LIMIT 1`).Scan(&id, &data); err != nil {
		table = "storage_checkpoints"
		if err := db.QueryRow(ctx, `SELECT id, data FROM storage_checkpoints ORDER BY id DESC LIMIT 1`).Scan(&id, &data); err != nil {
			t.Fatal(err)
		}
	}
	if data[0] != 3 {
		t.Fatalf("%s %d starts with format %d; want 3", table, id, data[0])
	}
	data[0] = 9
	if _, err := db.Exec(ctx, `UPDATE `+table+` SET data = $1 WHERE id = $2`, data, id); err != nil {
		t.Fatal(err)
	}
	if err := open(); err == nil || !strings.Contains(err.Error(), "in format 9, newer than this runnel reads (1-4): written by a newer runnel") {
		t.Fatalf("open with a version record from a newer format: %v", err)
	}
}
