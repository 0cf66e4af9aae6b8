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

// Reserver is implemented by stores where making a new object's name
// durable is a step of its own (a local directory: a directory fsync after
// the rename). Reserve creates key as an empty object whose name is
// durable, ahead of its Put, off the writer's critical path; the later Put
// of that key then writes and syncs the data in place. The caller must own
// the key durably before reserving it (I1: a job record names it), because
// a crash between Reserve and the end of the Put leaves an empty or partial
// object under the key, which only that owner's cleanup removes.
type Reserver interface {
	Reserve(ctx context.Context, key string) error
}
