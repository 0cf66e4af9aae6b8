package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// notDirErr is what opening "a/b" returns when "a" is a file: for a key,
// simply "not found".
var notDirErr = syscall.ENOTDIR

// Local stores each object as a file under a root directory; the key is the
// path relative to the root.
//
// Put is atomic and durable (invariant I7 rests on it):
//
//	write .tmp-<name>-<rand> in the object's directory
//	fsync the temp file          -- data on disk before the name exists
//	rename temp -> name          -- atomic: readers see all or nothing
//	fsync the directory          -- the name itself survives power loss
//
// A crash leaves at most a temp file, which List, Get and Stat never show
// (keys may not start a component with ".tmp-"). Directories created for a
// key are fsynced into their parents too.
//
// A key reserved ahead (Reserve, objstore.Reserver) already exists, empty,
// under a durable name: its Put writes the file in place and fsyncs it,
// with no rename and no directory fsync. Until that Put returns the object
// may be empty or partial; its owner (a live job record) deletes it if the
// Put never finishes.
type Local struct {
	root string
	mu   sync.Mutex
	// reserving holds keys whose Reserve is running (the channel closes
	// when it ends); done holds keys reserved and not yet Put or deleted.
	reserving map[string]chan struct{}
	done      map[string]bool
	// testHook, when set, is called at named points inside Put
	// ("temp-written", "before-rename", "after-rename"; "reserved-written"
	// for a reserved key) with the key; an error aborts the Put there as a
	// crash would, leaving the temp file (or the partial reserved object).
	testHook func(point, key string) error
}

// NewLocal opens (creating if needed) a local store rooted at dir.
func NewLocal(dir string) (*Local, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("objstore: local root %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("objstore: create local root %s: %w", abs, err)
	}
	return &Local{root: abs, reserving: map[string]chan struct{}{}, done: map[string]bool{}}, nil
}

// Root returns the absolute root directory.
func (l *Local) Root() string { return l.root }

func (l *Local) path(key string) string {
	return filepath.Join(l.root, filepath.FromSlash(key))
}

