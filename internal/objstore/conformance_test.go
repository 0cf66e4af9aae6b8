package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/testutil/s3test"
)

// runConformance checks the Store contract (objstore.go) on one backend.
// newStore returns an empty store.
func runConformance(t *testing.T, newStore func(t *testing.T) objstore.Store) {
	ctx := context.Background()
	mustPut := func(t *testing.T, s objstore.Store, key string, data []byte) {
		t.Helper()
		if err := s.Put(ctx, key, data); err != nil {
			t.Fatalf("Put %s: %v", key, err)
		}
	}
	keysOf := func(infos []objstore.ObjectInfo) []string {
		var out []string
		for _, i := range infos {
			out = append(out, i.Key)
		}
		return out
	}

	t.Run("PutGetRoundTrip", func(t *testing.T) {
		s := newStore(t)
		data := []byte("the quick brown fox")
		mustPut(t, s, "sst/000001.sst", data)
		got, err := s.Get(ctx, "sst/000001.sst")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get = %q, %v; want %q", got, err, data)
		}
	})

	t.Run("EmptyObject", func(t *testing.T) {
		s := newStore(t)
		mustPut(t, s, "empty", nil)
		got, err := s.Get(ctx, "empty")
		if err != nil || len(got) != 0 {
			t.Fatalf("Get = %q, %v; want empty", got, err)
		}
		info, err := s.Stat(ctx, "empty")
		if err != nil || info.Size != 0 {
			t.Fatalf("Stat = %+v, %v; want size 0", info, err)
		}
		got, err = s.GetRange(ctx, "empty", 0, 0)
		if err != nil || len(got) != 0 {
			t.Fatalf("GetRange(0,0) = %q, %v; want empty", got, err)
		}
	})

	t.Run("Overwrite", func(t *testing.T) {
		s := newStore(t)
		mustPut(t, s, "k", []byte("first version, long"))
		mustPut(t, s, "k", []byte("second"))
		got, err := s.Get(ctx, "k")
		if err != nil || string(got) != "second" {
			t.Fatalf("Get = %q, %v; want second", got, err)
		}
	})

	t.Run("CallerBuffersAreNotShared", func(t *testing.T) {
		s := newStore(t)
		data := []byte("abc")
		mustPut(t, s, "k", data)
		data[0] = 'X'
		got, _ := s.Get(ctx, "k")
		if string(got) != "abc" {
			t.Fatalf("store kept a reference to the Put buffer: %q", got)
		}
		got[1] = 'Y'
		again, _ := s.Get(ctx, "k")
		if string(again) != "abc" {
			t.Fatalf("store shares the Get buffer: %q", again)
		}
	})

	t.Run("MissingIsErrNotFoundNamingKey", func(t *testing.T) {
		s := newStore(t)
		mustPut(t, s, "dir/present", []byte("x"))
		for name, call := range map[string]func() error{
			"Get":      func() error { _, err := s.Get(ctx, "dir/absent"); return err },
			"GetRange": func() error { _, err := s.GetRange(ctx, "dir/absent", 0, 1); return err },
			"Stat":     func() error { _, err := s.Stat(ctx, "dir/absent"); return err },
		} {
			err := call()
			if !errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("%s missing: %v; want ErrNotFound", name, err)
				continue
			}
			if !strings.Contains(err.Error(), "dir/absent") {
				t.Errorf("%s error %q does not name the key", name, err)
			}
		}
		// A "directory" that holds objects is not itself an object.
		if _, err := s.Get(ctx, "dir"); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("Get of a key prefix: %v; want ErrNotFound", err)
		}
		// A key below an existing object is missing, not a server error.
		if _, err := s.Get(ctx, "dir/present/below"); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("Get below an object: %v; want ErrNotFound", err)
		}
	})

	t.Run("GetRange", func(t *testing.T) {
		s := newStore(t)
		data := []byte("0123456789")
		mustPut(t, s, "r", data)
		for _, c := range []struct {
			off, n int64
			want   string
			ok     bool
		}{
			{0, 10, "0123456789", true},
			{3, 4, "3456", true},
			{9, 1, "9", true},
			{10, 0, "", true},
			{0, 0, "", true},
			{5, 6, "", false},  // runs past the end
			{10, 1, "", false}, // starts at the end
			{11, 0, "", false}, // starts past the end
			{-1, 2, "", false},
			{2, -1, "", false},
		} {
			got, err := s.GetRange(ctx, "r", c.off, c.n)
			if c.ok && (err != nil || string(got) != c.want) {
				t.Errorf("GetRange(%d,%d) = %q, %v; want %q", c.off, c.n, got, err, c.want)
			}
			if !c.ok && err == nil {
				t.Errorf("GetRange(%d,%d) = %q; want an out-of-range error", c.off, c.n, got)
			}
			if !c.ok && errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("GetRange(%d,%d) out of range reported as not found: %v", c.off, c.n, err)
			}
		}
	})

	t.Run("Stat", func(t *testing.T) {
		s := newStore(t)
		before := time.Now().Add(-time.Minute)
		mustPut(t, s, "a/b/c", make([]byte, 1234))
		info, err := s.Stat(ctx, "a/b/c")
		if err != nil {
			t.Fatal(err)
		}
		if info.Key != "a/b/c" || info.Size != 1234 {
			t.Fatalf("Stat = %+v; want key a/b/c size 1234", info)
		}
		if info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(time.Minute)) {
			t.Fatalf("Stat ModTime %v not near now", info.ModTime)
		}
	})

	t.Run("ListSortedRecursivePrefix", func(t *testing.T) {
		s := newStore(t)
		// No key is another key's "directory": file-backed stores (Local,
		// versitygw's posix backend) cannot hold both "a/b" and "a/b/c".
		keys := []string{"a/b", "a.c", "a/b2/x", "a/c/d/e", "b", "sst/000002.sst", "sst/000010.sst", "sst/000001.sst", "sstx"}
		for i, k := range keys {
			mustPut(t, s, k, bytes.Repeat([]byte{'z'}, i))
		}
		for _, c := range []struct {
			prefix string
			want   string
		}{
			{"", "a.c a/b a/b2/x a/c/d/e b sst/000001.sst sst/000002.sst sst/000010.sst sstx"},
			{"a", "a.c a/b a/b2/x a/c/d/e"},
			{"a/", "a/b a/b2/x a/c/d/e"},
			{"a/b", "a/b a/b2/x"},
			{"a/b/", ""},
			{"a/c/", "a/c/d/e"},
			{"a/c/d", "a/c/d/e"},
			{"sst/", "sst/000001.sst sst/000002.sst sst/000010.sst"},
			{"sst/00000", "sst/000001.sst sst/000002.sst"},
			{"nothing", ""},
			{"nothing/deeper/", ""},
		} {
			infos, err := s.List(ctx, c.prefix)
			if err != nil {
				t.Fatalf("List(%q): %v", c.prefix, err)
			}
			if got := strings.Join(keysOf(infos), " "); got != c.want {
				t.Errorf("List(%q) = %q; want %q", c.prefix, got, c.want)
			}
		}
		infos, _ := s.List(ctx, "a/b2/")
		if len(infos) != 1 || infos[0].Size != 2 {
			t.Errorf("List sizes: %+v; want a/b2/x of size 2", infos)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := newStore(t)
		mustPut(t, s, "d/x", []byte("1"))
		mustPut(t, s, "d/y", []byte("2"))
		if err := s.Delete(ctx, "d/x"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "d/x"); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("Get after Delete: %v; want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "d/x"); err != nil {
			t.Fatalf("Delete of a missing object: %v; want nil", err)
		}
		if err := s.Delete(ctx, "never/existed"); err != nil {
			t.Fatalf("Delete of a never-existing object: %v; want nil", err)
		}
		// A key prefix that only "contains" other objects is not an object:
		// deleting it is a no-op that leaves them alone.
		if err := s.Delete(ctx, "d"); err != nil {
			t.Fatalf("Delete of a key prefix: %v; want nil", err)
		}
		infos, err := s.List(ctx, "d/")
		if err != nil || strings.Join(keysOf(infos), " ") != "d/y" {
			t.Fatalf("List after Delete = %v, %v; want d/y", keysOf(infos), err)
		}
	})

	t.Run("InvalidKeysRejected", func(t *testing.T) {
		s := newStore(t)
		for _, k := range []string{"", "/abs", "a/../b", "..", "a/./b", "a//b", "a/", "a\\b", "x/.tmp-y", ".tmp-z"} {
			err := s.Put(ctx, k, []byte("x"))
			if !errors.Is(err, objstore.ErrInvalidKey) {
				t.Errorf("Put(%q) = %v; want ErrInvalidKey", k, err)
			}
		}
		infos, err := s.List(ctx, "")
		if err != nil || len(infos) != 0 {
			t.Fatalf("after rejected Puts List = %v, %v; want empty", keysOf(infos), err)
		}
	})

	t.Run("CancelledPutStoresNothing", func(t *testing.T) {
		s := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Put(cctx, "cancelled", []byte("x")); err == nil {
			t.Fatal("Put with a cancelled context succeeded")
		}
		if _, err := s.Stat(ctx, "cancelled"); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("object of a cancelled Put: %v; want ErrNotFound", err)
		}
	})

	t.Run("ConcurrentPutsAndReads", func(t *testing.T) {
		s := newStore(t)
		const workers, perWorker = 4, 8
		var wg sync.WaitGroup
		errs := make(chan error, workers*perWorker)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < perWorker; i++ {
					key := fmt.Sprintf("c/%d/%03d", w, i)
					data := []byte(strings.Repeat(key, 100))
					if err := s.Put(ctx, key, data); err != nil {
						errs <- err
						return
					}
					got, err := s.Get(ctx, key)
					if err != nil || !bytes.Equal(got, data) {
						errs <- fmt.Errorf("read back %s: %v", key, err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		infos, err := s.List(ctx, "c/")
		if err != nil || len(infos) != workers*perWorker {
			t.Fatalf("List = %d objects, %v; want %d", len(infos), err, workers*perWorker)
		}
	})

	t.Run("LargeObject", func(t *testing.T) {
		s := newStore(t)
		rng := rand.New(rand.NewPCG(1, 2))
		data := make([]byte, 3<<20+17)
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		mustPut(t, s, "big", data)
		got, err := s.Get(ctx, "big")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get big: %d bytes, %v; want %d identical", len(got), err, len(data))
		}
		part, err := s.GetRange(ctx, "big", 1<<20, 4096)
		if err != nil || !bytes.Equal(part, data[1<<20:1<<20+4096]) {
			t.Fatalf("GetRange big: %v", err)
		}
	})
}

func TestConformanceMem(t *testing.T) {
	runConformance(t, func(t *testing.T) objstore.Store { return objstore.NewMem() })
}

func TestConformanceLocal(t *testing.T) {
	runConformance(t, func(t *testing.T) objstore.Store {
		s, err := objstore.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConformanceFaultOverMem(t *testing.T) {
	runConformance(t, func(t *testing.T) objstore.Store {
		f := objstore.NewFault(objstore.NewMem(), 1)
		// A latency-only rule must not change behaviour.
		f.AddRule(objstore.FaultRule{Latency: time.Microsecond, Prob: 0.5})
		return f
	})
}

func TestConformanceS3(t *testing.T) {
	srv := s3test.Start(t)
	runConformance(t, func(t *testing.T) objstore.Store {
		s, err := objstore.NewS3(srv.Config(srv.NewBucket(t), "runnel/data"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestS3PrefixIsolation checks that a store sees only its own prefix.
func TestS3PrefixIsolation(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.NewBucket(t)
	ctx := context.Background()
	a, err := objstore.NewS3(srv.Config(bucket, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := objstore.NewS3(srv.Config(bucket, "b/"))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := objstore.NewS3(srv.Config(bucket, ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "k", []byte("in a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "k"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("b sees a's object: %v", err)
	}
	infos, err := whole.List(ctx, "")
	if err != nil || len(infos) != 1 || infos[0].Key != "a/k" {
		t.Fatalf("bucket listing = %+v, %v; want a/k", infos, err)
	}
	// A multipart upload (above minio-go's 16 MiB part size) is published
	// whole too.
	big := bytes.Repeat([]byte("0123456789abcdef"), (17<<20)/16)
	if err := a.Put(ctx, "multipart", big); err != nil {
		t.Fatal(err)
	}
	info, err := a.Stat(ctx, "multipart")
	if err != nil || info.Size != int64(len(big)) {
		t.Fatalf("Stat multipart = %+v, %v; want size %d", info, err, len(big))
	}
}

func TestS3MissingBucketIsNotErrNotFound(t *testing.T) {
	srv := s3test.Start(t)
	s, err := objstore.NewS3(srv.Config("no-such-bucket", ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(context.Background(), "k")
	if err == nil || errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get in a missing bucket: %v; want a non-ErrNotFound error (a missing bucket is misconfiguration, not a missing object)", err)
	}
}
