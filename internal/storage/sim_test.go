package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
)

func objstoreNewMem() *objstore.Mem { return objstore.NewMem() }

var errInjected = errors.New("injected fault")

// faultStore wraps a store and fails calls at random (seeded). A failed
// Put may still have landed (an ambiguous PUT).
type faultStore struct {
	objstore.Store
	mu   sync.Mutex
	rng  *rand.Rand
	prob float64
	on   bool
}

func (f *faultStore) fail() (bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on || f.rng.Float64() >= f.prob {
		return false, false
	}
	return true, f.rng.Intn(2) == 0
}

func (f *faultStore) Put(ctx context.Context, key string, data []byte) error {
	if fail, landed := f.fail(); fail {
		if landed {
			_ = f.Store.Put(ctx, key, data)
		}
		return fmt.Errorf("put %s: %w", key, errInjected)
	}
	return f.Store.Put(ctx, key, data)
}

func (f *faultStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if fail, _ := f.fail(); fail {
		return nil, fmt.Errorf("get %s: %w", key, errInjected)
	}
	return f.Store.GetRange(ctx, key, off, n)
}

func (f *faultStore) Delete(ctx context.Context, key string) error {
	if fail, _ := f.fail(); fail {
		return fmt.Errorf("delete %s: %w", key, errInjected)
	}
	return f.Store.Delete(ctx, key)
}

// simModel is the in-memory truth: per table, per key, versions by epoch
// (nil value = tombstone).
type simModel struct {
	tables    map[TableID]bool
	data      map[TableID]map[string]map[uint64]*string
	committed uint64
}

func (m *simModel) read(t TableID, key string, epoch uint64) (string, bool) {
	best, found := uint64(0), false
	var v *string
	for e, val := range m.data[t][key] {
		if e <= epoch && (!found || e > best) {
			best, found, v = e, true, val
		}
	}
	if !found || v == nil {
		return "", false
	}
	return *v, true
}

func (m *simModel) dropAbove(epoch uint64) {
	for _, keys := range m.data {
		for _, vs := range keys {
			for e := range vs {
				if e > epoch {
					delete(vs, e)
				}
			}
		}
	}
}

type simulation struct {
	t          *testing.T
	seed       int64
	rng        *rand.Rand
	now        time.Time
	mem        *objstore.Mem
	store      *faultStore
	meta       *metastore.DB
	e          *Engine
	m          *simModel
	epoch      uint64 // current (uncommitted) epoch being written
	metaErr    float64
	metaFaults bool
	ambig      float64
	snaps      []*Snapshot
	log        []string
}

func (s *simulation) clock() time.Time { return s.now }

func (s *simulation) fatalf(format string, args ...any) {
	s.t.Helper()
	tail := s.log
	if len(tail) > 15 {
		tail = tail[len(tail)-15:]
	}
	s.t.Fatalf("seed %d (rerun: RUNNEL_SIM_SEED=%d): %s\nlast steps:\n  %s", s.seed, s.seed, fmt.Sprintf(format, args...), joinLines(tail))
}

func joinLines(l []string) string {
	var b bytes.Buffer
	for i, x := range l {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(x)
	}
	return b.String()
}

func (s *simulation) open() {
	hooks := &Hooks{MetaWrite: func(op string, after bool) error {
		if s.rng.Float64() < s.metaErr {
			if after {
				if s.rng.Float64() < s.ambig {
					return fmt.Errorf("%s: %w (ambiguous)", op, errInjected)
				}
				return nil
			}
			return fmt.Errorf("%s: %w", op, errInjected)
		}
		return nil
	}}
	// Faults inside the metastore's own transaction machinery: failures
	// before anything persisted, lost acknowledgements (landed), and
	// ambiguous errors for transactions that did not land.
	s.meta.SetFaultHook(func(point string) error {
		if !s.metaFaults || s.rng.Float64() >= s.metaErr/2 {
			return nil
		}
		switch point {
		case metastore.PointBegin:
			return fmt.Errorf("begin: %w", errInjected)
		case metastore.PointBeforeCommit:
			return fmt.Errorf("%w: %w", metastore.ErrAmbiguousCommit, errInjected)
		default:
			return fmt.Errorf("lost ack: %w", errInjected)
		}
	})
	for attempt := 0; ; attempt++ {
		s.store.on = attempt < 3
		s.metaFaults = attempt < 3
		e, err := Open(context.Background(), Options{
			Store: s.store, Meta: s.meta, Clock: s.clock, Hooks: hooks, Logger: quietLogger(),
			DisableAutoCompaction: true, GCInterval: -1, TargetFileSize: 2 << 10, WriteBufferBytes: 8 << 10,
			CheckpointEvery: 5, GCGrace: 10 * time.Minute, L0CompactionTrigger: 3, LevelBaseBytes: 8 << 10,
		})
		s.store.on = true
		s.metaFaults = true
		if err == nil {
			s.e = e
			return
		}
		if !errors.Is(err, errInjected) || attempt > 5 {
			s.fatalf("open: %v", err)
		}
	}
}

