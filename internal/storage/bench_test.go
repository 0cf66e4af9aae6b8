package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runneldb/runnel/internal/objstore"
)

// Benchmarks run the same workload on Runnel's engine and on a pebble.DB
// (in-memory vfs; Runnel on the in-memory object store) in the same run
// and report the ratio runnel/pebble of throughputs (>1: Runnel faster).
// RUNNEL_BENCH_KEYS sets N (default 200k; 10000000 for the 10 M run).

func benchKeys() int {
	if v := os.Getenv("RUNNEL_BENCH_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil && n > 0 {
			return n
		}
	}
	return 200_000
}

const benchBatch = 10_000

// benchRest is vnode(2) | 8-byte id, as a state table would write.
func benchRest(dst []byte, i uint64) []byte {
	dst = binary.BigEndian.AppendUint16(dst[:0], uint16(i%256))
	return binary.BigEndian.AppendUint64(dst, i)
}

func benchValue(rng *rand.Rand, buf []byte) []byte {
	buf = buf[:100]
	for i := range buf {
		buf[i] = byte('a' + rng.Intn(26))
	}
	return buf
}

// countingStore counts bytes written (write amplification).
type countingStore struct {
	objstore.Store
	put atomic.Int64
}

func (c *countingStore) Put(ctx context.Context, key string, data []byte) error {
	c.put.Add(int64(len(data)))
	return c.Store.Put(ctx, key, data)
}

func openBenchRunnel(b *testing.B, auto bool) (*Engine, *countingStore) {
	store := &countingStore{Store: objstore.NewMem()}
	meta := openMeta(b)
	e, err := Open(context.Background(), Options{Store: store, Meta: meta, DisableAutoCompaction: !auto, GCInterval: -1, Logger: quietLogger(), BlockCacheBytes: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	if err := e.RegisterTables(context.Background(), 1); err != nil {
		b.Fatal(err)
	}
	return e, store
}

func openBenchPebble(b *testing.B, auto bool) *pebble.DB {
	opts := &pebble.Options{FS: vfs.NewMem(), Cache: pebble.NewCache(256 << 20), DisableWAL: true, MemTableSize: 64 << 20, L0StopWritesThreshold: 1000}
	_ = auto
	for l := range opts.Levels {
		opts.Levels[l].FilterPolicy = bloom.FilterPolicy(10)
		opts.Levels[l].Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
	}
	opts.EnsureDefaults()
	db, err := pebble.Open("", opts)
	if err != nil {
		b.Fatal(err)
	}
	opts.Cache.Unref()
	b.Cleanup(func() { closePebble(db) })
	return db
}

var closedPebbles sync.Map

// closePebble closes db once (pebble panics on a second Close).
func closePebble(db *pebble.DB) {
	if _, done := closedPebbles.LoadOrStore(db, true); !done {
		db.Close()
	}
}

// ingestRunnel writes n keys (random order) at one epoch and commits.
func ingestRunnel(b *testing.B, e *Engine, n int, epoch uint64, keyspace int, seed int64) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(seed))
	perm := rng.Perm(keyspace)[:n]
	kvs := make([]KV, 0, benchBatch)
	arena := make([]byte, 0, benchBatch*120)
	vbuf := make([]byte, 100)
	for i, id := range perm {
		off := len(arena)
		arena = binary.BigEndian.AppendUint16(arena, uint16(id%256))
		arena = binary.BigEndian.AppendUint64(arena, uint64(id))
		voff := len(arena)
		arena = append(arena, benchValue(rng, vbuf)...)
		kvs = append(kvs, KV{Key: arena[off : off+10], Value: arena[voff:]})
		if len(kvs) == benchBatch || i == len(perm)-1 {
			if err := e.Ingest(epoch, 1, kvs); err != nil {
				b.Fatal(err)
			}
			kvs, arena = kvs[:0], arena[:0]
		}
	}
	if err := e.Commit(ctx, epoch); err != nil {
		b.Fatal(err)
	}
}

func ingestPebble(b *testing.B, db *pebble.DB, n int, keyspace int, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	perm := rng.Perm(keyspace)[:n]
	batch := db.NewBatch()
	key := make([]byte, 0, 16)
	vbuf := make([]byte, 100)
	for i, id := range perm {
		key = appendPrefix(key[:0], 1, benchRest(nil, uint64(id)))
		if err := batch.Set(key, benchValue(rng, vbuf), nil); err != nil {
			b.Fatal(err)
		}
		if batch.Count() == benchBatch || i == len(perm)-1 {
			if err := batch.Commit(pebble.NoSync); err != nil {
				b.Fatal(err)
			}
			batch = db.NewBatch()
		}
	}
	// Durable in SSTs, as Runnel's Commit is.
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
}

