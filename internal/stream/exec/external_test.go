package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/panics"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// fakeExternal is an external connector over in-memory logs: split id →
// values; a split's state is the 8-byte index of its next value.
type fakeExternal struct {
	mu        sync.Mutex
	logs      map[string][]int64
	ordinals  map[string]int
	failOpens int // the next failOpens OpenSplit calls fail
	acked     map[string]int64
	skipAt    map[string]int64 // value that is "malformed" (skipped)
	changed   chan struct{}
}

func newFakeExternal() *fakeExternal {
	return &fakeExternal{logs: map[string][]int64{}, ordinals: map[string]int{}, acked: map[string]int64{},
		skipAt: map[string]int64{}, changed: make(chan struct{})}
}

func (f *fakeExternal) add(split string, ordinal int, vals ...int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs[split] = append(f.logs[split], vals...)
	f.ordinals[split] = ordinal
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeExternal) Splits(ctx context.Context) ([]connector.Split, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []connector.Split
	for id, o := range f.ordinals {
		out = append(out, connector.Split{ID: id, Ordinal: o})
	}
	return out, nil
}

func (f *fakeExternal) OpenSplit(ctx context.Context, sp connector.Split, st []byte) (connector.SplitStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failOpens > 0 {
		f.failOpens--
		return nil, errors.New("broker unreachable")
	}
	pos := int64(0)
	if st != nil {
		pos = int64(binary.BigEndian.Uint64(st))
	}
	return &fakeStream{f: f, split: sp.ID, pos: pos}, nil
}

func (f *fakeExternal) Close() error { return nil }

func (f *fakeExternal) ackedOf(split string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked[split]
}

type fakeStream struct {
	f     *fakeExternal
	split string
	pos   int64
}

func (s *fakeStream) Read(ctx context.Context) (connector.Batch, error) {
	for {
		s.f.mu.Lock()
		log, changed := s.f.logs[s.split], s.f.changed
		if s.pos < int64(len(log)) {
			var b connector.Batch
			for ; s.pos < int64(len(log)); s.pos++ {
				v := log[s.pos]
				if s.f.skipAt[s.split] == v {
					b.Skipped = append(b.Skipped, connector.Skipped{Where: fmt.Sprintf("%s@%d", s.split, s.pos), Reason: "bad"})
					continue
				}
				b.Changes.Append(types.OpInsert, types.Row{types.DVarchar(s.split), types.DInt64(v)})
			}
			b.State = binary.BigEndian.AppendUint64(nil, uint64(s.pos))
			b.CaughtUp = true
			s.f.mu.Unlock()
			return b, nil
		}
		s.f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return connector.Batch{}, ctx.Err()
		}
	}
}

func (s *fakeStream) Committed(st []byte) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.acked[s.split] = int64(binary.BigEndian.Uint64(st))
}

func (s *fakeStream) Close() error { return nil }

// collect runs ex until it has emitted n rows, returning "split:value"
// strings; it fails on a barrier (none is sent meanwhile).
func collectRows(t *testing.T, ctx context.Context, ex stream.Executor, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		m, err := ex.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		if m.Chunk == nil {
			continue
		}
		for _, r := range m.Chunk.Rows {
			got = append(got, fmt.Sprintf("%s:%d", r[0].Str(), r[1].Int()))
		}
	}
	return got
}

// TestExternalSourceExactlyOnce: split states are committed with the
// barrier's epoch, a rebuilt executor resumes at them (rows of an epoch
// that was not committed come again, committed ones never do: I7), and a
// state is acknowledged upstream only once its epoch is committed (I8).
func TestExternalSourceExactlyOnce(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	fake := newFakeExternal()
	fake.add("a", 0, 1, 2, 3)
	fake.add("b", 1, 10, 20)
	schema := []types.Type{types.Varchar, types.Int64, types.Int64}
	tbl := h.table(ExternalStateSchema("s"))
	id := tbl.ID()
	barriers := make(chan *stream.Barrier, 4)
	committed := h.engine.CommittedEpoch
	s, err := NewExternalSource(ctx, ExternalConfig{Name: "s", Source: "s", Count: 1, Committed: committed}, 1, barriers, fake, schema, tbl)
	if err != nil {
		t.Fatal(err)
	}
	got := collectRows(t, ctx, s, 5)
	if len(got) != 5 || !strings.Contains(strings.Join(got, ","), "b:20") {
		t.Fatalf("rows %v", got)
	}
	b1 := h.barrier()
	barriers <- b1
	if m := nextBarrier(t, ctx, s); m.Barrier != b1 {
		t.Fatalf("%+v; want the barrier", m)
	}
	if fake.ackedOf("a") != 0 {
		t.Fatal("acknowledged before the epoch was committed (I8)")
	}
	h.commit(b1.Prev)
	fake.add("a", 0, 4)
	if got := collectRows(t, ctx, s, 1); got[0] != "a:4" {
		t.Fatalf("got %v; want a:4", got)
	}
	b2 := h.barrier()
	barriers <- b2
	nextBarrier(t, ctx, s)
	if fake.ackedOf("a") != 3 || fake.ackedOf("b") != 2 {
		t.Fatalf("acked a=%d b=%d; want 3, 2 (the committed epoch's states)", fake.ackedOf("a"), fake.ackedOf("b"))
	}
	// Epoch b2.Prev (holding a:4) is never committed: a crash. The
	// rebuilt executor reads a:4 again and nothing before it.
	s.ext.stop()
	h.engine.DiscardUncommitted()
	h.epoch = b2.Curr
	fake.add("b", 1, 30)
	tbl2 := state.New(id, ExternalStateSchema("s"), h.engine, h.epoch)
	s2, err := NewExternalSource(ctx, ExternalConfig{Name: "s", Source: "s", Count: 1, Committed: committed}, 1, barriers, fake, schema, tbl2)
	if err != nil {
		t.Fatal(err)
	}
	got = collectRows(t, ctx, s2, 2)
	if strings.Join(sorted(got), ",") != "a:4,b:30" {
		t.Fatalf("after recovery %v; want a:4 and b:30 only", got)
	}
	s2.ext.stop()
}

