package objstore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mem is an in-memory Store for tests. Its clock can be replaced so that
// grace-period logic is deterministic.
type Mem struct {
	mu      sync.Mutex
	objects map[string]memObject
	// Now supplies ModTime for new objects; defaults to time.Now.
	Now func() time.Time
}

type memObject struct {
	data    []byte
	modTime time.Time
}

// NewMem returns an empty in-memory store.
func NewMem() *Mem { return &Mem{objects: map[string]memObject{}, Now: time.Now} }

func (m *Mem) Put(ctx context.Context, key string, data []byte) error {
	// The same key rules as Local and S3, so a test on Mem cannot pass with
	// a key the real backends reject.
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[key] = memObject{data: append([]byte(nil), data...), modTime: m.Now()}
	return nil
}

func (m *Mem) Get(ctx context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return append([]byte(nil), o.data...), nil
}

func (m *Mem) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	if offset < 0 || length < 0 || offset+length > int64(len(o.data)) {
		return nil, fmt.Errorf("get %s [%d, +%d): out of range (size %d)", key, offset, length, len(o.data))
	}
	return append([]byte(nil), o.data[offset:offset+length]...), nil
}

func (m *Mem) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", key, ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

func (m *Mem) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ObjectInfo
	for k, o := range m.objects {
		if strings.HasPrefix(k, prefix) {
			out = append(out, ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *Mem) Delete(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}