// crash abandons the engine as if the process died and reopens it.
func (s *simulation) crash() {
	for _, sn := range s.snaps {
		sn.Close()
	}
	s.snaps = nil
	s.e.crashed.Store(true)
	s.e.Close()
	s.open()
	// Uncommitted data died with the process; a commit that reported an
	// error may have landed: the reopened engine is the judge, but it may
	// never lose an acknowledged epoch.
	got := s.e.CommittedEpoch()
	if got < s.m.committed {
		s.fatalf("committed epoch went back from %d to %d", s.m.committed, got)
	}
	if got > s.epoch {
		s.fatalf("committed epoch %d beyond anything written (%d)", got, s.epoch)
	}
	s.m.committed = got
	s.m.dropAbove(got)
	s.epoch = got + 1
	s.logf("crash+reopen: committed %d", got)
}

func (s *simulation) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

func (s *simulation) key() string { return fmt.Sprintf("k%03d", s.rng.Intn(60)) }

func (s *simulation) step() {
	ctx := context.Background()
	s.now = s.now.Add(time.Duration(s.rng.Intn(90)) * time.Second)
	switch r := s.rng.Intn(100); {
	case r < 30: // ingest
		var ts []TableID
		for t, ok := range s.m.tables {
			if ok {
				ts = append(ts, t)
			}
		}
		if len(ts) == 0 {
			return
		}
		slices.Sort(ts)
		t := ts[s.rng.Intn(len(ts))]
		var kvs []KV
		n := 1 + s.rng.Intn(40)
		if s.m.data[t] == nil {
			s.m.data[t] = map[string]map[uint64]*string{}
		}
		for i := 0; i < n; i++ {
			key := s.key()
			kv := KV{Key: []byte(key)}
			var val *string
			if s.rng.Intn(5) == 0 {
				kv.Delete = true
			} else {
				v := fmt.Sprintf("v%d-%d-%s", s.epoch, i, bytes.Repeat([]byte{'x'}, s.rng.Intn(100)))
				kv.Value = []byte(v)
				val = &v
			}
			kvs = append(kvs, kv)
			if s.m.data[t][key] == nil {
				s.m.data[t][key] = map[uint64]*string{}
			}
			s.m.data[t][key][s.epoch] = val
		}
		err := s.e.Ingest(s.epoch, t, kvs)
		s.logf("ingest t%d epoch %d n=%d: %v", t, s.epoch, n, err)
		if err != nil {
			if !errors.Is(err, errInjected) {
				s.fatalf("ingest: %v", err)
			}
			s.crash()
		}
	case r < 45: // commit
		err := s.e.Commit(ctx, s.epoch)
		s.logf("commit %d: %v", s.epoch, err)
		if err != nil {
			if !errors.Is(err, errInjected) {
				s.fatalf("commit: %v", err)
			}
			s.crash()
			return
		}
		s.m.committed = s.epoch
		s.epoch++
	case r < 50: // advance the epoch without committing
		if s.epoch < s.m.committed+3 {
			s.epoch++
		}
	case r < 62: // compaction, sometimes cancelled at a random point
		s.compact()
	case r < 67: // register / unregister
		t := TableID(1 + s.rng.Intn(4))
		var err error
		if s.m.tables[t] {
			err = s.e.UnregisterTables(ctx, t)
			s.logf("unregister t%d: %v", t, err)
			if err == nil {
				s.m.tables[t] = false
				delete(s.m.data, t)
			}
		} else if _, used := s.m.data[t]; !used && !s.everDropped(t) {
			err = s.e.RegisterTables(ctx, t)
			s.logf("register t%d: %v", t, err)
			if err == nil {
				s.m.tables[t] = true
			}
		}
		if err != nil {
			if !errors.Is(err, errInjected) {
				s.fatalf("register/unregister: %v", err)
			}
			s.crash()
			s.resyncTables()
		}
	case r < 73: // GC
		if s.rng.Intn(3) == 0 {
			n, err := s.e.FullGC(ctx)
			s.logf("full gc: %d %v", n, err)
			if err == nil && n != 0 {
				s.fatalf("full GC found %d unowned objects (I1 says there are none)", n)
			}
		} else {
			n, err := s.e.RunGC(ctx)
			s.logf("gc: %d %v", n, err)
		}
	case r < 77:
		if len(s.snaps) < 2 {
			s.snaps = append(s.snaps, s.e.Snapshot())
		} else {
			s.snaps[0].Close()
			s.snaps = s.snaps[1:]
		}
	case r < 80:
		s.crash()
	case r < 82:
		s.e.DiscardUncommitted()
		s.m.dropAbove(s.m.committed)
		s.epoch = s.m.committed + 1
		s.logf("discard uncommitted")
	default:
		s.reads()
	}
}

