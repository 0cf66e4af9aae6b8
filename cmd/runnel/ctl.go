package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
)

// ctlMain runs operator tools against a data directory of a stopped (or
// running) server.
func ctlMain(args []string, stdout, stderr io.Writer) int {
	if len(args) >= 2 && args[0] == "backup" {
		return ctlBackup(args[1], args[2:], stdout, stderr)
	}
	if len(args) < 2 || args[0] != "storage" {
		fmt.Fprintln(stderr, "usage: runnel ctl storage check|gc|version --data-dir DIR [--grace DURATION]")
		fmt.Fprintln(stderr, "       runnel ctl backup create|list|restore|delete --backup-store B ...")
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
		st, err := checkStateTables(ctx, db, *grace, time.Now())
		if err != nil {
			fmt.Fprintln(stderr, "runnel: storage check:", err)
			return 1
		}
		fmt.Fprintln(stdout, st.summary())
		if pins, err := storage.BackupPins(ctx, db); err != nil {
			fmt.Fprintln(stderr, "runnel: storage check:", err)
			return 1
		} else {
			for _, id := range slices.Sorted(maps.Keys(pins)) {
				fmt.Fprintf(stdout, "backup %s pins %d objects (a backup in progress, or one cut short: runnel ctl backup delete --id %s --data-dir releases it)\n", id, pins[id], id)
			}
		}
		if st.young > 0 {
			fmt.Fprintf(stdout, "%d state tables no catalog object owns were registered less than --grace %s ago: not violations\n", st.young, *grace)
		}
		// I1: the exit status counts only what breaks it whatever a live
		// server is doing (storage.CheckReport.Violations); so for state
		// tables (stateCheck.violations).
		if v := append(rep.Violations(), st.violations...); len(v) > 0 {
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

// stateCheck is what ctl storage check finds comparing the catalog with
// the storage version (issue 13 item 6: catalog and state are one truth).
type stateCheck struct {
	tables, owned int
	young         int // unowned tables registered less than --grace ago
	violations    []string
}

func (c stateCheck) summary() string {
	return fmt.Sprintf("state tables: %d registered, %d owned by catalog objects", c.tables, c.owned)
}

// checkStateTables reports registered state tables that no catalog
// object owns (older than grace: a violation) and catalog objects whose
// state tables are not registered. It reads the version, the catalog and
// the version again and retries while the version moved in between: every
// DDL that changes either side commits a version delta with its catalog
// change (one transaction), so equal version ids mean the catalog read
// saw the same DDL as the version read, on SQLite and PostgreSQL alike.
func checkStateTables(ctx context.Context, db *metastore.DB, grace time.Duration, now time.Time) (stateCheck, error) {
	var (
		tables map[storage.TableID]time.Time
		owners map[catalog.TableID]string
	)
	for attempt := 0; ; attempt++ {
		_, before, err := storage.RegisteredTables(ctx, db)
		if err != nil {
			return stateCheck{}, err
		}
		if owners, err = catalog.StateTableOwners(ctx, db); err != nil {
			return stateCheck{}, err
		}
		var after uint64
		if tables, after, err = storage.RegisteredTables(ctx, db); err != nil {
			return stateCheck{}, err
		}
		if before == after {
			break
		}
		if attempt == 20 {
			return stateCheck{}, fmt.Errorf("the storage version kept moving while the catalog was read (%d attempts)", attempt+1)
		}
	}
	c := stateCheck{tables: len(tables), owned: len(owners)}
	var ids []storage.TableID
	for t := range tables {
		ids = append(ids, t)
	}
	slices.Sort(ids)
	for _, t := range ids {
		if _, ok := owners[catalog.TableID(t)]; ok {
			continue
		}
		if at := tables[t]; !at.IsZero() && now.Sub(at) < grace {
			c.young++
			continue
		}
		c.violations = append(c.violations, fmt.Sprintf("state table %d is registered but no catalog object owns it", t))
	}
	var owned []catalog.TableID
	for t := range owners {
		owned = append(owned, t)
	}
	slices.Sort(owned)
	for _, t := range owned {
		if _, ok := tables[storage.TableID(t)]; !ok {
			c.violations = append(c.violations, fmt.Sprintf("state table %d of %s is not registered in the storage version", t, owners[t]))
		}
	}
	return c, nil
}
