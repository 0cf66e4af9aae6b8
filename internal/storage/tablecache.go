package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
)

// tableCache keeps one open sstable.Reader per SST object. A reader is
// opened on first use and closed when its object is deleted (no pinned
// version references it any more) or at Close. Opening reads the footer,
// index and filter through the block cache.
type tableCache struct {
	store objstore.Store
	meta  *metastore.DB
	cache *sstCache
	mu    sync.Mutex
	m     map[uint64]*tcEntry
	// inline holds the bytes of inline SSTs this engine committed, until
	// their first read (afterwards the reader holds them).
	inline map[uint64][]byte
}

type tcEntry struct {
	once sync.Once
	r    *sstable.Reader
	err  error
}

func newTableCache(store objstore.Store, meta *metastore.DB, cache *sstCache) *tableCache {
	return &tableCache{store: store, meta: meta, cache: cache, m: map[uint64]*tcEntry{}, inline: map[uint64][]byte{}}
}

// putInline hands over the bytes of an inline SST just committed, so its
// first read does not go back to the metastore.
func (tc *tableCache) putInline(id uint64, data []byte) {
	tc.mu.Lock()
	tc.inline[id] = data
	tc.mu.Unlock()
}

// inlineBytes returns an inline SST's bytes: handed over at commit, or
// read from the metastore (after a restart).
func (tc *tableCache) inlineBytes(ctx context.Context, f *SSTMeta) ([]byte, error) {
	tc.mu.Lock()
	data, ok := tc.inline[f.ID]
	delete(tc.inline, f.ID)
	tc.mu.Unlock()
	if ok {
		return data, nil
	}
	if err := tc.meta.QueryRow(ctx, `SELECT data FROM storage_inline_objects WHERE id = $1`, int64(f.ID)).Scan(&data); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read %s: inline SST not in the metastore: %w", objectKey(f.ID), ErrCorrupt)
		}
		return nil, fmt.Errorf("read %s (inline): %w", objectKey(f.ID), err)
	}
	if uint64(len(data)) != f.Size {
		return nil, fmt.Errorf("read %s (inline): %d bytes, want %d: %w", objectKey(f.ID), len(data), f.Size, ErrCorrupt)
	}
	return data, nil
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
		rd := &objReadable{store: tc.store, key: key, size: int64(f.Size)}
		if f.Inline {
			if rd.data, en.err = tc.inlineBytes(ctx, f); en.err != nil {
				return
			}
		}
		en.r, en.err = openSSTReader(ctx, rd, f.ID, key, tc.cache)
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
	delete(tc.inline, id)
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
