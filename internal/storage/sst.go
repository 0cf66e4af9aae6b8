package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/obs"
)

// ErrCorrupt marks an object that exists but cannot be decoded.
var ErrCorrupt = errors.New("corrupt object")

// ErrNewerFormat is returned (wrapped) for stored metadata in a format
// newer than this binary reads: a newer runnel wrote the data directory,
// and only that version (or a later one) may open it. Older formats are
// read and rewritten in the current one (docs/operations.md "Upgrades").
var ErrNewerFormat = errors.New("written by a newer runnel: run that version or a newer one on this data directory")

// sstKeyPrefix is the object-key namespace for SSTs; objectKey(42) =
// "sst/000000000042.sst".
const sstKeyPrefix = "sst/"

func objectKey(id uint64) string { return fmt.Sprintf("%s%012d.sst", sstKeyPrefix, id) }

// parseObjectKey returns the object id of an SST key.
func parseObjectKey(key string) (uint64, bool) {
	s, ok := strings.CutPrefix(key, sstKeyPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".sst")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil
}

// sstTableFormat: row-oriented blocks. Columnar formats (v5+) need a
// KeySchema on both sides; row blocks measured as fast here and avoid the
// reader panic on an unknown schema.
const sstTableFormat = sstable.TableFormatPebblev4

func writerOptions() sstable.WriterOptions {
	return sstable.WriterOptions{
		Comparer:           Comparer,
		TableFormat:        sstTableFormat,
		BlockSize:          16 << 10,
		FilterPolicy:       bloom.FilterPolicy(10),
		FilterType:         sstable.TableFilter,
		Compression:        sstable.SnappyCompression,
		DisableValueBlocks: true,
		MergerName:         "pebble.concatenate",
	}
}

// memWritable is an objstorage.Writable that collects the SST in memory
// (the object store takes whole objects) in fixed chunks, so that a large
// SST is copied once at the end rather than on every doubling.
type memWritable struct {
	chunks [][]byte
	n      int
}

const (
	memChunk      = 1 << 20
	firstMemChunk = 16 << 10
)

func (w *memWritable) Write(p []byte) error {
	w.n += len(p)
	for len(p) > 0 {
		if len(w.chunks) == 0 || len(w.chunks[len(w.chunks)-1]) == cap(w.chunks[len(w.chunks)-1]) {
			w.chunks = append(w.chunks, make([]byte, 0, w.nextChunk(len(p))))
		}
		c := &w.chunks[len(w.chunks)-1]
		k := min(len(p), cap(*c)-len(*c))
		*c = append(*c, p[:k]...)
		p = p[k:]
	}
	return nil
}

// nextChunk sizes the next chunk: doubling from firstMemChunk up to
// memChunk, so that a small SST (an inline commit of a few rows) never
// allocates and zeroes a whole MiB, which cost about half of such a
// commit (BenchmarkSmallCommit: 1.13–1.6 ms, 0.61 ms with doubling).
func (w *memWritable) nextChunk(need int) int {
	size := firstMemChunk
	if n := len(w.chunks); n > 0 {
		size = 2 * cap(w.chunks[n-1])
	}
	return min(max(size, need), memChunk)
}

func (w *memWritable) Finish() error { return nil }
func (w *memWritable) Abort()        { w.chunks = nil }

func (w *memWritable) bytes() []byte {
	if len(w.chunks) == 1 {
		return w.chunks[0]
	}
	out := make([]byte, 0, w.n)
	for _, c := range w.chunks {
		out = append(out, c...)
	}
	return out
}

// sstBuilder writes one SST in memory. Keys must be added in Comparer
// order.
type sstBuilder struct {
	mw       memWritable
	w        *sstable.Writer
	meta     SSTMeta
	lastKey  []byte
	rawBytes int64
	tables   map[TableID]struct{}
	// timeOf decodes row times of the tables that have a time decoder
	// (SetRetention), for SSTMeta.Times; nil: none.
	timeOf  map[TableID]func(rest []byte) (int64, bool)
	curTime func(rest []byte) (int64, bool)
}

func newSSTBuilder() *sstBuilder {
	b := &sstBuilder{tables: map[TableID]struct{}{}}
	b.w = sstable.NewWriter(&b.mw, writerOptions())
	b.meta.MinEpoch = ^uint64(0)
	return b
}

