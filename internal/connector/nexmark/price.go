package nexmark

import (
	"math"
	"math/big"
	"sync"
)

// price draws round(10^(6u))·100 for u uniform in [0, 1): log-uniform from
// 100 to 100,000,000.
//
// math.Exp was 40% of a bid's CPU time and its last bit differs between
// CPU architectures (amd64 and arm64 have assembly versions), which could
// make a regenerated price differ by 100 after recovery on another
// machine. Instead, with 6u = d + j/4096 + δ (d an integer decade, j a
// 12-bit table index, 0 <= δ < 1/4096):
//
//	10^(6u) = 10^d · T[j] · e^(δ·ln 10)
//
// where T[j] = 10^(j/4096) is built once with math/big (exact software
// arithmetic, the same on every machine) and e^x for x < 5.7e-4 is its
// cubic Taylor polynomial (relative error < 5e-15). Every float operation
// is an explicit float64 conversion, so the compiler cannot fuse them into
// FMAs whose rounding differs by architecture.
func price(r *rng) int64 {
	v := (r.next() >> 11) * 6 // 6u scaled by 2^53, < 6·2^53
	d := v >> 53
	frac := v & (1<<53 - 1)
	j := frac >> 41
	x := float64(float64(frac&(1<<41-1)) * (math.Ln10 / (1 << 53)))
	e := float64(1 + float64(x*float64(1+float64(x*float64(0.5+float64(x*(1.0/6)))))))
	p := float64(float64(pow10Frac()[j]*e) * pow10Int[d])
	return int64(math.Round(p)) * 100
}

var pow10Int = [6]float64{1, 10, 100, 1000, 10000, 100000}

var (
	pow10Once  sync.Once
	pow10Table *[4096]float64
)

// pow10Frac returns T[j] = 10^(j/4096), correctly rounded to float64 from a
// 128-bit computation: 10^(2^-k) by repeated square roots of 10, then T[j]
// as the product of the roots selected by j's bits.
func pow10Frac() *[4096]float64 {
	pow10Once.Do(func() {
		const prec = 128
		var roots [12]*big.Float // roots[k] = 10^(2^-(k+1))
		cur := new(big.Float).SetPrec(prec).SetInt64(10)
		for k := range roots {
			cur = new(big.Float).SetPrec(prec).Sqrt(cur)
			roots[k] = cur
		}
		t := new([4096]float64)
		for j := range t {
			p := new(big.Float).SetPrec(prec).SetInt64(1)
			for k := range roots {
				if j&(1<<(11-k)) != 0 {
					p.Mul(p, roots[k])
				}
			}
			t[j], _ = p.Float64()
		}
		pow10Table = t
	})
	return pow10Table
}
