package expr

// Blocks is a growable array kept in fixed-size blocks of BlockLen
// elements. Window computation and the streaming over-window executor
// hold per-partition arrays in it instead of in one slice, because
// allocating (or growing) one slice is a single step that cannot notice
// a cancellation, and its cost is in touching fresh memory, not in
// copying: on the VMs Runnel is measured on a first touch of a page costs
// about 30–40 µs, so a 1,000,000-element []int (8 MiB, 2,048 pages) takes
// 60–80 ms to allocate, and the 24–48 MiB arrays a partition of that size
// used to need took 200 ms (docs/benchmarks.md, window cancellation). With
// blocks no step touches more than one block (8 KiB of pointers or ints)
// between two cancellation checks (I5), and growing never copies.
//
// The zero value is an empty array. A Blocks value must not be copied
// once appended to (copies would share the last block).
type Blocks[T any] struct {
	blocks [][]T
	n      int
}

const (
	blockShift = 10
	// BlockLen is the number of elements per block: 8 KiB of pointers
	// or ints (two pages), small next to the rows a cancellation check
	// covers.
	BlockLen  = 1 << blockShift
	blockMask = BlockLen - 1
)

// Len returns the number of elements.
func (b *Blocks[T]) Len() int { return b.n }

// At returns element i.
func (b *Blocks[T]) At(i int) T { return b.blocks[i>>blockShift][i&blockMask] }

// Ptr returns the address of element i.
func (b *Blocks[T]) Ptr(i int) *T { return &b.blocks[i>>blockShift][i&blockMask] }

// Set replaces element i.
func (b *Blocks[T]) Set(i int, v T) { b.blocks[i>>blockShift][i&blockMask] = v }

// Append adds v at the end; it allocates at most one block. The first
// block starts small and grows by doubling (a window over a few rows
// should not cost a whole block); later ones are allocated whole.
func (b *Blocks[T]) Append(v T) {
	k := b.n >> blockShift
	if k == len(b.blocks) {
		c := BlockLen
		if k == 0 {
			c = 8
		}
		b.blocks = append(b.blocks, make([]T, 0, c))
	}
	b.blocks[k] = append(b.blocks[k], v)
	b.n++
}