// add appends one entry; key is a full stored key, value includes its tag.
func (b *sstBuilder) add(key, value []byte) error {
	if err := b.w.Set(key, value); err != nil {
		return err
	}
	t, rest, e, _ := splitKey(key)
	if b.meta.NumEntries == 0 {
		b.meta.Smallest = append([]byte(nil), key...)
	}
	b.meta.NumEntries++
	if e < b.meta.MinEpoch {
		b.meta.MinEpoch = e
	}
	if e > b.meta.MaxEpoch {
		b.meta.MaxEpoch = e
	}
	// Keys arrive sorted: a table's first key is its smallest, and the key
	// before the next table's first (or the SST's last key) its largest.
	if _, ok := b.tables[t]; !ok {
		b.closeTableBounds()
		b.tables[t] = struct{}{}
		b.meta.Tables = append(b.meta.Tables, t)
		b.meta.Bounds = append(b.meta.Bounds, KeyRange{Smallest: bytes.Clone(key[:epochSplit(key)])})
		b.curTime = b.timeOf[t]
		if b.timeOf != nil {
			b.meta.Times = append(b.meta.Times, TimeRange{Valid: b.curTime != nil, Min: math.MaxInt64, Max: math.MinInt64})
		}
	}
	if b.curTime != nil {
		r := &b.meta.Times[len(b.meta.Times)-1]
		if r.Valid {
			// A key whose time cannot be decoded makes the range unknown.
			if ts, ok := b.curTime(rest); !ok {
				r.Valid = false
			} else {
				r.Min, r.Max = min(r.Min, ts), max(r.Max, ts)
			}
		}
	}
	b.lastKey = append(b.lastKey[:0], key...)
	b.rawBytes += int64(len(key) + len(value))
	return nil
}

// closeTableBounds sets the largest prefix of the table being written
// (the last key added) before keys of the next table, or at finish.
func (b *sstBuilder) closeTableBounds() {
	if n := len(b.meta.Bounds); n > 0 && b.meta.Bounds[n-1].Largest == nil {
		b.meta.Bounds[n-1].Largest = bytes.Clone(b.lastKey[:epochSplit(b.lastKey)])
	}
}

func (b *sstBuilder) empty() bool { return b.meta.NumEntries == 0 }

// abort releases the writer of an unfinished SST (its background write
// queue goroutine included).
func (b *sstBuilder) abort() {
	_ = b.w.Close()
	b.mw.Abort()
}

// finish closes the writer and returns the encoded object and its meta
// (without ID).
func (b *sstBuilder) finish() ([]byte, SSTMeta, error) {
	if err := b.w.Close(); err != nil {
		return nil, SSTMeta{}, err
	}
	b.meta.Largest = append([]byte(nil), b.lastKey...)
	b.closeTableBounds()
	obj := b.mw.bytes()
	b.meta.Size = uint64(len(obj))
	return obj, b.meta, nil
}

// objReadable serves pebble's reads with ranged GETs on the object store.
// Errors name the object (never a panic).
type objReadable struct {
	store objstore.Store
	key   string
	size  int64
	// data, when set, is the whole object (an inline SST).
	data []byte
}

func (r *objReadable) ReadAt(ctx context.Context, p []byte, off int64) error {
	data, err := r.fetch(ctx, off, int64(len(p)))
	if err != nil {
		return err
	}
	copy(p, data)
	return nil
}

// fetch returns the object's bytes [off, off+n): the store's own buffer
// (the caller may keep it) or, for an inline SST, a slice of its bytes.
func (r *objReadable) fetch(ctx context.Context, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > r.size {
		return nil, fmt.Errorf("read %s [%d,+%d): beyond size %d: %w", r.key, off, n, r.size, ErrCorrupt)
	}
	if r.data != nil {
		return r.data[off : off+n], nil
	}
	data, err := r.store.GetRange(ctx, r.key, off, n)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.key, err)
	}
	obs.StorageRead(len(data))
	if int64(len(data)) != n {
		return nil, fmt.Errorf("read %s: short read %d of %d: %w", r.key, len(data), n, ErrCorrupt)
	}
	return data, nil
}

func (r *objReadable) Close() error { return nil }
func (r *objReadable) Size() int64  { return r.size }
func (r *objReadable) NewReadHandle(objstorage.ReadBeforeSize) objstorage.ReadHandle {
	return &objReadHandle{r: r}
}

// Read-ahead of a read handle (one per sstable iterator): once an
// iterator has read readAheadAfter blocks back to back (a scan walking the
// file), each miss fetches readAheadMin bytes and then twice as much at
// every further miss, up to readAheadMax, and the next blocks are served
// from that buffer. A scan of a whole SST then costs a few object-store
// GETs instead of one per 16 KiB block: on the local store each GET opened
// the file (open, fstat, fcntl, pread, close), ~15 % of a whole-day PromQL
// query's CPU (docs/benchmarks.md); on S3 each is a request. Point reads
// and seeks read exact blocks (no sequence). Pebble still verifies every
// block's checksum and keeps blocks in its cache as before: only the
// fetching changes. Memory: at most readAheadMax per open iterator, or
// readAheadCompaction for a compaction's inputs (a few at a time).
const (
	readAheadAfter      = 2
	readAheadMin        = 64 << 10
	readAheadMax        = 1 << 20
	readAheadCompaction = 4 << 20
)

