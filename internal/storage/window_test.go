package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

// seriesKey mimics a time-series table's key: a 2-byte series (standing
// for vnode | tags) then the row time (Unix µs, big-endian) and a suffix,
// so one series' rows are contiguous and every window spans all series.
func seriesKey(series int, t time.Time, i int) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(series))
	b = binary.BigEndian.AppendUint64(b, uint64(t.UnixMicro()))
	return fmt.Appendf(b, "-%d", i)
}

func seriesTimeOf(rest []byte) (int64, bool) {
	if len(rest) < 10 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(rest[2:])), true
}

func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RUNNEL_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RUNNEL_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (RUNNEL_TEST_SEED=%d replays)", seed, seed)
		}
	})
	return seed
}

// checkWindowLevel fails unless the window level is partitioned: every
// file holds table 1 only and rows of one window (its time range within
// [start, start+w)), and no leveled file below L0 holds table 1.
func checkWindowLevel(t *testing.T, e *Engine, w time.Duration) {
	t.Helper()
	e.mu.RLock()
	v := e.cur
	e.mu.RUnlock()
	spec := windowSpec{width: w.Microseconds()}
	for _, f := range v.Levels[WindowLevel] {
		r := windowTable(f)
		if r == nil || f.Tables[0] != 1 {
			t.Fatalf("window-level sst %d: tables %v times %+v; want table 1 with a time range", f.ID, f.Tables, f.Times)
		}
		if spec.window(r.Min) != spec.window(r.Max) {
			t.Fatalf("window-level sst %d spans windows: [%s, %s]", f.ID, time.UnixMicro(r.Min).UTC(), time.UnixMicro(r.Max).UTC())
		}
	}
	for l := 1; l < NumLevels; l++ {
		for _, f := range v.Levels[l] {
			if slices.Contains(f.Tables, 1) {
				t.Fatalf("L%d sst %d holds the time-series table: %v", l, f.ID, f.Tables)
			}
		}
	}
}

