package storage

import (
	"bytes"
	"math/rand"
	"testing"
	"time"
)

// memWritable starts with a small chunk and doubles up to memChunk, and
// returns exactly the bytes written whatever the write sizes.
func TestMemWritableChunks(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	for _, total := range []int{0, 1, 100, firstMemChunk, firstMemChunk + 1, 3 << 20, 5<<20 + 17} {
		var w memWritable
		want := make([]byte, 0, total)
		for len(want) < total {
			n := min(total-len(want), 1+rng.Intn(3*memChunk/2))
			p := make([]byte, n)
			rng.Read(p)
			if err := w.Write(p); err != nil {
				t.Fatal(err)
			}
			want = append(want, p...)
		}
		if got := w.bytes(); !bytes.Equal(got, want) && !(total == 0 && len(got) == 0) {
			t.Fatalf("seed %d, %d bytes: bytes() differs from what was written", seed, total)
		}
		for i, c := range w.chunks {
			if cap(c) > memChunk {
				t.Fatalf("seed %d, %d bytes: chunk %d has capacity %d > %d", seed, total, i, cap(c), memChunk)
			}
		}
		if total > 0 && total <= firstMemChunk && (len(w.chunks) != 1 || cap(w.chunks[0]) != firstMemChunk) {
			t.Fatalf("%d bytes: chunks %d, first capacity %d; want one chunk of %d", total, len(w.chunks), cap(w.chunks[0]), firstMemChunk)
		}
	}
}
