package types

import (
	"math/rand"
	"testing"
)

// DecodeValueColumns gives the wanted columns exactly as DecodeValueRow
// does, NULL for the others, and fails on exactly the inputs
// DecodeValueRow fails on (every truncation and a flipped byte of random
// rows of every type).
func TestDecodeValueColumns(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewSource(seed))
	for iter := range 2000 {
		n := 1 + r.Intn(6)
		types := make([]Type, n)
		row := make(Row, n)
		want := make([]bool, n)
		for i := range types {
			types[i] = allTypes[r.Intn(len(allTypes))]
			if r.Intn(5) > 0 {
				row[i] = randDatum(r, types[i])
			}
			want[i] = r.Intn(2) == 0
		}
		enc := AppendValueRow(nil, row, types)
		inputs := [][]byte{enc}
		for k := 0; k < len(enc); k++ {
			inputs = append(inputs, enc[:k])
		}
		flipped := append([]byte(nil), enc...)
		flipped[r.Intn(len(flipped))] ^= byte(1 + r.Intn(255))
		inputs = append(inputs, flipped)
		var dst Row
		for _, in := range inputs {
			full, errFull := DecodeValueRow(in, types, nil)
			var err error
			dst, err = DecodeValueColumns(in, types, want, dst)
			if (err == nil) != (errFull == nil) {
				t.Fatalf("seed %d iter %d: %v over %x: projected error %v, full error %v", seed, iter, types, in, err, errFull)
			}
			if err != nil {
				continue
			}
			for i := range types {
				w := full[i]
				if !want[i] {
					w = NullDatum
				}
				if !sameDatum(dst[i], w) {
					t.Fatalf("seed %d iter %d: %v column %d: got %v, want %v", seed, iter, types, i, dst[i], w)
				}
			}
		}
	}
}