func reportRatio(b *testing.B, what string, runnel, peer time.Duration, ops int) {
	rk := float64(ops) / runnel.Seconds()
	pk := float64(ops) / peer.Seconds()
	b.ReportMetric(rk, "runnel_"+what+"/s")
	b.ReportMetric(pk, "pebble_"+what+"/s")
	b.ReportMetric(rk/pk, "ratio")
	b.Logf("%s: runnel %.0f/s, pebble %.0f/s, ratio %.2f (n=%d)", what, rk, pk, rk/pk, ops)
}

// BenchmarkPebbleIngest: one epoch of N keys with 100-byte values, made
// durable (Runnel: Ingest+Commit to the object store; Pebble: batches +
// Flush to SSTs, WAL off).
func BenchmarkPebbleIngest(b *testing.B) {
	n := benchKeys()
	for i := 0; i < b.N; i++ {
		// Alternate the engines and keep each one's best round: the
		// machine is shared, so a single pass mostly measures the load.
		rt, pt := time.Duration(1<<62), time.Duration(1<<62)
		for round := 0; round < benchRounds(); round++ {
			e, _ := openBenchRunnel(b, false)
			t0 := time.Now()
			ingestRunnel(b, e, n, 1, n, 1)
			rt = min(rt, time.Since(t0))
			e.Close()
			db := openBenchPebble(b, false)
			t0 = time.Now()
			ingestPebble(b, db, n, n, 1)
			pt = min(pt, time.Since(t0))
			closePebble(db)
		}
		reportRatio(b, "keys", rt, pt, n)
	}
}

// benchRounds: alternating rounds per engine (RUNNEL_BENCH_ROUNDS, default 3).
func benchRounds() int {
	if v, err := strconv.Atoi(os.Getenv("RUNNEL_BENCH_ROUNDS")); err == nil && v > 0 {
		return v
	}
	return 3
}

// loaded opens both engines with N keys compacted into one level.
func loaded(b *testing.B, n int) (*Engine, *pebble.DB) {
	e, _ := openBenchRunnel(b, false)
	ingestRunnel(b, e, n, 1, n, 1)
	for {
		ran, err := e.Compact(context.Background(), true)
		if err != nil {
			b.Fatal(err)
		}
		if !ran || len(e.cur.Levels[0]) == 0 {
			break
		}
	}
	db := openBenchPebble(b, false)
	ingestPebble(b, db, n, n, 1)
	if err := db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		b.Fatal(err)
	}
	return e, db
}

// BenchmarkPebbleGet: random point reads of existing keys (warm cache).
func BenchmarkPebbleGet(b *testing.B) {
	n := benchKeys()
	e, db := loaded(b, n)
	ctx := context.Background()
	const lookups = 100_000
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rt, pt := time.Duration(1<<62), time.Duration(1<<62)
		for round := 0; round < benchRounds()+1; round++ { // round 0 warms the caches
			rng := rand.New(rand.NewSource(int64(round)))
			var rest []byte
			t0 := time.Now()
			for j := 0; j < lookups; j++ {
				rest = benchRest(rest, uint64(rng.Intn(n)))
				if _, ok, err := e.Get(ctx, 1, rest, 1, ReadOptions{}); err != nil || !ok {
					b.Fatalf("get: %v %v", ok, err)
				}
			}
			if round > 0 {
				rt = min(rt, time.Since(t0))
			}
			rng = rand.New(rand.NewSource(int64(round)))
			var key []byte
			t0 = time.Now()
			for j := 0; j < lookups; j++ {
				key = appendPrefix(key[:0], 1, benchRest(rest, uint64(rng.Intn(n))))
				_, closer, err := db.Get(key)
				if err != nil {
					b.Fatal(err)
				}
				closer.Close()
			}
			if round > 0 {
				pt = min(pt, time.Since(t0))
			}
		}
		reportRatio(b, "gets", rt, pt, lookups)
	}
}