// objReadHandle reads one iterator's blocks, with read-ahead for
// sequential reads. Pebble never calls one handle concurrently.
type objReadHandle struct {
	r *objReadable
	// buf holds the object's bytes [bufOff, bufOff+len(buf)).
	buf    []byte
	bufOff int64
	// next is the end of the last block read (or found in the cache),
	// seq how many blocks in a row started there, ra the next fetch size.
	next    int64
	seq     int
	ra      int64
	compact bool
}

func (h *objReadHandle) ReadAt(ctx context.Context, p []byte, off int64) error {
	n := int64(len(p))
	h.note(off, n)
	if h.r.data != nil {
		return h.r.ReadAt(ctx, p, off)
	}
	if off >= h.bufOff && off+n <= h.bufOff+int64(len(h.buf)) {
		copy(p, h.buf[off-h.bufOff:])
		return nil
	}
	h.buf = nil
	if h.seq < readAheadAfter && !h.compact {
		return h.r.ReadAt(ctx, p, off)
	}
	switch {
	case h.compact:
		h.ra = readAheadCompaction
	case h.ra == 0:
		h.ra = readAheadMin
	default:
		h.ra = min(2*h.ra, readAheadMax)
	}
	size := min(max(n, h.ra), h.r.size-off)
	if size < n {
		size = n // past the end: ReadAt reports it
	}
	buf, err := h.r.fetch(ctx, off, size)
	if err != nil {
		return err
	}
	copy(p, buf)
	h.buf, h.bufOff = buf, off
	return nil
}

// note tracks whether reads follow each other (a block at the end of the
// previous one).
func (h *objReadHandle) note(off, n int64) {
	if off == h.next {
		h.seq++
	} else {
		h.seq, h.ra = 0, 0
	}
	h.next = off + n
}

func (h *objReadHandle) Close() error        { h.buf = nil; return nil }
func (h *objReadHandle) SetupForCompaction() { h.compact = true }

// RecordCacheHit keeps the sequence through blocks found in the cache.
func (h *objReadHandle) RecordCacheHit(_ context.Context, off, size int64) { h.note(off, size) }

// bytesReadable serves a freshly written SST from memory (used to verify an
// object before it is uploaded, and by tests).
type bytesReadable struct{ b []byte }

func (r bytesReadable) ReadAt(_ context.Context, p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > int64(len(r.b)) {
		return fmt.Errorf("read [%d,+%d) beyond size %d: %w", off, len(p), len(r.b), ErrCorrupt)
	}
	copy(p, r.b[off:])
	return nil
}
func (r bytesReadable) Close() error { return nil }
func (r bytesReadable) Size() int64  { return int64(len(r.b)) }
func (r bytesReadable) NewReadHandle(objstorage.ReadBeforeSize) objstorage.ReadHandle {
	h := objstorage.MakeNoopReadHandle(r)
	return &h
}

func setFileNum[T ~uint64](p *T, v uint64) { *p = T(v) }

// sstCache is the bounded block cache: one pebble cache handle for all of
// Runnel's SSTs, keyed by object id (ids are never reused, so cache keys
// never alias). The handle's type lives in a pebble-internal package, so it
// is held by closures.
type sstCache struct {
	apply func(o *sstable.ReaderOptions, id uint64)
	close func()
}

func newSSTCache(bytes int64) *sstCache {
	c := pebble.NewCache(bytes)
	h := c.NewHandle()
	return &sstCache{
		apply: func(o *sstable.ReaderOptions, id uint64) {
			o.CacheOpts.CacheHandle = h
			setFileNum(&o.CacheOpts.FileNum, id)
		},
		close: func() { h.Close(); c.Unref() },
	}
}

// openSSTReader opens an SST object. The footer is validated by pebble; any
// failure (including a pebble panic on garbage, which must not take the
// process down) is returned as an error naming the object.
func openSSTReader(ctx context.Context, rd objstorage.Readable, id uint64, key string, cache *sstCache) (r *sstable.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("open %s: %v: %w", key, p, ErrCorrupt)
		}
	}()
	opts := sstable.ReaderOptions{
		Comparer: Comparer,
		Filters:  map[string]sstable.FilterPolicy{bloom.FilterPolicy(10).Name(): bloom.FilterPolicy(10)},
	}
	if cache != nil {
		cache.apply(&opts, id)
	}
	r, err = sstable.NewReader(ctx, rd, opts)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w: %w", key, ErrCorrupt, err)
	}
	return r, nil
}
