package sinktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestS3SinkRollover: an s3 sink with rollover_seconds = '4' gathers the
// rows of several epochs into one Parquet file (versitygw, read back with
// arrow-go), written once the committed epochs' time is 4 s past the
// file's first epoch. The assertions follow from epoch times alone (an
// epoch carries the wall clock it began at): while less than 4 s have
// passed since before the first INSERT no file can exist, and the inserts
// whose FLUSH returned within those 4 s all land in one file. Every row is
// in the files once.
func TestS3SinkRollover(t *testing.T) {
	s3, bucket, _, rw := startS3Sink(t, ", rollover_seconds = '4'")

	const rollover = 4 * time.Second
	start := time.Now()
	for b := 0; b < 3; b++ {
		insertEv(t, rw, 100*b+1, 100*b+100)
		mustExec(t, rw, "FLUSH")
	}
	flushed := time.Since(start)
	if keys, _ := s3Files(t, s3, bucket, "ev"); time.Since(start) < rollover && len(keys) > 0 {
		t.Fatalf("files %v written within rollover_seconds of the first epoch", keys)
	}
	keys := waitS3Rows(t, s3, bucket, "ev", rowsOf(t, rw, "SELECT * FROM ev"), 30*time.Second)
	if flushed < rollover && len(keys) != 1 {
		t.Fatalf("three epochs committed within rollover_seconds (%v) went to %d files %v, want one", flushed.Round(time.Millisecond), len(keys), keys)
	}
	t.Logf("3 epochs in %v: files %v", flushed.Round(time.Millisecond), keys)
}

// TestFileSinkRolloverKeepsLog pins I8 for files that span epochs: the
// epochs a file being built holds stay in the sink's log store (and in its
// backlog) until the file is written, so a crash loses none of them. With
// rollover_seconds = '3600' nothing is written during the test; the 100
// rows stay pending across epochs and across a restart of the server,
// which counts them again from the log, and across a RECOVER (after which
// the worker reads the log from its start). A worker that let the log
// truncate an epoch once handed to the target would show 0 pending and
// lose them.
func TestFileSinkRolloverKeepsLog(t *testing.T) {
	dir := t.TempDir()
	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev (id int, v text) APPEND ONLY")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK ev_fs FROM ev WITH (connector = 'fs', fs.path = '%s', type = 'append-only',
		rollover_seconds = '3600') FORMAT PLAIN ENCODE JSON`, dir))
	mustExec(t, rw, "INSERT INTO ev SELECT i, 'v' || i FROM generate_series(1, 100) g(i)")
	for i := 0; i < 3; i++ {
		mustExec(t, rw, "FLUSH")
	}
	pending := func() int64 {
		var n int64
		if err := rw.QueryRow(context.Background(), "SELECT pending_rows FROM rw_catalog.rw_sinks WHERE name = 'ev_fs'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitPending := func(when string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for pending() != 100 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d rows pending, want the 100 the open file holds", when, pending())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPending("three epochs after the insert")
	// A recovery makes the worker read the log from its start: the open
	// file's epoch is neither truncated nor handed to it twice.
	mustExec(t, rw, "RECOVER")
	mustExec(t, rw, "FLUSH")
	mustExec(t, rw, "FLUSH")
	waitPending("after a RECOVER")
	srv = srv.Restart(t)
	rw = srv.Connect(t)
	waitPending("after a restart")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".tmp-") {
			t.Fatalf("file %s written within rollover_seconds", e.Name())
		}
	}
}

// TestS3SinkRolloverRedelivery: the server stops right after a file that
// spans epochs was written and before those epochs were released for
// truncation from the log (a test hook holds the worker there). The
// restarted server hands the target the same epochs again; the file they
// make starts at the same epoch, so it has the same name and replaces the
// first one: every row once.
func TestS3SinkRolloverRedelivery(t *testing.T) {
	s3, bucket, srv, rw := startS3Sink(t, ", rollover_seconds = '1'")

	held := holdAfterDelivery(t, "ev_s3")["ev_s3"]
	insertEv(t, rw, 1, 100)
	mustExec(t, rw, "FLUSH")
	insertEv(t, rw, 101, 200)
	mustExec(t, rw, "FLUSH")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the sink wrote no file")
	}
	before, rows := s3Files(t, s3, bucket, "ev")
	if len(before) == 0 || len(rows) == 0 {
		t.Fatalf("after the held write: files %v with %d rows", before, len(rows))
	}
	// Unhooked before the restart: the held workers stay blocked in the
	// hook until the old server stops, and the new server's workers,
	// which deliver the held epoch again at once, must not be held too.
	sink.SetDeliveredHook(nil)
	srv = srv.Restart(t)
	rw = srv.Connect(t)
	insertEv(t, rw, 201, 250)
	mustExec(t, rw, "FLUSH")
	keys := waitS3Rows(t, s3, bucket, "ev", rowsOf(t, rw, "SELECT * FROM ev"), 30*time.Second)
	for _, k := range before {
		if !slices.Contains(keys, k) {
			t.Fatalf("the file %s written before the restart is gone: %v", k, keys)
		}
	}
}

// TestFileSinkRolloverPartsAndRecover: an fs sink with rollover_seconds =
// '6' and max_row_count = '1000' splits the file that spans epochs into
// parts of at most 1,000 rows, all named by the file's first epoch. A
// RECOVER while the file is being built makes the worker read the log from
// its start (a recovery may have lost truncations); it drops the file
// being built and hands the target its epochs again, so each row is in
// the files once (handing them again to the open file would write the
// first epoch's rows twice).
func TestFileSinkRolloverPartsAndRecover(t *testing.T) {
	dir := t.TempDir()
	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev (id int, v text) APPEND ONLY")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK ev_fs FROM ev WITH (connector = 'fs', fs.path = '%s', type = 'append-only',
		rollover_seconds = '6', max_row_count = '1000') FORMAT PLAIN ENCODE JSON`, dir))
	start := time.Now()
	mustExec(t, rw, "INSERT INTO ev SELECT i, 'v' || i FROM generate_series(1, 4500) g(i)")
	mustExec(t, rw, "FLUSH")
	mustExec(t, rw, "RECOVER")
	mustExec(t, rw, "INSERT INTO ev SELECT i, 'v' || i FROM generate_series(4501, 4800) g(i)")
	mustExec(t, rw, "FLUSH")
	flushed := time.Since(start)
	want := rowsOf(t, rw, "SELECT id, v FROM ev")
	name := regexp.MustCompile(`^([0-9]{20})_[0-9]+(_[0-9]+)?\.json$`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got []string
		firsts := map[string]bool{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				continue // a part being written
			}
			m := name.FindStringSubmatch(e.Name())
			if m == nil {
				t.Fatalf("unexpected file %s", e.Name())
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			rows := idvRows(t, e.Name(), data)
			if len(rows) > 1000 {
				t.Fatalf("%s holds %d rows, more than max_row_count", e.Name(), len(rows))
			}
			got = append(got, rows...)
			firsts[m[1]] = true
		}
		slices.Sort(got)
		if len(got) > len(want) {
			t.Fatalf("the files hold %d rows, the table %d: rows written twice", len(got), len(want))
		}
		if slices.Equal(got, want) {
			if flushed < 6*time.Second && len(firsts) != 1 {
				t.Fatalf("two epochs within rollover_seconds (%v) in files of %d first epochs, want one", flushed.Round(time.Millisecond), len(firsts))
			}
			t.Logf("2 epochs and a RECOVER in %v: %d files", flushed.Round(time.Millisecond), len(entries))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the files hold %d rows, want %d once each", len(got), len(want))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
