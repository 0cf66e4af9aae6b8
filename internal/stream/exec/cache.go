package exec

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/runneldb/runnel/internal/types"
)

// Operator caches (the aggregation's group states, the join's rows per
// key) keep hot state in memory across epochs so that a row does not pay
// for a storage read. They are read caches of the operator's state
// tables: every write the operator makes goes to the state table and to
// the cache, so an entry may be evicted at any moment and is reloaded
// from the table on its next miss with the same content.
//
// All caches of the process share one CacheBudget, in approximate bytes
// (DefaultCacheBytes unless the server sets another). Each cache is used
// by one actor goroutine; the budget is a pair of atomics:
//
//   - A cache that grows evicts its own least recently used entries
//     until the budget's total is back under the limit, the entry it is
//     adding last (when other caches hold the budget, nothing is added).
//     The total therefore never exceeds the limit by more than the
//     entries being added at that moment by other goroutines.
//   - A cache that was not used since the last barrier (its actor is
//     idle) gives memory back: shrinkToShare evicts it down to its fair
//     share (limit / number of caches) whenever the total is over 7/8 of
//     the limit, so a busy cache is not starved by idle ones. Busy caches
//     are not trimmed: among them the LRU of whichever grows decides.
//   - An entry larger than 1/4 of the limit is not cached at all.
//   - A cache whose executor is dropped without notice (actor stopped,
//     recovery) returns its bytes when it is garbage collected.

// DefaultCacheBytes is the budget of every operator cache together when
// the server does not set one: 256 MiB, a quarter of the 1 GiB the 10 M
// row benchmarks must stay under (docs/benchmarks.md), next to the
// storage engine's block cache and write buffer.
const DefaultCacheBytes = 256 << 20

// CacheBudget is a memory budget shared by operator caches.
type CacheBudget struct {
	limit  atomic.Int64
	used   atomic.Int64
	caches atomic.Int64 // live caches, for the fair share
	evicts atomic.Int64 // entries evicted, for tests and metrics
}

// NewCacheBudget returns a budget of limit bytes.
func NewCacheBudget(limit int64) *CacheBudget {
	b := &CacheBudget{}
	b.SetLimit(limit)
	return b
}

// SetLimit changes the budget (<= 0: DefaultCacheBytes). Caches over the
// new limit shrink on their next write or barrier.
func (b *CacheBudget) SetLimit(limit int64) {
	if limit <= 0 {
		limit = DefaultCacheBytes
	}
	b.limit.Store(limit)
}

// Limit returns the budget in bytes.
func (b *CacheBudget) Limit() int64 { return b.limit.Load() }

// Evictions returns how many entries the budget's caches evicted.
func (b *CacheBudget) Evictions() int64 { return b.evicts.Load() }

// Used returns the bytes the caches hold now.
func (b *CacheBudget) Used() int64 { return b.used.Load() }

func (b *CacheBudget) over() bool { return b.used.Load() > b.limit.Load() }

// share is one cache's fair share of the budget.
func (b *CacheBudget) share() int64 {
	n := b.caches.Load()
	if n < 1 {
		n = 1
	}
	return b.limit.Load() / n
}

var (
	defaultBudgetOnce sync.Once
	defaultBudget     *CacheBudget
)

// DefaultCacheBudget is the budget executors use: one per process, set by
// the server from its configuration (streaming cache bytes).
func DefaultCacheBudget() *CacheBudget {
	defaultBudgetOnce.Do(func() { defaultBudget = NewCacheBudget(DefaultCacheBytes) })
	return defaultBudget
}

// SetCacheBytes sets the process's operator cache budget (<= 0: the
// default).
func SetCacheBytes(limit int64) { DefaultCacheBudget().SetLimit(limit) }

// lruCache is a string-keyed LRU of approximately sized values charged to
// a CacheBudget. It is not safe for concurrent use (one actor owns it).
type lruCache[V any] struct {
	budget *CacheBudget
	items  map[string]*lruItem[V]
	head   lruItem[V] // sentinel: head.next is the most recently used
	// acct is shared with the GC cleanup that returns the bytes of a
	// cache dropped without close.
	acct      *cacheAccount
	evictions int64
	closed    bool
	used      bool // read or written since the last shrinkToShare
}

// cacheAccount is one cache's share of its budget.
type cacheAccount struct {
	held atomic.Int64 // bytes charged to the budget
	gone atomic.Bool  // deregistered from the budget's cache count
}

// release returns the account's bytes and deregisters it (once).
func (a *cacheAccount) release(b *CacheBudget) {
	b.used.Add(-a.held.Swap(0))
	if !a.gone.Swap(true) {
		b.caches.Add(-1)
	}
}

type lruItem[V any] struct {
	key        string
	val        V
	size       int64
	prev, next *lruItem[V]
}

// lruOverhead approximates the bytes of an item and its map slot beyond
// the value's own estimate.
const lruOverhead = 96

func newLRUCache[V any](budget *CacheBudget) *lruCache[V] {
	if budget == nil {
		budget = DefaultCacheBudget()
	}
	c := &lruCache[V]{budget: budget, items: map[string]*lruItem[V]{}, acct: &cacheAccount{}}
	c.head.next, c.head.prev = &c.head, &c.head
	budget.caches.Add(1)
	runtime.AddCleanup(c, func(a *cacheAccount) { a.release(budget) }, c.acct)
	return c
}

