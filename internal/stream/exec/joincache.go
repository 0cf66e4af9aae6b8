package exec

import (
	"sort"

	"github.com/runneldb/runnel/internal/types"
)

// joinCache holds, for one join side, the rows of recently probed join
// keys (including keys with no rows: most probes of fresh keys miss). It
// is a read cache of the side's state table, updated on every write the
// join makes to that table, so a hit answers a probe without creating a
// storage iterator (the dominant cost of a probe: see BenchmarkHashJoin).
//
// It is an LRU over join keys charged, in approximate bytes, to the
// operator cache budget (cache.go); a key whose rows take more than a
// quarter of the budget is not cached (it would evict everything else)
// and is read from the table on every probe.
type joinCache struct {
	lru *lruCache[*joinEntry]
}

// joinEntry is one key's rows, sorted by state-table key (the same order
// as a storage scan, so output order does not depend on cache state).
type joinEntry struct {
	keys []string
	rows []types.Row
}

// joinCacheBudget, when set by a test, replaces the process budget for
// new join caches.
var joinCacheBudget *CacheBudget

func newJoinCache() *joinCache {
	return &joinCache{lru: newLRUCache[*joinEntry](joinCacheBudget)}
}

// joinRowBytes approximates one cached row with its state key.
func joinRowBytes(skey string, row types.Row) int64 {
	return rowBytes(row) + int64(len(skey)) + 16 + 24
}

func (c *joinCache) get(key string) (*joinEntry, bool) { return c.lru.get(key) }

// has reports whether key is cached, without touching the LRU order.
func (c *joinCache) has(key string) bool {
	_, ok := c.lru.peek(key)
	return ok
}

// fill caches a loaded key (rows sorted by skeys).
func (c *joinCache) fill(key string, skeys []string, rows []types.Row) {
	size := int64(48)
	for i, r := range rows {
		size += joinRowBytes(skeys[i], r)
	}
	c.lru.put(key, &joinEntry{keys: skeys, rows: rows}, size)
}

// tooLarge reports whether n rows of about rowSize bytes could not be
// cached (probes stop collecting them).
func (c *joinCache) tooLarge(size int64) bool { return size > c.lru.budget.Limit()/4 }

// put inserts or replaces the row with state key skey under key, if the
// key is cached. The row is copied: a row of an input chunk may share its
// allocation with other rows (an upstream slab), which the cache must not
// pin.
func (c *joinCache) put(key, skey string, row types.Row) {
	e, ok := c.lru.peek(key)
	if !ok {
		return
	}
	row = row.Copy()
	i := sort.SearchStrings(e.keys, skey)
	if i < len(e.keys) && e.keys[i] == skey {
		delta := rowBytes(row) - rowBytes(e.rows[i])
		e.rows[i] = row
		if delta != 0 {
			c.lru.resize(key, delta)
		}
		return
	}
	e.keys = append(e.keys, "")
	e.rows = append(e.rows, nil)
	copy(e.keys[i+1:], e.keys[i:])
	copy(e.rows[i+1:], e.rows[i:])
	e.keys[i], e.rows[i] = skey, row
	c.lru.resize(key, joinRowBytes(skey, row))
}

// lookup returns the row with state key skey under a cached key.
func (e *joinEntry) lookup(skey string) (types.Row, bool) {
	i := sort.SearchStrings(e.keys, skey)
	if i < len(e.keys) && e.keys[i] == skey {
		return e.rows[i], true
	}
	return nil, false
}

// remove deletes the row with state key skey under key, if cached.
func (c *joinCache) remove(key, skey string) {
	e, ok := c.lru.peek(key)
	if !ok {
		return
	}
	i := sort.SearchStrings(e.keys, skey)
	if i < len(e.keys) && e.keys[i] == skey {
		size := joinRowBytes(skey, e.rows[i])
		e.keys = append(e.keys[:i], e.keys[i+1:]...)
		e.rows = append(e.rows[:i], e.rows[i+1:]...)
		c.lru.resize(key, -size)
	}
}

// removeKeys deletes the rows with the given state keys under key, if
// cached, in one pass over the entry (removing them one by one would
// shift the entry's slices once per row: quadratic in a hot key's rows).
// skeys is sorted in place.
func (c *joinCache) removeKeys(key string, skeys []string) {
	e, ok := c.lru.peek(key)
	if !ok {
		return
	}
	sort.Strings(skeys)
	var size int64
	w, k := 0, 0
	for i, sk := range e.keys {
		for k < len(skeys) && skeys[k] < sk {
			k++
		}
		if k < len(skeys) && skeys[k] == sk {
			size += joinRowBytes(sk, e.rows[i])
			continue
		}
		e.keys[w], e.rows[w] = sk, e.rows[i]
		w++
	}
	clear(e.keys[w:])
	clear(e.rows[w:])
	e.keys, e.rows = e.keys[:w], e.rows[:w]
	if size != 0 {
		c.lru.resize(key, -size)
	}
}
