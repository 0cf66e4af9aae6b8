package storage

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/runneldb/runnel/internal/objstore"
)

func TestComparer(t *testing.T) {
	prefixes := [][]byte{appendPrefix(nil, 1, nil), appendPrefix(nil, 1, []byte("a")), appendPrefix(nil, 1, []byte("ab")), appendPrefix(nil, 2, []byte("a"))}
	var suffixes [][]byte
	for _, e := range []uint64{^uint64(0), 100, 7, 1, 0} {
		suffixes = append(suffixes, appendSuffix(nil, e))
	}
	if err := pebble.CheckComparer(Comparer, prefixes, suffixes); err != nil {
		t.Fatal(err)
	}
	// Newer epochs sort first within a prefix.
	if epochCompare(makeKey(1, []byte("a"), 5), makeKey(1, []byte("a"), 4)) >= 0 {
		t.Fatal("epoch 5 does not sort before epoch 4")
	}
	if epochCompare(makeKey(1, []byte("a"), 1), makeKey(1, []byte("ab"), 9)) >= 0 {
		t.Fatal("prefix order broken by the suffix")
	}
}

// TestCorruptObjects: damaged SSTs give errors naming the object, never a
// panic or wrong data.
func TestCorruptObjects(t *testing.T) {
	noLeaks(t)
	damages := map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"garbage": func(b []byte) []byte {
			out := make([]byte, len(b))
			for i := range out {
				out[i] = byte(i*7 + 3)
			}
			return out
		},
		"flipped-block": func(b []byte) []byte {
			out := append([]byte(nil), b...)
			out[10] ^= 0xff
			return out
		},
		"empty": func([]byte) []byte { return nil },
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store, meta := objstore.NewMem(), openMeta(t)
			e := openEngine(t, store, meta, uploadOnly)
			model := fillForCompaction(t, e)
			_ = model
			f := e.cur.Levels[0][0]
			key := objectKey(f.ID)
			data, err := store.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if err := store.Put(ctx, key, damage(data)); err != nil {
				t.Fatal(err)
			}
			// Fresh engine: nothing cached.
			e.Close()
			e = openEngine(t, store, meta, uploadOnly)
			sawErr := false
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					return
				}
				sawErr = true
				if !strings.Contains(err.Error(), key) {
					t.Fatalf("%s: error does not name %s: %v", what, key, err)
				}
			}
			for i := 0; i < 900; i += 7 {
				v, ok, err := e.Get(ctx, 1, k(i), 3, ReadOptions{})
				check("get", err)
				if err == nil && ok && string(v) != model[string(k(i))] {
					t.Fatalf("get %d returned wrong data %q", i, v)
				}
			}
			it, err := e.Iter(ctx, 1, nil, nil, 3, ReadOptions{})
			check("iter", err)
			if err == nil {
				for it.Next() {
					if string(it.Value()) != model[string(it.Key())] {
						t.Fatalf("iter returned wrong data for %s", it.Key())
					}
				}
				check("iter.Next", it.Err())
				it.Close()
			}
			_, err = e.Compact(ctx, true)
			check("compact", err)
			if !sawErr {
				t.Fatal("damaged object was read without any error")
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		ctx := context.Background()
		store, meta := objstore.NewMem(), openMeta(t)
		e := openEngine(t, store, meta, uploadOnly)
		fillForCompaction(t, e)
		key := objectKey(e.cur.Levels[0][0].ID)
		store.Delete(ctx, key)
		e.Close()
		e = openEngine(t, store, meta, uploadOnly)
		_, _, err := e.Get(ctx, 1, k(3), 3, ReadOptions{})
		if err == nil || !errors.Is(err, objstore.ErrNotFound) || !strings.Contains(err.Error(), key) {
			t.Fatalf("missing object: %v", err)
		}
		r, err := Check(ctx, store, meta, 0)
		if err != nil || r.OK() || len(r.Missing) != 1 || r.Missing[0] != key {
			t.Fatalf("check: %s missing=%v err=%v", r.Summary(), r.Missing, err)
		}
	})
}
