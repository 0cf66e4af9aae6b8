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
// Bounded by rows: past maxRows, random keys are evicted until it is back
// under 3/4 of the bound; a key with more than maxRows/4 rows is never
// cached (it would evict everything else).
type joinCache struct {
	entries map[string]*joinEntry
	rows    int
	maxRows int
}

// joinEntry is one key's rows, sorted by state-table key (the same order
// as a storage scan, so output order does not depend on cache state).
type joinEntry struct {
	keys []string
	rows []types.Row
}

// joinCacheRows bounds each side's cache. At ~100-200 bytes per cached row
// this is tens of MB per join side at most.
var joinCacheRows = 1 << 18

func newJoinCache() *joinCache {
	return &joinCache{entries: map[string]*joinEntry{}, maxRows: joinCacheRows}
}

func (c *joinCache) get(key string) (*joinEntry, bool) {
	e, ok := c.entries[key]
	return e, ok
}

// fill caches a loaded key (rows sorted by skeys).
func (c *joinCache) fill(key string, skeys []string, rows []types.Row) {
	if len(rows) > c.maxRows/4 {
		return
	}
	c.entries[key] = &joinEntry{keys: skeys, rows: rows}
	c.rows += len(rows) + 1
	c.evict()
}

func (c *joinCache) evict() {
	if c.rows <= c.maxRows {
		return
	}
	target := c.maxRows * 3 / 4
	for k, e := range c.entries { // map order is random: random eviction
		if c.rows <= target {
			break
		}
		c.rows -= len(e.rows) + 1
		delete(c.entries, k)
	}
}

// put inserts or replaces the row with state key skey under key, if the
// key is cached.
func (c *joinCache) put(key, skey string, row types.Row) {
	e, ok := c.entries[key]
	if !ok {
		return
	}
	i := sort.SearchStrings(e.keys, skey)
	if i < len(e.keys) && e.keys[i] == skey {
		e.rows[i] = row
		return
	}
	e.keys = append(e.keys, "")
	e.rows = append(e.rows, nil)
	copy(e.keys[i+1:], e.keys[i:])
	copy(e.rows[i+1:], e.rows[i:])
	e.keys[i], e.rows[i] = skey, row
	c.rows++
	c.evict()
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
	e, ok := c.entries[key]
	if !ok {
		return
	}
	i := sort.SearchStrings(e.keys, skey)
	if i < len(e.keys) && e.keys[i] == skey {
		e.keys = append(e.keys[:i], e.keys[i+1:]...)
		e.rows = append(e.rows[:i], e.rows[i+1:]...)
		c.rows--
	}
}
