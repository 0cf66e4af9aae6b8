package expr

import (
	"math/rand"
	"testing"
)

// TestBlocks appends across block boundaries (the first block grows from
// a small capacity, later ones are whole) and reads back with At, Ptr
// and Set.
func TestBlocks(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, BlockLen - 1, BlockLen, BlockLen + 1, 3*BlockLen + 17} {
		var b Blocks[int]
		for i := 0; i < n; i++ {
			b.Append(i * 3)
		}
		if b.Len() != n {
			t.Fatalf("n=%d: Len() = %d", n, b.Len())
		}
		for i := 0; i < n; i++ {
			if got := b.At(i); got != i*3 {
				t.Fatalf("n=%d: At(%d) = %d; want %d", n, i, got, i*3)
			}
			*b.Ptr(i)++
			b.Set(i, b.At(i)+1)
			if got := b.At(i); got != i*3+2 {
				t.Fatalf("n=%d: after Ptr and Set, At(%d) = %d; want %d", n, i, got, i*3+2)
			}
		}
	}
	// random lengths against a slice
	seed := rand.Int63()
	rng := rand.New(rand.NewSource(seed))
	for r := 0; r < 20; r++ {
		n := rng.Intn(5 * BlockLen)
		var b Blocks[string]
		var want []string
		for i := 0; i < n; i++ {
			s := string(rune('a' + rng.Intn(26)))
			b.Append(s)
			want = append(want, s)
		}
		for i, w := range want {
			if b.At(i) != w {
				t.Fatalf("seed %d: At(%d) = %q; want %q", seed, i, b.At(i), w)
			}
		}
	}
}
