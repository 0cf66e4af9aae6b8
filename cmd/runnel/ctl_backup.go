package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/runneldb/runnel/internal/backup"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
)

// ctlBackup runs `runnel ctl backup create|list|restore|delete`
// (internal/backup; docs/operations.md "Backup and restore").
func ctlBackup(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ctl backup "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", os.Getenv("RUNNEL_DATA_DIR"), "data directory (create: to back up; restore: an empty one to restore into)")
	objURL := fs.String("object-store", os.Getenv("RUNNEL_OBJECT_STORE"), "object store URL (default DATA_DIR/objects)")
	metaURL := fs.String("meta-store", os.Getenv("RUNNEL_META_STORE"), "metadata store URL (default DATA_DIR/meta.db)")
	storeURL := fs.String("backup-store", os.Getenv("RUNNEL_BACKUP_STORE"), "backup store: local path or s3://bucket/prefix?endpoint=host:port")
	id := fs.String("id", "", "backup id (restore, delete)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "runnel: backup %s: %v\n", cmd, err)
		return 1
	}
	if *storeURL == "" {
		fmt.Fprintln(stderr, "runnel: backup: --backup-store is required")
		return 2
	}
	ctx := context.Background()
	dst, err := objstore.Open(ctx, *storeURL)
	if err != nil {
		return fail(err)
	}
	// openData opens the data directory's metastore and object store.
	openData := func(create bool) (*metastore.DB, objstore.Store, error) {
		if *dataDir == "" && (*metaURL == "" || *objURL == "") {
			return nil, nil, fmt.Errorf("--data-dir (or both --meta-store and --object-store) is required")
		}
		if *objURL == "" {
			*objURL = filepath.Join(*dataDir, "objects")
		}
		if *metaURL == "" {
			*metaURL = filepath.Join(*dataDir, "meta.db")
		}
		if *dataDir != "" {
			if _, err := os.Stat(*dataDir); err != nil && !create {
				return nil, nil, fmt.Errorf("data directory %s: %w", *dataDir, err)
			}
			if create {
				if err := os.MkdirAll(*dataDir, 0o755); err != nil {
					return nil, nil, err
				}
			}
		}
		db, err := metastore.Open(ctx, *metaURL)
		if err != nil {
			return nil, nil, err
		}
		store, err := objstore.Open(ctx, *objURL)
		if err != nil {
			db.Close()
			return nil, nil, err
		}
		return db, store, nil
	}
	switch cmd {
	case "create":
		db, src, err := openData(false)
		if err != nil {
			return fail(err)
		}
		defer db.Close()
		m, err := backup.Create(ctx, db, src, dst)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "backup %s\n", m.ID)
		return 0
	case "list":
		ms, err := backup.List(ctx, dst)
		if err != nil {
			return fail(err)
		}
		for _, m := range ms {
			fmt.Fprintf(stdout, "%s  epoch %d  version %d  %d objects  %d bytes  created %s\n",
				m.ID, m.CommittedEpoch, m.VersionID, len(m.Objects), m.Bytes(), m.Created.Format(time.RFC3339))
		}
		return 0
	case "restore":
		if *id == "" {
			fmt.Fprintln(stderr, "runnel: backup restore: --id is required")
			return 2
		}
		db, objs, err := openData(true)
		if err != nil {
			return fail(err)
		}
		defer db.Close()
		m, err := backup.Restore(ctx, dst, *id, db, objs)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "restored backup %s (committed epoch %d, %d objects)\n", m.ID, m.CommittedEpoch, len(m.Objects))
		return 0
	case "delete":
		if *id == "" {
			fmt.Fprintln(stderr, "runnel: backup delete: --id is required")
			return 2
		}
		// With the data directory, also release a pin a backup cut short
		// left behind (internal/backup's doc).
		if *dataDir != "" || *metaURL != "" {
			if *metaURL == "" {
				*metaURL = filepath.Join(*dataDir, "meta.db")
			}
			db, err := metastore.Open(ctx, *metaURL)
			if err != nil {
				return fail(err)
			}
			err = storage.ReleasePin(ctx, db, *id)
			db.Close()
			if err != nil {
				return fail(err)
			}
		}
		if err := backup.Delete(ctx, dst, *id); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "deleted backup %s\n", *id)
		return 0
	}
	fmt.Fprintf(stderr, "runnel: unknown backup command %q (create, list, restore, delete)\n", cmd)
	return 2
}
