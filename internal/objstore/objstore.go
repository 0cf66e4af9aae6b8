// Package objstore is the object-store seam under Runnel's LSM: a small
// interface (put, get, ranged get, stat, list, delete) with a local-directory
// backend (the default), an S3-compatible backend, an in-memory backend for
// tests, and a fault-injecting wrapper.
//
// Contract every backend keeps:
//   - Put is atomic: a reader sees the whole object or nothing (local: temp
//     file + fsync + rename; S3: single PUT).
//   - Objects are immutable once written; Runnel never overwrites a key
//     (object ids are never reused, invariant I1).
//   - A missing object is reported as an error that errors.Is(err,
//     ErrNotFound); every error names the key it concerns.
//   - Keys obey ValidateKey, and no key may be another key's "directory"
//     ("a/b" and "a/b/c" cannot both exist): file-backed stores (Local,
//     versitygw's posix backend) map keys to paths. Mem does not enforce
//     this; Runnel's keys (kind/id.ext) never collide that way.
//
// This package knows nothing of SSTs, versions or metadata.
package objstore

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned (wrapped) when an object does not exist.
var ErrNotFound = errors.New("object not found")

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// Store is an object store. Keys are slash-separated relative paths such as
// "sst/000000000042.sst". Implementations are safe for concurrent use.
type Store interface {
	// Put writes the whole object atomically.
	Put(ctx context.Context, key string, data []byte) error
	// Get reads the whole object.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetRange reads length bytes at offset; reading past the end is an error.
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	// Stat returns the object's size and modification time.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List returns every object whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
}
