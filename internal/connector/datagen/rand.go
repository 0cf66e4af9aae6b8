package datagen

import "math/bits"

// rng is a wyrand generator: one 64-bit add and one 64×64→128 multiply per
// draw. Every (column, row) gets its own rng seeded from the column's seed
// and the row index, so a value never depends on the rows before it (which
// is what lets splits generate the row space independently and recovery
// regenerate any row exactly).
type rng struct{ s uint64 }

// mix64 is the splitmix64 finalizer: it spreads consecutive ids over the
// whole 64-bit space so that neighbouring events get unrelated streams.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func newRNG(seed, row uint64) rng {
	return rng{s: mix64(row ^ mix64(seed^saltDatagen))}
}

func (r *rng) next() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// intn returns a value in [0, n) for n > 0 by Lemire's multiply-shift. The
// bias (at most n/2^64) is far below anything a benchmark can observe.
func (r *rng) intn(n uint64) uint64 {
	hi, _ := bits.Mul64(r.next(), n)
	return hi
}

// float returns a value uniform in [0, 1) with 53 random bits.
func (r *rng) float() float64 {
	return float64(r.next()>>11) * 0x1p-53
}

// saltDatagen keeps datagen's streams apart from other users of the mixer.
const saltDatagen = 0x6461746167656e31 // "datagen1"