// TestExternalSourceSplitsRetriesSkips: a split added later is picked up,
// splits are spread over actors by ordinal, a failing open is retried with
// backoff and shown as the source's status, malformed records are counted.
func TestExternalSourceSplitsRetriesSkips(t *testing.T) {
	defer func(d time.Duration) { SplitPollInterval = d }(SplitPollInterval)
	SplitPollInterval = 20 * time.Millisecond
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	fake := newFakeExternal()
	fake.failOpens = 2
	fake.skipAt["p0"] = 666
	fake.add("p0", 0, 1, 666, 2)
	fake.add("p1", 1, 100) // actor 1 of 2 reads it, not this one
	schema := []types.Type{types.Varchar, types.Int64, types.Int64}
	name := "skips" + t.Name()
	s, err := NewExternalSource(ctx, ExternalConfig{Name: name, Source: name, Count: 2}, 1, make(chan *stream.Barrier), fake, schema, h.table(ExternalStateSchema("s")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.ext.stop()
	stats := connector.StatsFor(name)
	if got := collectRows(t, ctx, s, 2); strings.Join(got, ",") != "p0:1,p0:2" {
		t.Fatalf("rows %v", got)
	}
	if stats.Skipped.Load() != 1 || !strings.Contains(stats.Status().LastSkipped, "p0@1") {
		t.Fatalf("skipped %d (%q); want 1 at p0@1", stats.Skipped.Load(), stats.Status().LastSkipped)
	}
	fake.add("p2", 2, 7) // a partition added later, ordinal 2 → actor 0
	if got := collectRows(t, ctx, s, 1); got[0] != "p2:7" {
		t.Fatalf("got %v; want p2:7 from the new split", got)
	}
	// A failing split shows in the status while it retries.
	fake.mu.Lock()
	fake.failOpens = 1 << 30
	fake.mu.Unlock()
	fake.add("p4", 4, 1)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasPrefix(stats.Status().Status, "retrying: split p4: broker unreachable") {
		if time.Now().After(deadline) {
			t.Fatalf("status %q; want retrying", stats.Status().Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fake.mu.Lock()
	fake.failOpens = 0
	fake.mu.Unlock()
	if got := collectRows(t, ctx, s, 1); got[0] != "p4:1" {
		t.Fatalf("got %v", got)
	}
	if st := stats.Status().Status; st != "running" {
		t.Fatalf("status %q after recovery; want running", st)
	}
}

// nextBarrier returns ex's next message that is not a chunk.
func nextBarrier(t *testing.T, ctx context.Context, ex stream.Executor) stream.Message {
	t.Helper()
	for {
		m, err := ex.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Chunk == nil {
			return m
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// I9: the connector's code runs on the feed's goroutines, outside the
// actor's recover. A panic while listing splits or reading one is that
// goroutine's failure: shown in the source's status, retried after the
// backoff, and the rows come through afterwards. Without the recovers in
// discover and read this test binary dies.
func TestExternalSourcePanicIsASplitFailure(t *testing.T) {
	defer func(d time.Duration) { SplitPollInterval = d }(SplitPollInterval)
	SplitPollInterval = 20 * time.Millisecond
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	for _, site := range []string{sourceListSite, sourceSplitSite} {
		disarm := panics.Arm(site, 1<<30) // panics until disarmed
		fake := newFakeExternal()
		fake.add("p0", 0, 1, 2)
		name := "panics" + site + t.Name()
		s, err := NewExternalSource(ctx, ExternalConfig{Name: name, Source: name, Count: 1}, 1, make(chan *stream.Barrier),
			fake, []types.Type{types.Varchar, types.Int64, types.Int64}, h.table(ExternalStateSchema("s")))
		if err != nil {
			t.Fatal(err)
		}
		stats := connector.StatsFor(name)
		s.ext.start(ctx) // the first Next would; the rows are read below
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(stats.Status().Status, site+" panicked") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: status %q; want the panic shown as a retried failure", site, stats.Status().Status)
			}
			time.Sleep(5 * time.Millisecond) // polling a status, not ordering a race
		}
		disarm()
		if got := collectRows(t, ctx, s, 2); strings.Join(got, ",") != "p0:1,p0:2" {
			t.Fatalf("%s: rows %v after the panics; want p0:1,p0:2", site, got)
		}
		if st := stats.Status().Status; st != "running" {
			t.Fatalf("%s: status %q after the retry; want running", site, st)
		}
		closes := panics.Arm(sourceCloseSite, 2) // the split's and the source's Close
		s.ext.stop()
		if n := panics.Remaining(sourceCloseSite); n != 0 {
			t.Fatalf("%d injected Close panics left; want both Closes to have run", n)
		}
		closes()
	}
}
