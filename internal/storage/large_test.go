package storage

import (
	"context"
	"encoding/binary"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

// peakRSS reads VmHWM (peak resident set) from /proc.
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM")
	return 0
}

// TestLargeIngestMemory ingests RUNNEL_STORAGE_LARGE_KEYS keys (e.g.
// 10000000) with 100-byte values into one epoch, in batches of 10k as state
// tables hand them over, commits, compacts L0 away and reads a sample back.
// Peak RSS must stay below 1 GiB: the write buffer spills to SSTs early.
// Skipped unless the variable is set (it takes minutes).
func TestLargeIngestMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RUNNEL_STORAGE_LARGE_KEYS"))
	if n <= 0 {
		t.Skip("set RUNNEL_STORAGE_LARGE_KEYS=10000000 to run")
	}
	ctx := context.Background()
	store, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	meta := openMeta(t)
	e, err := Open(ctx, Options{Store: store, Meta: meta, Logger: quietLogger(), DisableAutoCompaction: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	kvs := make([]KV, benchBatch)
	arena := make([]byte, benchBatch*110)
	t0 := time.Now()
	for base := 0; base < n; base += benchBatch {
		m := min(benchBatch, n-base)
		for i := 0; i < m; i++ {
			// Scatter keys: a multiplicative permutation of the id space.
			id := uint64(base+i) * 2654435761 % uint64(n)
			a := arena[i*110 : (i+1)*110]
			binary.BigEndian.PutUint16(a, uint16(id%256))
			binary.BigEndian.PutUint64(a[2:], id)
			for j := 10; j < 110; j++ {
				a[j] = byte('a' + rng.Intn(26))
			}
			kvs[i] = KV{Key: a[:10], Value: a[10:]}
		}
		if err := e.Ingest(1, 1, kvs[:m]); err != nil {
			t.Fatal(err)
		}
	}
	ingest := time.Since(t0)
	if err := e.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	commit := time.Since(t0)
	rssCommit := peakRSS(t)
	for {
		ran, err := e.Compact(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ran || len(e.cur.Levels[0]) == 0 {
			break
		}
	}
	compact := time.Since(t0)
	for i := 0; i < 1000; i++ {
		id := uint64(rng.Intn(n))
		var k [10]byte
		binary.BigEndian.PutUint16(k[:], uint16(id%256))
		binary.BigEndian.PutUint64(k[2:], id)
		if _, ok, err := e.Get(ctx, 1, k[:], 1, ReadOptions{}); err != nil || !ok {
			t.Fatalf("get %d: %v %v", id, ok, err)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := peakRSS(t)
	t.Logf("%d keys: ingest %s, +commit %s, +compaction %s; peak RSS after commit %d MiB, overall %d MiB; L0=%d L1=%d files",
		n, ingest, commit, compact, rssCommit>>20, rss>>20, len(e.cur.Levels[0]), len(e.cur.Levels[1]))
	if rss >= 1<<30 {
		t.Fatalf("peak RSS %d MiB >= 1 GiB", rss>>20)
	}
}
