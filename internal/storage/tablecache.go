package storage

import (
	"context"
	"sync"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/runneldb/runnel/internal/objstore"
)

// tableCache keeps one open sstable.Reader per SST object. A reader is
// opened on first use and closed when its object is deleted (no pinned
// version references it any more) or at Close. Opening reads the footer,
// index and filter through the block cache.
type tableCache struct {
	store objstore.Store
	cache *sstCache
	mu    sync.Mutex
	m     map[uint64]*tcEntry
}

type tcEntry struct {
	once sync.Once
	r    *sstable.Reader
	err  error
}

func newTableCache(store objstore.Store, cache *sstCache) *tableCache {
	return &tableCache{store: store, cache: cache, m: map[uint64]*tcEntry{}}
}

func (tc *tableCache) get(ctx context.Context, f *SSTMeta) (*sstable.Reader, error) {
	tc.mu.Lock()
	en := tc.m[f.ID]
	if en == nil {
		en = &tcEntry{}
		tc.m[f.ID] = en
	}
	tc.mu.Unlock()
	en.once.Do(func() {
		key := objectKey(f.ID)
		en.r, en.err = openSSTReader(ctx, &objReadable{store: tc.store, key: key, size: int64(f.Size)}, f.ID, key, tc.cache)
	})
	if en.err != nil {
		// Do not cache failures: the next read retries (a transient store
		// error must not poison the object).
		tc.mu.Lock()
		if tc.m[f.ID] == en {
			delete(tc.m, f.ID)
		}
		tc.mu.Unlock()
		return nil, en.err
	}
	return en.r, nil
}

// evict closes the reader of a deleted object.
func (tc *tableCache) evict(id uint64) {
	tc.mu.Lock()
	en := tc.m[id]
	delete(tc.m, id)
	tc.mu.Unlock()
	if en != nil && en.r != nil {
		_ = en.r.Close()
	}
}

func (tc *tableCache) close() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for id, en := range tc.m {
		if en.r != nil {
			_ = en.r.Close()
		}
		delete(tc.m, id)
	}
}
