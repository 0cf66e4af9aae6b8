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

// tcEntry is one object's reader. The first caller opens it; later callers
// wait for ready, each only as long as its own context allows (a cancelled
// SELECT or an aborted actor does not wait on another reader's slow GET,
// I5).
type tcEntry struct {
	ready chan struct{} // closed once r and err are set
	r     *sstable.Reader
	err   error
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
	for {
		tc.mu.Lock()
		en := tc.m[f.ID]
		opener := en == nil
		if opener {
			en = &tcEntry{ready: make(chan struct{})}
			tc.m[f.ID] = en
		}
		tc.mu.Unlock()
		if opener {
			en.r, en.err = tc.open(ctx, f)
			if en.err != nil {
				// Do not cache failures: the next read retries (a
				// transient store error must not poison the object).
				tc.mu.Lock()
				if tc.m[f.ID] == en {
					delete(tc.m, f.ID)
				}
				tc.mu.Unlock()
			}
			close(en.ready)
			return en.r, en.err
		}
		select {
		case <-en.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("read %s: %w", objectKey(f.ID), ctx.Err())
		}
		if en.err == nil {
			return en.r, nil
		}
		if ctx.Err() == nil && (errors.Is(en.err, context.Canceled) || errors.Is(en.err, context.DeadlineExceeded)) {
			continue // the opener was cancelled, this reader was not: open again
		}
		return nil, en.err
	}
}

// open reads an object's footer, index and filter.
func (tc *tableCache) open(ctx context.Context, f *SSTMeta) (*sstable.Reader, error) {
	key := objectKey(f.ID)
	rd := &objReadable{store: tc.store, key: key, size: int64(f.Size)}
	if f.Inline {
		var err error
		if rd.data, err = tc.inlineBytes(ctx, f); err != nil {
			return nil, err
		}
	}
	return openSSTReader(ctx, rd, f.ID, key, tc.cache)
}

// evict closes the reader of a deleted object.
func (tc *tableCache) evict(id uint64) {
	tc.mu.Lock()
	en := tc.m[id]
	delete(tc.m, id)
	delete(tc.inline, id)
	tc.mu.Unlock()
	if en != nil {
		select {
		case <-en.ready:
			if en.r != nil {
				_ = en.r.Close()
			}
		default: // still opening: its opener keeps what it opens
		}
	}
}

func (tc *tableCache) close() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for id, en := range tc.m {
		select {
		case <-en.ready:
			if en.r != nil {
				_ = en.r.Close()
			}
		default:
		}
		delete(tc.m, id)
	}
}