// BenchmarkPebbleScan: a full forward scan of the table.
func BenchmarkPebbleScan(b *testing.B) {
	n := benchKeys()
	e, db := loaded(b, n)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rt, pt := time.Duration(1<<62), time.Duration(1<<62)
		for round := 0; round < benchRounds()+1; round++ { // round 0 warms the caches
			t0 := time.Now()
			it, err := e.Iter(ctx, 1, nil, nil, 1, ReadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			c := 0
			for it.Next() {
				c++
			}
			if it.Err() != nil || c != n {
				b.Fatalf("runnel scan: %d keys, %v", c, it.Err())
			}
			it.Close()
			if round > 0 {
				rt = min(rt, time.Since(t0))
			}
			t0 = time.Now()
			pit, err := db.NewIter(&pebble.IterOptions{LowerBound: appendPrefix(nil, 1, nil), UpperBound: appendPrefix(nil, 2, nil)})
			if err != nil {
				b.Fatal(err)
			}
			c = 0
			for pit.First(); pit.Valid(); pit.Next() {
				_ = pit.Value()
				c++
			}
			pit.Close()
			if c != n {
				b.Fatalf("pebble scan: %d keys", c)
			}
			if round > 0 {
				pt = min(pt, time.Since(t0))
			}
		}
		reportRatio(b, "scanned", rt, pt, n)
	}
}

// BenchmarkPebbleCompactionWriteAmp: 20 epochs each overwriting N/10
// random keys of a key space of N/2, background compaction on; reports
// bytes written to storage per byte ingested for both engines.
func BenchmarkPebbleCompactionWriteAmp(b *testing.B) {
	n := benchKeys()
	for i := 0; i < b.N; i++ {
		e, store := openBenchRunnel(b, true)
		e.opts.TargetFileSize = 4 << 20
		e.opts.LevelBaseBytes = 16 << 20
		db := openBenchPebble(b, true)
		per := n / 10
		raw := int64(0)
		t0 := time.Now()
		for ep := 1; ep <= 20; ep++ {
			ingestRunnel(b, e, per, uint64(ep), n/2, int64(ep))
			raw += int64(per) * 110
		}
		// Let background compaction settle.
		for len(e.Compactions()) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		rt := time.Since(t0)
		t0 = time.Now()
		for ep := 1; ep <= 20; ep++ {
			ingestPebble(b, db, per, n/2, int64(ep))
		}
		pt := time.Since(t0)
		m := db.Metrics()
		tot := m.Total()
		pw := float64(tot.TableBytesFlushed+tot.TableBytesCompacted) / float64(raw)
		rw := float64(store.put.Load()) / float64(raw)
		b.ReportMetric(rw, "runnel_wa")
		b.ReportMetric(pw, "pebble_wa")
		b.ReportMetric(pw/rw, "ratio")
		b.Logf("write amp: runnel %.2f (%s), pebble %.2f (%s); ingested %d MB", rw, rt, pw, pt, raw>>20)
		_ = fmt.Sprint
	}
}

// BenchmarkSmallCommit: the latency of making one small write durable —
// what a single-row UPDATE + FLUSH costs the state store. Runnel commits
// an epoch of one key to a local-directory object store with the SQLite
// metastore (both fsync); Pebble commits a one-key batch with a synced
// WAL on the same disk.
func BenchmarkSmallCommit(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	store, err := objstore.NewLocal(dir + "/objects")
	if err != nil {
		b.Fatal(err)
	}
	meta := openMeta(b)
	e, err := Open(ctx, Options{Store: store, Meta: meta, DisableAutoCompaction: true, GCInterval: -1, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	if err := e.RegisterTables(ctx, 1); err != nil {
		b.Fatal(err)
	}
	db, err := pebble.Open(dir+"/pebble", &pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { closePebble(db) })
	rng := rand.New(rand.NewSource(1))
	vbuf := make([]byte, 100)
	const warm = 20
	var rt, pt time.Duration
	epoch := uint64(1)
	for i := range b.N + warm {
		key := benchRest(nil, uint64(rng.Intn(1_000_000)))
		val := benchValue(rng, vbuf)
		t0 := time.Now()
		if err := e.Ingest(epoch, 1, []KV{{Key: key, Value: val}}); err != nil {
			b.Fatal(err)
		}
		if err := e.Commit(ctx, epoch); err != nil {
			b.Fatal(err)
		}
		epoch++
		t1 := time.Now()
		if err := db.Set(appendPrefix(nil, 1, key), val, pebble.Sync); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if i >= warm {
			rt += t1.Sub(t0)
			pt += t2.Sub(t1)
		}
		if i%64 == 63 {
			// Keep L0 from growing without bound, as the background
			// compactions of a server would.
			if _, err := e.Compact(ctx, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rt.Microseconds())/float64(b.N), "runnel_us/commit")
	b.ReportMetric(float64(pt.Microseconds())/float64(b.N), "pebble_us/commit")
	b.ReportMetric(float64(pt)/float64(rt), "ratio")
	b.Logf("small commit: runnel %v, pebble (synced WAL) %v per commit, ratio %.2f (n=%d)", rt/time.Duration(b.N), pt/time.Duration(b.N), float64(pt)/float64(rt), b.N)
}