// TestTimeWindowCompaction: a time-series table's SSTs stay partitioned
// by time window through many commits (overwrites and deletes included),
// compactions (L0->L1 routes its keys to the window level, window
// compactions merge within one window) and reopens (the window level
// survives in deltas and checkpoints, format 4); a plain table shares the
// commits and stays leveled. After every round the table equals a model
// (scans, point reads at the engine and through time-ranged scans), and a
// time-ranged scan opens fewer SSTs than a full one (ReadStats) with the
// same rows in the range. Fails without the routing (table 1's data lands
// in L1 and its files span windows) or the window pick (files pile up).
// Seeded (RUNNEL_TEST_SEED replays).
func TestTimeWindowCompaction(t *testing.T) {
	noLeaks(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	const width = time.Hour
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store, meta := objstore.NewMem(), openMeta(t)
	mod := func(o *Options) {
		uploadOnly(o)
		o.TargetFileSize = 8 << 10
		o.CheckpointEvery = 5
	}
	open := func() *Engine {
		e := openEngine(t, store, meta, mod)
		e.SetRetention(1, &Retention{TimeOf: seriesTimeOf, Window: width})
		return e
	}
	e := open()
	if err := e.RegisterTables(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	plain := map[string]string{}
	var written [][]byte
	epoch := uint64(0)
	for round := range 40 {
		epoch++
		var kvs, kvs2 []KV
		// Rows arrive mostly near "now" (the round's hour), some late.
		now := base.Add(time.Duration(round) * 10 * time.Minute)
		for range 60 + rng.IntN(60) {
			switch {
			case len(written) > 0 && rng.IntN(10) == 0: // delete
				key := written[rng.IntN(len(written))]
				kvs = append(kvs, KV{Key: key, Delete: true})
			case len(written) > 0 && rng.IntN(10) == 0: // overwrite
				key := written[rng.IntN(len(written))]
				kvs = append(kvs, KV{Key: key, Value: fmt.Appendf(nil, "v%d", epoch)})
			default:
				ts := now.Add(-time.Duration(rng.IntN(20)) * time.Minute)
				if rng.IntN(8) == 0 {
					ts = base.Add(time.Duration(rng.Int64N(int64(time.Duration(round+1) * 10 * time.Minute))))
				}
				key := seriesKey(rng.IntN(20), ts, rng.IntN(1000))
				written = append(written, key)
				kvs = append(kvs, KV{Key: key, Value: fmt.Appendf(nil, "v%d", epoch)})
			}
			if rng.IntN(3) == 0 {
				kvs2 = append(kvs2, KV{Key: k(rng.IntN(500)), Value: fmt.Appendf(nil, "p%d", epoch)})
			}
		}
		// One batch must not name a key twice.
		slices.SortStableFunc(kvs, func(a, b KV) int { return compareBytes(a.Key, b.Key) })
		kvs = slices.CompactFunc(kvs, func(a, b KV) bool { return string(a.Key) == string(b.Key) })
		slices.SortStableFunc(kvs2, func(a, b KV) int { return compareBytes(a.Key, b.Key) })
		kvs2 = slices.CompactFunc(kvs2, func(a, b KV) bool { return string(a.Key) == string(b.Key) })
		for _, kv := range kvs {
			if kv.Delete {
				delete(model, string(kv.Key))
			} else {
				model[string(kv.Key)] = string(kv.Value)
			}
		}
		for _, kv := range kvs2 {
			plain[string(kv.Key)] = string(kv.Value)
		}
		if err := e.Ingest(epoch, 1, kvs); err != nil {
			t.Fatal(err)
		}
		if len(kvs2) > 0 {
			if err := e.Ingest(epoch, 2, kvs2); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Commit(ctx, epoch); err != nil {
			t.Fatal(err)
		}
		force := rng.IntN(4) == 0
		for {
			ran, err := e.Compact(ctx, force)
			if err != nil {
				t.Fatal(err)
			}
			if !ran {
				break
			}
		}
		checkWindowLevel(t, e, width)
		verifyTable(t, e, 1, model, nil)
		verifyTable(t, e, 2, plain, nil)
		// A scan of one random hour reads only that window's files (and
		// L0's that overlap it) and returns every row of the hour.
		lo := base.Add(time.Duration(rng.IntN(round+1)) * 10 * time.Minute)
		r := &TimeRange{Min: lo.UnixMicro(), Max: lo.Add(width).UnixMicro() - 1, Valid: true}
		before := e.ReadStats()
		verifyTable(t, e, 1, model, r)
		pruned := e.ReadStats()
		verifyTable(t, e, 1, model, nil)
		full := e.ReadStats()
		if full.Opened-pruned.Opened < pruned.Opened-before.Opened {
			t.Fatalf("round %d: the time-ranged scan opened %d SSTs, the full one %d", round, pruned.Opened-before.Opened, full.Opened-pruned.Opened)
		}
		if round >= 12 && pruned.Pruned == before.Pruned {
			t.Fatalf("round %d: the scan of [%s, +1h) pruned no SST (window level: %d files)", round, lo, len(e.cur.Levels[WindowLevel]))
		}
		if rng.IntN(8) == 0 {
			e.Close()
			e = open()
		}
	}
	// Settled: no window has enough small files left to merge.
	if p := func() *compactionPick {
		e.compactMu.Lock()
		defer e.compactMu.Unlock()
		return e.pickWindow(e.cur, false)
	}(); p != nil {
		t.Fatalf("after compacting to a standstill, window compaction still due: %v", p.inputs)
	}
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyReferenced(t, store, meta)
}

func compareBytes(a, b []byte) int { return slices.Compare(a, b) }

// verifyTable checks table against model through a scan (restricted to r
// when set: the model's rows in r must all come back, rows outside it may)
// and point reads.
func verifyTable(t *testing.T, e *Engine, table TableID, model map[string]string, r *TimeRange) {
	t.Helper()
	ctx := context.Background()
	it, err := e.Iter(ctx, table, nil, nil, e.CommittedEpoch(), ReadOptions{Time: r})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	it.Close()
	in := func(key string) bool {
		if r == nil {
			return true
		}
		ts, ok := seriesTimeOf([]byte(key))
		return ok && ts >= r.Min && ts <= r.Max
	}
	for key, want := range model {
		if in(key) && got[key] != want {
			t.Fatalf("table %d scan (time %v): key %x = %q; want %q", table, r, key, got[key], want)
		}
	}
	for key, v := range got {
		if model[key] != v {
			t.Fatalf("table %d scan (time %v): key %x = %q; the model has %q", table, r, key, v, model[key])
		}
	}
	if r != nil {
		return
	}
	n := 0
	for key, want := range model {
		if n++; n > 200 {
			break
		}
		v, ok, err := e.Get(ctx, table, []byte(key), e.CommittedEpoch(), ReadOptions{})
		if err != nil || !ok || string(v) != want {
			t.Fatalf("table %d get %x: %q,%v,%v; want %q", table, key, v, ok, err, want)
		}
	}
}

// fillWindows commits, for each of hours, rows rows of table 1 (over ten
// series) in that hour, nCommits times, and compacts L0 into the window
// level after each commit.
func fillWindows(t *testing.T, e *Engine, start time.Time, hours, rows, nCommits int, epoch *uint64) map[string]string {
	t.Helper()
	ctx := context.Background()
	model := map[string]string{}
	for c := range nCommits {
		*epoch++
		var kvs []KV
		for h := range hours {
			for s := range rows {
				key := seriesKey(s%10, start.Add(time.Duration(h)*time.Hour+time.Duration(c*rows+s)*time.Second), c)
				kvs = append(kvs, KV{Key: key, Value: fmt.Appendf(nil, "h%d-c%d", h, c)})
			}
		}
		slices.SortFunc(kvs, func(a, b KV) int { return compareBytes(a.Key, b.Key) })
		for _, kv := range kvs {
			model[string(kv.Key)] = string(kv.Value)
		}
		if err := e.Ingest(*epoch, 1, kvs); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(ctx, *epoch); err != nil {
			t.Fatal(err)
		}
		// L0 -> window level at every commit: each window gets a file.
		e.compactMu.Lock()
		p := e.pick(e.cur, true)
		e.compactMu.Unlock()
		if p == nil || p.outLevel != 1 {
			t.Fatalf("commit %d: want an L0 compaction, got %+v", c, p)
		}
		if _, err := e.Compact(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	return model
}

// TestTimeWindowTTLDropsWindows: once a window's rows are all past the
// TTL, its files leave the version whole in a drop-only compaction — not
// read, not rewritten; the live windows' files stay as they were — and GC
// deletes their objects: ctl storage check's Check is clean and the store
// holds exactly the referenced objects (I1). Fails without the window
// level (the rows of all hours would share files that never expire whole).
func TestTimeWindowTTLDropsWindows(t *testing.T) {
	noLeaks(t)
	ctx := context.Background()
	clock, advance := fakeClock()
	store, meta := objstore.NewMem(), openMeta(t)
	e := openEngine(t, store, meta, func(o *Options) { uploadOnly(o); o.Clock = clock; o.GCGrace = time.Millisecond })
	if err := e.RegisterTables(ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.SetRetention(1, &Retention{TTL: 24 * time.Hour, TimeOf: seriesTimeOf, Window: time.Hour})
	// Ten hours of data ending an hour ago, in two commits each.
	start := clock().Add(-11 * time.Hour).Truncate(time.Hour)
	var epoch uint64
	model := fillWindows(t, e, start, 10, 10, 2, &epoch)
	for {
		if ran, err := e.Compact(ctx, true); err != nil {
			t.Fatal(err)
		} else if !ran {
			break
		}
	}
	checkWindowLevel(t, e, time.Hour)
	lw := slices.Clone(e.cur.Levels[WindowLevel])
	if len(lw) != 10 {
		t.Fatalf("window level after compaction: %d files; want one per hour (10)", len(lw))
	}
	// 17 hours and 10 seconds later the first four hours are past the 24h
	// TTL, and the fifth is partly.
	advance(17*time.Hour + 10*time.Second)
	cutoff := clock().Add(-24 * time.Hour).UnixMicro()
	ran, err := e.Compact(ctx, false)
	if err != nil || !ran {
		t.Fatalf("compaction past the TTL: ran=%v err=%v", ran, err)
	}
	var dropped, kept []uint64
	for _, f := range lw {
		if f.Times[0].Max < cutoff {
			dropped = append(dropped, f.ID)
		} else {
			kept = append(kept, f.ID)
		}
	}
	if len(dropped) != 4 {
		t.Fatalf("%d windows wholly past the TTL; want 4 (the fifth straddles the cutoff)", len(dropped))
	}
	if got := ids(e.cur.Levels[WindowLevel]); !slices.Equal(got, kept) {
		t.Fatalf("window level after the TTL drop: %v; want the live windows' files untouched: %v", got, kept)
	}
	if ran, err := e.Compact(ctx, false); err != nil || ran {
		t.Fatalf("a second compaction: ran=%v err=%v; want nothing to do", ran, err)
	}
	if _, err := e.RunGC(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range dropped {
		if _, err := store.Get(ctx, objectKey(id)); err == nil {
			t.Fatalf("object of dropped window sst %d still in the store after GC", id)
		}
	}
	checkExactlyReferenced(t, store, meta)
	r, err := Check(ctx, store, meta, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Violations(); len(v) > 0 {
		t.Fatalf("storage check: %v", v)
	}
	for key := range model {
		if ts, _ := seriesTimeOf([]byte(key)); ts < cutoff {
			delete(model, key)
		}
	}
	verifyTable(t, e, 1, model, nil)
}

// TestWindowCompactionCrash puts a crash, an injected failure and a cancel
// at every named point of a window compaction (the merge of one window's
// files): after a reopen and GC the store holds exactly the referenced
// objects (nothing leaked, I1/I2), the data is intact and the window level
// still partitioned.
func TestWindowCompactionCrash(t *testing.T) {
	noLeaks(t)
	for _, p := range hookPoints {
		for _, mode := range []string{"crash", "fail", "cancel"} {
			t.Run(fmt.Sprintf("%s/%s", p, mode), func(t *testing.T) {
				ctx := context.Background()
				store, meta := objstore.NewMem(), openMeta(t)
				var (
					armed, hit bool
					eng        *Engine
				)
				hooks := &Hooks{Compaction: func(at HookPoint, j *CompactionJob) error {
					if !armed || at != p || hit {
						return nil
					}
					hit = true
					if j.Level != WindowLevel {
						return fmt.Errorf("hook in a level-%d compaction; want the window level", j.Level)
					}
					switch mode {
					case "crash":
						eng.crashed.Store(true)
						return ErrSimulatedCrash
					case "fail":
						return errors.New("injected failure")
					default:
						j.RequestCancel()
					}
					return nil
				}}
				mod := func(o *Options) { uploadOnly(o); o.TargetFileSize = 4 << 10; o.Hooks = hooks }
				e := openEngine(t, store, meta, mod)
				eng = e
				if err := e.RegisterTables(ctx, 1); err != nil {
					t.Fatal(err)
				}
				ret := &Retention{TimeOf: seriesTimeOf, Window: time.Hour}
				e.SetRetention(1, ret)
				var epoch uint64
				model := fillWindows(t, e, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 2, 100, 4, &epoch)
				armed = true
				j, err := e.StartCompaction(ctx, true)
				if err != nil || j == nil || j.Level != WindowLevel {
					t.Fatalf("start a window compaction: %v %v", j, err)
				}
				<-j.Done()
				if !hit {
					t.Fatalf("hook point %s not reached", p)
				}
				checkI1(t, store, meta)
				e.crashed.Store(true)
				e.Close()
				e2 := openEngine(t, store, meta, func(o *Options) { uploadOnly(o); o.TargetFileSize = 4 << 10 })
				e2.SetRetention(1, ret)
				checkI1(t, store, meta)
				verifyTable(t, e2, 1, model, nil)
				if _, err := e2.RunGC(ctx); err != nil {
					t.Fatal(err)
				}
				checkExactlyReferenced(t, store, meta)
				for {
					if ran, err := e2.Compact(ctx, true); err != nil {
						t.Fatal(err)
					} else if !ran {
						break
					}
				}
				checkWindowLevel(t, e2, time.Hour)
				verifyTable(t, e2, 1, model, nil)
				if _, err := e2.RunGC(ctx); err != nil {
					t.Fatal(err)
				}
				checkExactlyReferenced(t, store, meta)
			})
		}
	}
}
