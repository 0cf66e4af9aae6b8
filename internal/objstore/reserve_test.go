package objstore

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
)

// A reserved key exists, empty, before its Put; the Put writes it in place
// (no temp file, no rename: the "reserved-written" point, never
// "temp-written"); a second reservation of the key fails; Delete drops
// the reservation; a Put that races the reservation waits for it.
func TestLocalReserve(t *testing.T) {
	ctx := context.Background()
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		points []string
	)
	l.testHook = func(point, key string) error {
		mu.Lock()
		points = append(points, point+" "+key)
		mu.Unlock()
		return nil
	}
	if err := l.Reserve(ctx, "sst/7.sst"); err != nil {
		t.Fatal(err)
	}
	if info, err := l.Stat(ctx, "sst/7.sst"); err != nil || info.Size != 0 {
		t.Fatalf("reserved key: Stat = %+v, %v; want an empty object", info, err)
	}
	if err := l.Reserve(ctx, "sst/7.sst"); err == nil {
		t.Fatal("reserving a reserved key succeeded")
	}
	data := bytes.Repeat([]byte("d"), 10000)
	if err := l.Put(ctx, "sst/7.sst", data); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Get(ctx, "sst/7.sst"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after the reserved Put: %d bytes, %v", len(got), err)
	}
	// A second Put of the key is an ordinary (atomic) one.
	if err := l.Put(ctx, "sst/7.sst", []byte("again")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := points
	points = nil
	mu.Unlock()
	if len(got) == 0 || got[0] != "reserved-written sst/7.sst" || got[1] != "temp-written sst/7.sst" {
		t.Fatalf("Put points: %v; want the reserved path first, then the ordinary one", got)
	}
	// Delete forgets the reservation: a later Put takes the ordinary path.
	if err := l.Reserve(ctx, "sst/8.sst"); err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(ctx, "sst/8.sst"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stat(ctx, "sst/8.sst"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted reserved key: %v", err)
	}
	if err := l.Put(ctx, "sst/8.sst", []byte("x")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got = points
	points = nil
	mu.Unlock()
	if len(got) == 0 || got[0] != "temp-written sst/8.sst" {
		t.Fatalf("Put after Delete of a reservation: %v", got)
	}
	// Puts racing their reservations: every object ends up whole.
	var wg sync.WaitGroup
	for i := range 20 {
		key := "race/" + string(rune('a'+i))
		wg.Add(2)
		go func() { defer wg.Done(); _ = l.Reserve(ctx, key) }()
		go func() {
			defer wg.Done()
			if err := l.Put(ctx, key, []byte(key)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		key := "race/" + string(rune('a'+i))
		if got, err := l.Get(ctx, key); err != nil || string(got) != key {
			t.Fatalf("%s after racing Put and Reserve: %q, %v", key, got, err)
		}
	}
}