func (c *lruCache[V]) len() int     { return len(c.items) }
func (c *lruCache[V]) bytes() int64 { return c.acct.held.Load() }

func (c *lruCache[V]) unlink(it *lruItem[V]) {
	it.prev.next, it.next.prev = it.next, it.prev
}

func (c *lruCache[V]) pushFront(it *lruItem[V]) {
	it.prev, it.next = &c.head, c.head.next
	c.head.next.prev = it
	c.head.next = it
}

func (c *lruCache[V]) charge(delta int64) {
	c.acct.held.Add(delta)
	c.budget.used.Add(delta)
}

// get returns the value under key and marks it recently used.
func (c *lruCache[V]) get(key string) (V, bool) {
	c.used = true
	it, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	if c.head.next != it {
		c.unlink(it)
		c.pushFront(it)
	}
	return it.val, true
}

// peek returns the value under key without touching the LRU order.
func (c *lruCache[V]) peek(key string) (V, bool) {
	it, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	return it.val, true
}

// put stores val (of approximately size bytes) under key as the most
// recently used entry and evicts to stay in budget. An entry too large
// for the budget is not stored (and any old value under key is dropped);
// put reports whether it stored val.
func (c *lruCache[V]) put(key string, val V, size int64) bool {
	c.used = true
	size += lruOverhead + int64(len(key))
	if c.closed || size > c.budget.Limit()/4 {
		c.remove(key)
		return false
	}
	if it, ok := c.items[key]; ok {
		c.charge(size - it.size)
		it.val, it.size = val, size
		if c.head.next != it {
			c.unlink(it)
			c.pushFront(it)
		}
	} else {
		it := &lruItem[V]{key: key, val: val, size: size}
		c.items[key] = it
		c.pushFront(it)
		c.charge(size)
	}
	c.evictOver()
	_, ok := c.items[key]
	return ok
}

// resize changes the size of the entry under key by delta bytes (its
// value grew or shrank in place) and evicts to stay in budget (the entry
// itself too, when it is the last one left). A value grown past a quarter
// of the budget is dropped.
func (c *lruCache[V]) resize(key string, delta int64) {
	it, ok := c.items[key]
	if !ok {
		return
	}
	// An estimate that shrinks past the entry's own overhead is clamped:
	// a negative size would let a later remove charge bytes back to the
	// budget instead of returning them.
	if floor := lruOverhead + int64(len(key)); it.size+delta < floor {
		delta = floor - it.size
	}
	it.size += delta
	c.charge(delta)
	if it.size > c.budget.Limit()/4 {
		c.remove(key)
		return
	}
	if delta > 0 {
		// Evict others first: the entry just grew because it is in use.
		if c.head.next != it {
			c.unlink(it)
			c.pushFront(it)
		}
		c.evictOver()
	}
}

// remove drops the entry under key.
func (c *lruCache[V]) remove(key string) {
	it, ok := c.items[key]
	if !ok {
		return
	}
	c.unlink(it)
	delete(c.items, key)
	c.charge(-it.size)
}

// evictOver evicts least recently used entries while the budget is
// exceeded.
func (c *lruCache[V]) evictOver() {
	for c.budget.over() && len(c.items) > 0 {
		c.evictOldest()
	}
}

func (c *lruCache[V]) evictOldest() {
	it := c.head.prev
	if it == &c.head {
		return
	}
	c.unlink(it)
	delete(c.items, it.key)
	c.charge(-it.size)
	c.evictions++
	c.budget.evicts.Add(1)
}

// shrinkToShare, called at barriers, evicts this cache down to its fair
// share of the budget when it was not used since the last call and the
// budget is nearly used up, so caches of idle actors give memory back to
// busy ones.
func (c *lruCache[V]) shrinkToShare() {
	b := c.budget
	used := c.used
	c.used = false
	if used || b.used.Load() <= b.limit.Load()/8*7 {
		return
	}
	share := b.share()
	for c.acct.held.Load() > share && len(c.items) > 0 {
		c.evictOldest()
	}
}

// clear drops every entry.
func (c *lruCache[V]) clear() {
	c.charge(-c.acct.held.Load())
	clear(c.items)
	c.head.next, c.head.prev = &c.head, &c.head
}

// close drops every entry, stops caching and deregisters the cache from
// its budget (the executor stopped).
func (c *lruCache[V]) close() {
	c.clear()
	c.closed = true
	c.acct.release(c.budget)
}

// datumBytes approximates the memory of a datum inside a row: the
// struct plus what it points to.
func datumBytes(d types.Datum) int64 {
	n := int64(48) // sizeof(types.Datum)
	switch d.Kind() {
	case types.KindVarchar, types.KindBytea, types.KindJsonb, types.KindUnknown, types.KindUUID:
		n += int64(len(d.Str()))
	case types.KindNumeric:
		if d.Decimal() != nil {
			n += 64
		}
	default:
		if s := d.Str(); s != "" {
			n += int64(len(s))
		}
	}
	return n
}

// rowBytes approximates the memory of a row (slice header and datums).
func rowBytes(r types.Row) int64 {
	n := int64(24)
	for _, d := range r {
		n += datumBytes(d)
	}
	return n
}