// everDropped keeps table ids from being reused (the catalog never reuses
// them either).
func (s *simulation) everDropped(t TableID) bool {
	ok, seen := s.m.tables[t]
	return seen && !ok
}

// resyncTables takes the registration outcome of an uncertain DDL from the
// reopened engine.
func (s *simulation) resyncTables() {
	reg := map[TableID]bool{}
	for _, t := range s.e.Tables() {
		reg[t] = true
	}
	for t := range s.m.tables {
		if s.m.tables[t] && !reg[t] {
			s.m.tables[t] = false
			delete(s.m.data, t)
		}
	}
	for t := range reg {
		s.m.tables[t] = true
	}
}

func (s *simulation) compact() {
	ctx := context.Background()
	point := hookPoints[s.rng.Intn(len(hookPoints))]
	cancelIt := s.rng.Intn(3) == 0
	var won, fired bool
	s.e.opts.Hooks.Compaction = func(p HookPoint, j *CompactionJob) error {
		if cancelIt && p == point && !fired {
			fired = true
			won = j.RequestCancel()
		}
		return nil
	}
	defer func() { s.e.opts.Hooks.Compaction = nil }()
	j, err := s.e.StartCompaction(ctx, s.rng.Intn(2) == 0)
	if err != nil {
		s.logf("compaction start: %v", err)
		if !errors.Is(err, errInjected) {
			s.fatalf("compaction start: %v", err)
		}
		return
	}
	if j == nil {
		return
	}
	<-j.Done()
	committed, jerr := j.Result()
	s.logf("compaction %d %v->L%d cancel@%s=%v won=%v: committed=%v %v", j.ID, j.Inputs, j.Level, point, cancelIt, won, committed, jerr)
	if fired && won && committed {
		s.fatalf("compaction committed after a winning cancel")
	}
	if jerr != nil && !committed && !errors.Is(jerr, errInjected) && !errors.Is(jerr, errCancelled) && !errors.Is(jerr, context.Canceled) {
		s.fatalf("compaction: %v", jerr)
	}
	if errors.Is(jerr, errAmbiguous) {
		s.crash()
	}
}

func (s *simulation) reads() {
	ctx := context.Background()
	s.store.on = s.rng.Intn(4) == 0
	defer func() { s.store.on = true }()
	lo := s.e.cur.SafeEpoch
	for t, reg := range s.m.tables {
		if !reg {
			_, _, err := s.e.Get(ctx, t, []byte("k001"), s.epoch, ReadOptions{})
			if !errors.Is(err, ErrTableDropped) {
				s.fatalf("read of dropped table %d: %v (I4)", t, err)
			}
			continue
		}
		// Committed and uncommitted epochs, point reads and scans.
		for _, ep := range []uint64{s.m.committed, s.epoch, lo + uint64(s.rng.Int63n(int64(s.epoch-lo+1)))} {
			if ep < lo {
				continue
			}
			committedOnly := ep <= s.m.committed && s.rng.Intn(2) == 0
			mep := ep
			if committedOnly {
				mep = min(ep, s.m.committed)
			}
			for i := 0; i < 5; i++ {
				key := s.key()
				v, ok, err := s.e.Get(ctx, t, []byte(key), ep, ReadOptions{CommittedOnly: committedOnly})
				if err != nil {
					if errors.Is(err, errInjected) {
						continue
					}
					s.fatalf("get t%d %s@%d: %v", t, key, ep, err)
				}
				wv, wok := s.m.read(t, key, mep)
				if ok != wok || string(v) != wv {
					s.fatalf("get t%d %s@%d (committedOnly=%v): got %q,%v; want %q,%v", t, key, ep, committedOnly, v, ok, wv, wok)
				}
			}
			reverse := s.rng.Intn(2) == 0
			a, b := s.key(), s.key()
			if a > b {
				a, b = b, a
			}
			it, err := s.e.Iter(ctx, t, []byte(a), []byte(b), ep, ReadOptions{CommittedOnly: committedOnly, Reverse: reverse})
			if err != nil {
				if errors.Is(err, errInjected) {
					continue
				}
				s.fatalf("iter: %v", err)
			}
			var got []string
			for it.Next() {
				got = append(got, string(it.Key())+"="+string(it.Value()))
			}
			ierr := it.Err()
			it.Close()
			if ierr != nil {
				if errors.Is(ierr, errInjected) {
					continue
				}
				s.fatalf("iter t%d: %v", t, ierr)
			}
			var want []string
			for key := range s.m.data[t] {
				if key >= a && key < b {
					if v, ok := s.m.read(t, key, mep); ok {
						want = append(want, key+"="+v)
					}
				}
			}
			sort.Strings(want)
			if reverse {
				slices.Reverse(want)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				s.fatalf("iter t%d [%s,%s)@%d reverse=%v committedOnly=%v:\n got %v\nwant %v", t, a, b, ep, reverse, committedOnly, got, want)
			}
		}
	}
	for _, sn := range s.snaps {
		for t, reg := range s.m.tables {
			if !reg {
				continue
			}
			key := s.key()
			v, ok, err := sn.Get(ctx, t, []byte(key))
			if err != nil {
				if errors.Is(err, errInjected) || errors.Is(err, ErrTableDropped) {
					continue
				}
				s.fatalf("snapshot get: %v", err)
			}
			if sn.Epoch() > s.m.committed {
				s.fatalf("snapshot epoch %d beyond committed %d", sn.Epoch(), s.m.committed)
			}
			wv, wok := s.m.read(t, key, sn.Epoch())
			if ok != wok || string(v) != wv {
				s.fatalf("snapshot@%d get t%d %s: got %q,%v; want %q,%v", sn.Epoch(), t, key, v, ok, wv, wok)
			}
		}
	}
}

