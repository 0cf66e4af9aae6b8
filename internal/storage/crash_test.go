package storage

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
)

// Crash consistency with a real process kill: a child process writes and
// commits epochs (with background compaction and GC) and prints "acked E"
// after each Commit returns; the parent SIGKILLs it at a random moment,
// reopens the store and checks that no acknowledged epoch was lost (I7),
// that every object is owned (I1) and that reads equal the model.

const crashKeys = 150

// crashModel: epoch e puts key i when i%5 == e%5 and deletes it when
// (i+e)%13 == 0.
func crashModel(i int, epoch uint64) (string, bool) {
	for e := epoch; e >= 1; e-- {
		if (uint64(i)+e)%13 == 0 {
			return "", false
		}
		if uint64(i)%5 == e%5 {
			return fmt.Sprintf("v%d-%d", e, i), true
		}
	}
	return "", false
}

func crashWrites(epoch uint64) []KV {
	var kvs []KV
	for i := 0; i < crashKeys; i++ {
		switch {
		case (uint64(i)+epoch)%13 == 0:
			kvs = append(kvs, KV{Key: k(i), Delete: true})
		case uint64(i)%5 == epoch%5:
			kvs = append(kvs, KV{Key: k(i), Value: []byte(fmt.Sprintf("v%d-%d", epoch, i))})
		}
	}
	return kvs
}

func crashOptions(dir string, store objstore.Store, meta *metastore.DB) Options {
	return Options{Store: store, Meta: meta, Logger: quietLogger(), TargetFileSize: 2 << 10,
		L0CompactionTrigger: 2, LevelBaseBytes: 8 << 10, WriteBufferBytes: 4 << 10, GCInterval: 5 * time.Millisecond}
}

func openCrashDir(t testing.TB, dir string) (objstore.Store, *metastore.DB) {
	store, err := objstore.NewLocal(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metastore.Open(context.Background(), filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	return store, meta
}

// TestCrashChild is the child process body; it runs only when the parent
// sets RUNNEL_STORAGE_CRASH_DIR.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("RUNNEL_STORAGE_CRASH_DIR")
	if dir == "" {
		t.Skip("child of TestCrashKill")
	}
	ctx := context.Background()
	store, meta := openCrashDir(t, dir)
	e, err := Open(ctx, crashOptions(dir, store, meta))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for ep := e.CommittedEpoch() + 1; ; ep++ {
		kvs := crashWrites(ep)
		half := len(kvs) / 2
		if err := e.Ingest(ep, 1, kvs[:half]); err != nil {
			t.Fatal(err)
		}
		if err := e.Ingest(ep, 1, kvs[half:]); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, ep); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("acked %d\n", ep)
	}
}

func TestCrashKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	seed := rng.Int63()
	if v := os.Getenv("RUNNEL_CRASH_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	rng = rand.New(rand.NewSource(seed))
	t.Logf("seed %d (rerun the same kill schedule: RUNNEL_CRASH_SEED=%d)", seed, seed)
	acked := uint64(0)
	for round := 0; round < 4; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), "RUNNEL_STORAGE_CRASH_DIR="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of acknowledgements plus a random
		// sub-epoch delay, so the kill lands anywhere in a commit, a spill,
		// a compaction or a GC.
		want := 3 + rng.Intn(12)
		sc := bufio.NewScanner(out)
		n := 0
		for n < want && sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "acked" {
				v, _ := strconv.ParseUint(f[1], 10, 64)
				acked = max(acked, v)
				n++
			}
		}
		time.Sleep(time.Duration(rng.Intn(3000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		// Drain: an ack printed before the kill still counts.
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "acked" {
				v, _ := strconv.ParseUint(f[1], 10, 64)
				acked = max(acked, v)
			}
		}
		cmd.Wait()
		if n < want {
			t.Fatalf("seed %d round %d: child exited after %d acks", seed, round, n)
		}
		// Recover and check.
		store, meta := openCrashDir(t, dir)
		r := checkI1(t, store, meta)
		e, err := Open(context.Background(), Options{Store: store, Meta: meta, Logger: quietLogger(), DisableAutoCompaction: true, GCInterval: -1})
		if err != nil {
			t.Fatalf("seed %d: reopen: %v", seed, err)
		}
		got := e.CommittedEpoch()
		if got < acked {
			t.Fatalf("seed %d round %d: committed epoch %d < acknowledged %d (I7)", seed, round, got, acked)
		}
		for i := 0; i < crashKeys; i++ {
			v, ok, err := e.Get(context.Background(), 1, k(i), got, ReadOptions{})
			wv, wok := crashModel(i, got)
			if err != nil || ok != wok || string(v) != wv {
				t.Fatalf("seed %d round %d: key %d at %d: got %q,%v,%v; want %q,%v", seed, round, i, got, v, ok, err, wv, wok)
			}
		}
		if _, err := e.RunGC(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.Close()
		checkExactlyReferenced(t, store, meta)
		t.Logf("round %d: killed after %d acks; committed %d (acked %d); %s", round, n, got, acked, r.Summary())
		meta.Close()
	}
}