// Put writes the object atomically and durably (see the type comment).
func (l *Local) Put(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("objstore: put: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	final := l.path(key)
	if l.takeReserved(ctx, key) {
		return l.putReserved(key, final, data)
	}
	dir := filepath.Dir(final)
	if err := l.ensureDir(dir); err != nil {
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(final)+"-*")
	if err != nil {
		return fmt.Errorf("objstore: put %s: create temp file: %w", key, err)
	}
	tmp := f.Name()
	crashed := false
	defer func() {
		if !crashed {
			os.Remove(tmp) // no-op after a successful rename
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("objstore: put %s: write: %w", key, err)
	}
	if err := l.hook("temp-written", key); err != nil {
		f.Close()
		crashed = true
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("objstore: put %s: fsync: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("objstore: put %s: close: %w", key, err)
	}
	if err := l.hook("before-rename", key); err != nil {
		crashed = true
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	// A cancelled caller must not see its object appear later; past this
	// point the object is in place.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("objstore: put %s: rename: %w", key, err)
	}
	if err := l.hook("after-rename", key); err != nil {
		crashed = true
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	if err := syncDir(dir); err != nil {
		// The object is visible but its name may not survive a power loss:
		// an ambiguous failure the caller must treat as "may exist" (I2).
		return fmt.Errorf("objstore: put %s: fsync directory: %w", key, err)
	}
	return nil
}

// Reserve creates key as an empty object with a durable name (see the
// type comment and objstore.Reserver). Reserving an existing key fails.
func (l *Local) Reserve(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("objstore: reserve: %w", err)
	}
	ch := make(chan struct{})
	l.mu.Lock()
	if _, busy := l.reserving[key]; busy || l.done[key] {
		l.mu.Unlock()
		return fmt.Errorf("objstore: reserve %s: already reserved", key)
	}
	l.reserving[key] = ch
	l.mu.Unlock()
	err := l.reserve(ctx, key)
	l.mu.Lock()
	delete(l.reserving, key)
	if err == nil {
		l.done[key] = true
	}
	l.mu.Unlock()
	close(ch)
	return err
}

func (l *Local) reserve(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("objstore: reserve %s: %w", key, err)
	}
	final := l.path(key)
	dir := filepath.Dir(final)
	if err := l.ensureDir(dir); err != nil {
		return fmt.Errorf("objstore: reserve %s: %w", key, err)
	}
	f, err := os.OpenFile(final, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("objstore: reserve %s: %w", key, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("objstore: reserve %s: %w", key, err)
	}
	return nil
}

// takeReserved reports whether key was reserved (and consumes the
// reservation), waiting for a reservation still in progress.
func (l *Local) takeReserved(ctx context.Context, key string) bool {
	l.mu.Lock()
	ch, busy := l.reserving[key]
	l.mu.Unlock()
	if busy {
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.done[key]
	delete(l.done, key)
	return ok
}

// putReserved writes a reserved key's data in place and fsyncs it: its
// name is already durable.
func (l *Local) putReserved(key, final string, data []byte) error {
	f, err := os.OpenFile(final, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("objstore: put %s (reserved): %w", key, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("objstore: put %s (reserved): write: %w", key, err)
	}
	if err := l.hook("reserved-written", key); err != nil {
		f.Close()
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("objstore: put %s (reserved): fsync: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("objstore: put %s (reserved): close: %w", key, err)
	}
	return nil
}

func (l *Local) hook(point, key string) error {
	if l.testHook == nil {
		return nil
	}
	return l.testHook(point, key)
}

// ensureDir creates dir and any missing parents below the root, fsyncing
// each new directory's parent so the new entry is durable.
func (l *Local) ensureDir(dir string) error {
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if dir == l.root || !strings.HasPrefix(dir, l.root+string(filepath.Separator)) {
		return fmt.Errorf("directory %s missing or outside root %s", dir, l.root)
	}
	parent := filepath.Dir(dir)
	if err := l.ensureDir(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mkdir: %w", err)
	}
	if err := syncDir(parent); err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// open opens the object's file, mapping a missing file (or a directory of
// that name) to ErrNotFound.
func (l *Local) open(op, key string) (*os.File, os.FileInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, nil, fmt.Errorf("objstore: %s: %w", op, err)
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, notDirErr) {
			return nil, nil, fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
		}
		return nil, nil, fmt.Errorf("objstore: %s %s: %w", op, key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("objstore: %s %s: %w", op, key, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
	}
	return f, st, nil
}

// readChunk bounds how much a read does between checks of its context:
// a caller that gives up (a recovery stopping actors, a cancelled query;
// issue 13 item 8) is not held for a whole large object.
const readChunk = 1 << 20

// readAt fills buf from f at offset, checking ctx between chunks.
func readAt(ctx context.Context, f *os.File, buf []byte, offset int64) error {
	for done := 0; done < len(buf); {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(readChunk, len(buf)-done)
		m, err := f.ReadAt(buf[done:done+n], offset+int64(done))
		done += m
		if err != nil && !(errors.Is(err, io.EOF) && done == len(buf)) {
			return err
		}
	}
	return nil
}

// Get reads the whole object.
func (l *Local) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("objstore: get %s: %w", key, err)
	}
	f, st, err := l.open("get", key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, st.Size())
	if err := readAt(ctx, f, buf, 0); err != nil {
		return nil, fmt.Errorf("objstore: get %s: read: %w", key, err)
	}
	return buf, nil
}

// GetRange reads length bytes at offset.
func (l *Local) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("objstore: get %s: %w", key, err)
	}
	f, st, err := l.open("get", key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if offset < 0 || length < 0 || offset+length > st.Size() {
		return nil, fmt.Errorf("objstore: get %s [%d, +%d): out of range (size %d)", key, offset, length, st.Size())
	}
	buf := make([]byte, length)
	if err := readAt(ctx, f, buf, offset); err != nil {
		return nil, fmt.Errorf("objstore: get %s [%d, +%d): read: %w", key, offset, length, err)
	}
	return buf, nil
}

// Stat returns the object's size and modification time.
func (l *Local) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	f, st, err := l.open("stat", key)
	if err != nil {
		return ObjectInfo{}, err
	}
	f.Close()
	return ObjectInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// List returns every object whose key starts with prefix, sorted by key,
// skipping in-flight temporary files.
func (l *Local) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("objstore: list %s: %w", prefix, err)
	}
	// Walk only the deepest directory the prefix names.
	start := l.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = l.path(prefix[:i])
	}
	var out []ObjectInfo
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			// A directory removed while we walk is not an error.
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tempPrefix) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted while listing
			}
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		out = append(out, ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: list %q: %w", prefix, err)
	}
	// Directory walk order puts "a/b" before "a.c"; keys sort bytewise.
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete removes the object and makes the removal durable; a missing object
// is not an error.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("objstore: delete: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("objstore: delete %s: %w", key, err)
	}
	l.mu.Lock()
	delete(l.done, key)
	l.mu.Unlock()
	p := l.path(key)
	if st, err := os.Lstat(p); err == nil && st.IsDir() {
		return nil // a "directory" of other keys is not an object
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, notDirErr) {
			return nil
		}
		return fmt.Errorf("objstore: delete %s: %w", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("objstore: delete %s: fsync directory: %w", key, err)
	}
	return nil
}

// RemoveTempFiles deletes temporary files left by Puts that crashed, and
// returns how many it removed. Call it only while no Put is running (at
// startup): a running Put's temp file would be removed under it.
func (l *Local) RemoveTempFiles(ctx context.Context) (int, error) {
	n := 0
	err := filepath.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), tempPrefix) {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("objstore: remove temp files under %s: %w", l.root, err)
	}
	return n, nil
}
