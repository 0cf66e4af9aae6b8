package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
)

// ctlMain runs operator tools against a data directory of a stopped (or
// running) server.
func ctlMain(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "storage" {
		fmt.Fprintln(stderr, "usage: runnel ctl storage check|gc|version --data-dir DIR [--grace DURATION]")
		return 2
	}
	cmd := args[1]
	fs := flag.NewFlagSet("ctl storage "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", envOr("RUNNEL_DATA_DIR", "runnel-data"), "data directory")
	objURL := fs.String("object-store", os.Getenv("RUNNEL_OBJECT_STORE"), "object store URL (default DATA_DIR/objects)")
	metaURL := fs.String("meta-store", os.Getenv("RUNNEL_META_STORE"), "metadata store URL (default DATA_DIR/meta.db)")
	grace := fs.Duration("grace", time.Hour, "objects younger than this are never called garbage")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	if *objURL == "" {
		*objURL = filepath.Join(*dataDir, "objects")
	}
	if *metaURL == "" {
		*metaURL = filepath.Join(*dataDir, "meta.db")
	}
	ctx := context.Background()
	db, err := metastore.Open(ctx, *metaURL)
	if err != nil {
		fmt.Fprintln(stderr, "runnel:", err)
		return 1
	}
	defer db.Close()
	store, err := objstore.Open(ctx, *objURL)
	if err != nil {
		fmt.Fprintln(stderr, "runnel:", err)
		return 1
	}
	switch cmd {
	case "check":
		rep, err := storage.Check(ctx, store, db, *grace)
		if err != nil {
			fmt.Fprintln(stderr, "runnel: storage check:", err)
			return 1
		}
		fmt.Fprintln(stdout, rep.Summary())
		if n := rep.Young(); n > 0 {
			fmt.Fprintf(stdout, "%d unowned objects are younger than --grace %s: not violations (a running server may be writing them)\n", n, *grace)
		}
		// I1: the exit status counts only what breaks it whatever a live
		// server is doing (storage.CheckReport.Violations).
		if v := rep.Violations(); len(v) > 0 {
			for _, line := range v {
				fmt.Fprintln(stdout, line)
			}
			return 1
		}
		return 0
	case "gc":
		n, err := storage.FullGC(ctx, store, db, *grace)
		if err != nil {
			fmt.Fprintln(stderr, "runnel: storage gc:", err)
			return 1
		}
		fmt.Fprintf(stdout, "deleted %d unowned objects older than %s\n", n, *grace)
		return 0
	case "version":
		text, err := storage.DescribeVersion(ctx, db)
		if err != nil {
			fmt.Fprintln(stderr, "runnel: storage version:", err)
			return 1
		}
		fmt.Fprint(stdout, text)
		return 0
	}
	fmt.Fprintf(stderr, "runnel: unknown storage command %q (check, gc, version)\n", cmd)
	return 2
}
