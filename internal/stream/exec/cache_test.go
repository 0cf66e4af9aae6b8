package exec

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/types"
)

// TestCacheBudgetNeverExceeded drives several caches sharing one budget
// with random puts, growths, shrinks, removals and barriers: after every
// operation the budget's total stays within its limit and equals the sum
// of what the caches hold, and every cache holds exactly the model's
// entries minus those it evicted.
func TestCacheBudgetNeverExceeded(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	const limit = 64 << 10
	b := NewCacheBudget(limit)
	caches := make([]*lruCache[int], 4)
	for i := range caches {
		caches[i] = newLRUCache[int](b)
	}
	check := func(step int, op string) {
		t.Helper()
		var sum int64
		for _, c := range caches {
			var own int64
			for _, it := range c.items {
				own += it.size
			}
			if own != c.bytes() {
				t.Fatalf("seed %d step %d (%s): cache accounts %d bytes; its entries hold %d", seed, step, op, c.bytes(), own)
			}
			sum += own
		}
		if used := b.Used(); used != sum {
			t.Fatalf("seed %d step %d (%s): budget used %d; caches hold %d", seed, step, op, used, sum)
		}
		if used := b.Used(); used > limit {
			t.Fatalf("seed %d step %d (%s): budget used %d > limit %d", seed, step, op, used, limit)
		}
	}
	for step := 0; step < 20000; step++ {
		c := caches[rng.Intn(len(caches))]
		key := fmt.Sprintf("k%d", rng.Intn(400))
		var op string
		switch r := rng.Intn(10); {
		case r < 5:
			op = "put"
			// Mostly small entries, a few near or over a quarter of the limit.
			size := int64(rng.Intn(1500))
			if rng.Intn(50) == 0 {
				size = int64(limit/4 - 200 + rng.Intn(400))
			}
			v := rng.Int()
			stored := c.put(key, v, size)
			if got, ok := c.peek(key); stored && (!ok || got != v) {
				t.Fatalf("seed %d step %d: put %s stored, then peek = %d, %v", seed, step, key, got, ok)
			}
			if !stored {
				if _, ok := c.peek(key); ok {
					t.Fatalf("seed %d step %d: put %s refused but the key is cached", seed, step, key)
				}
			}
		case r < 7:
			op = "resize"
			c.resize(key, int64(rng.Intn(3000)-1000))
		case r < 8:
			op = "remove"
			c.remove(key)
		case r < 9:
			op = "get"
			c.get(key)
		default:
			op = "barrier"
			c.shrinkToShare()
		}
		check(step, op)
	}
	// A smaller limit takes effect on the next write.
	b.SetLimit(limit / 4)
	for _, c := range caches {
		c.put("last", 0, 10)
	}
	check(-1, "shrunk limit")
	for _, c := range caches {
		c.close()
	}
	if b.Used() != 0 {
		t.Fatalf("closed caches still hold %d bytes", b.Used())
	}
}

// TestCacheBudgetIdleCacheGivesBack: a cache that stopped growing is cut
// to its fair share at a barrier once the budget is nearly full, so the
// busy cache beside it can use the rest.
func TestCacheBudgetIdleCacheGivesBack(t *testing.T) {
	b := NewCacheBudget(100_000)
	idle, busy := newLRUCache[int](b), newLRUCache[int](b)
	for i := 0; i < 90; i++ {
		idle.put(fmt.Sprint(i), i, 1000-lruOverhead-2)
	}
	for i := 0; i < 20; i++ {
		busy.put(fmt.Sprint(i), i, 1000-lruOverhead-2)
	}
	if busy.bytes() > 11_000 {
		t.Fatalf("busy cache holds %d bytes while the idle one holds %d; want it starved first (the test's premise)", busy.bytes(), idle.bytes())
	}
	idle.shrinkToShare() // used since the last barrier (the puts above): kept
	if idle.len() != 90 {
		t.Fatalf("a cache used since the last barrier was trimmed to %d entries", idle.len())
	}
	idle.shrinkToShare() // idle for a whole barrier interval: trimmed
	if idle.bytes() > b.Limit()/2 {
		t.Fatalf("idle cache holds %d bytes after a barrier; want at most its share %d", idle.bytes(), b.Limit()/2)
	}
	for i := 20; i < 60; i++ {
		busy.put(fmt.Sprint(i), i, 1000-lruOverhead-2)
	}
	if busy.len() < 40 {
		t.Fatalf("busy cache keeps %d entries after the idle one shrank; want ≥ 40", busy.len())
	}
	if b.Used() > b.Limit() {
		t.Fatalf("used %d > limit %d", b.Used(), b.Limit())
	}
}

// TestCacheBudgetDroppedCacheReleases: a cache dropped without close (its
// actor went away in a recovery) returns its bytes once collected.
func TestCacheBudgetDroppedCacheReleases(t *testing.T) {
	b := NewCacheBudget(1 << 20)
	func() {
		c := newLRUCache[int](b)
		for i := 0; i < 10; i++ {
			c.put(fmt.Sprint(i), i, 100)
		}
	}()
	if b.Used() == 0 {
		t.Fatal("the cache charged nothing (the test's premise)")
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Used() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on their own goroutine
	}
	if b.Used() != 0 {
		t.Fatalf("a collected cache still holds %d bytes of the budget", b.Used())
	}
}

// TestHashJoinEvictionReloads runs the same random full outer join with a
// budget that evicts nearly every key and with a roomy one: after every
// epoch both views must hold the same rows (evicted keys reload the same
// rows; the change streams themselves may differ as the two inputs
// interleave differently), and the tight budget is never exceeded.
func TestHashJoinEvictionReloads(t *testing.T) {
	seed := testSeed(t)
	run := func(budget *CacheBudget) []string {
		defer func(old *CacheBudget) { joinCacheBudget = old }(joinCacheBudget)
		joinCacheBudget = budget
		rng := rand.New(rand.NewSource(seed))
		h := newHarness(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		j, ls, rs := newTestJoin(t, h, JoinFullOuter, nil)
		gen := func(pk int64) types.Row { return row(int(pk), rng.Intn(30), rng.Intn(5)) }
		lt := &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 200, gen: gen}
		rt := &randomTable{rng: rng, rows: map[int64]types.Row{}, pks: 200, gen: gen}
		var out []string
		v := newView()
		for step := 0; step < 30; step++ {
			ls.push(lt.step(1 + rng.Intn(30)))
			rs.push(rt.step(1 + rng.Intn(30)))
			b := h.barrier()
			ls.pushBarrier(b)
			rs.pushBarrier(b)
			drain(t, ctx, j, v)
			out = append(out, fmt.Sprintf("epoch %d: %v", step, v.sorted()))
			if budget.Used() > budget.Limit() {
				t.Fatalf("seed %d step %d: budget used %d > limit %d", seed, step, budget.Used(), budget.Limit())
			}
			h.commit(b.Prev)
		}
		return out
	}
	tight := NewCacheBudget(6 << 10)
	small := run(tight)
	large := run(NewCacheBudget(64 << 20))
	if !slices.Equal(small, large) {
		for i := range small {
			if small[i] != large[i] {
				t.Fatalf("seed %d: views differ between a tight and a roomy cache budget:\ntight: %s\nroomy: %s", seed, small[i], large[i])
			}
		}
	}
	if tight.Evictions() == 0 {
		t.Fatal("the tight budget evicted nothing (the test's premise)")
	}
}