// checkInvariants: I1 after every step (every object owned, every
// referenced object present).
func (s *simulation) checkInvariants() {
	s.metaFaults = false
	defer func() { s.metaFaults = true }()
	r, _, err := classify(context.Background(), s.mem, s.meta, 0, s.now)
	if err != nil {
		s.fatalf("check: %v", err)
	}
	if !r.OK() {
		var unowned []string
		for k, c := range r.Objects {
			if c == ClassUnowned {
				unowned = append(unowned, k)
			}
		}
		s.fatalf("I1 violated: %s; missing %v; unowned %v", r.Summary(), r.Missing, unowned)
	}
}

func simDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "runnel-sim-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func runSimulation(t *testing.T, seed int64, steps int) {
	ctx := context.Background()
	dir := simDir(t)
	meta, err := metastore.Open(ctx, fmt.Sprintf("%s/meta-%d.db", dir, seed))
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	rng := rand.New(rand.NewSource(seed))
	s := &simulation{t: t, seed: seed, rng: rng, now: time.Unix(1_700_000_000, 0), meta: meta,
		m: &simModel{tables: map[TableID]bool{}, data: map[TableID]map[string]map[uint64]*string{}}, epoch: 1}
	s.mem = objstore.NewMem()
	s.mem.Now = s.clock
	s.store = &faultStore{Store: s.mem, rng: rand.New(rand.NewSource(seed ^ 0x5eed)), prob: []float64{0, 0.01, 0.05}[seed%3], on: true}
	s.metaErr = []float64{0, 0.02, 0.05}[(seed/3)%3]
	s.ambig = 0.5
	s.open()
	defer func() {
		for _, sn := range s.snaps {
			sn.Close()
		}
		s.e.Close()
	}()
	if err := s.e.RegisterTables(ctx, 1, 2); err != nil {
		if !errors.Is(err, errInjected) {
			t.Fatal(err)
		}
		s.crash()
		s.resyncTables()
	} else {
		s.m.tables[1], s.m.tables[2] = true, true
	}
	for i := 0; i < steps; i++ {
		s.step()
		s.checkInvariants()
	}
	// Final: no faults, full recovery and GC: the store holds exactly the
	// referenced objects and every read matches the model.
	s.metaErr, s.store.prob = 0, 0
	s.crash()
	s.metaFaults = false
	if _, err := s.e.RunGC(ctx); err != nil {
		s.fatalf("final gc: %v", err)
	}
	r, err := Check(ctx, s.mem, s.meta, 0)
	if err != nil || !r.OK() || r.Counts[ClassQueued] != 0 || r.Counts[ClassJobOwned] != 0 {
		s.fatalf("final check: %s %v", r.Summary(), err)
	}
	s.reads()
}

// TestSimulation runs seeded random operation sequences with injected
// object-store and metastore faults and crash/reopen, checking I1 after
// every step and every read against a model. RUNNEL_SIM_SEEDS=N runs more
// seeds; RUNNEL_SIM_SEED=S reruns one.
func TestSimulation(t *testing.T) {
	noLeaks(t)
	seeds, steps := 300, 100
	if testing.Short() {
		seeds = 20
	}
	if v := os.Getenv("RUNNEL_SIM_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		seeds = n
	}
	first := int64(1)
	if v := os.Getenv("RUNNEL_SIM_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		first, seeds = n, 1
	}
	for seed := first; seed < first+int64(seeds); seed++ {
		t0 := time.Now()
		runSimulation(t, seed, steps)
		if d := time.Since(t0); d > 300*time.Millisecond {
			t.Logf("seed %d took %s", seed, d)
		}
		if t.Failed() {
			return
		}
	}
}
