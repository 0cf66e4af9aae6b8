package expr

import (
	"math"
	"math/big"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Numeric arithmetic follows PostgreSQL's numeric.c result-scale rules:
//
//	a + b, a - b   scale max(dscale a, dscale b), exact
//	a * b          scale dscale a + dscale b, exact
//	a / b          select_div_scale: at least 16 significant digits,
//	               at least the inputs' scales, rounded half away from zero
//	a % b          sign of a, scale max(dscale a, dscale b)
//
// dscale is the number of digits after the decimal point that the value
// displays, which apd keeps as -Exponent.

const (
	numericMinSigDigits    = 16
	numericMaxDisplayScale = 1000
	numericMinDisplayScale = 0
	numericMaxResultScale  = 2000
	nbaseDigits            = 4
)

var exactCtx = apd.Context{
	Precision:   0,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       apd.DefaultTraps,
}

func dscale(d *apd.Decimal) int32 {
	if d.Exponent < 0 {
		return -d.Exponent
	}
	return 0
}

func isNaNDec(d *apd.Decimal) bool { return d.Form == apd.NaN || d.Form == apd.NaNSignaling }
func isInfDec(d *apd.Decimal) bool { return d.Form == apd.Infinite }

func decNaN() *apd.Decimal { return &apd.Decimal{Form: apd.NaN} }
func decInf(neg bool) *apd.Decimal {
	return &apd.Decimal{Form: apd.Infinite, Negative: neg}
}

// normalizeDec makes a finite decimal's exponent non-positive (dscale >= 0)
// and clears the sign of zero.
func normalizeDec(d *apd.Decimal) *apd.Decimal {
	if d.Form != apd.Finite {
		return d
	}
	if d.Exponent > 0 {
		var m apd.BigInt
		m.Exp(apd.NewBigInt(10), apd.NewBigInt(int64(d.Exponent)), nil)
		d.Coeff.Mul(&d.Coeff, &m)
		d.Exponent = 0
	}
	if d.Coeff.Sign() == 0 {
		d.Negative = false
	}
	return d
}

func numericAdd(a, b types.Datum) (types.Datum, error) {
	x, y := a.Decimal(), b.Decimal()
	if x.Form != apd.Finite || y.Form != apd.Finite {
		return types.DNumeric(specialAddSub(x, y, false)), nil
	}
	r := new(apd.Decimal)
	if _, err := exactCtx.Add(r, x, y); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(normalizeDec(r)), nil
}

func numericSub(a, b types.Datum) (types.Datum, error) {
	x, y := a.Decimal(), b.Decimal()
	if x.Form != apd.Finite || y.Form != apd.Finite {
		return types.DNumeric(specialAddSub(x, y, true)), nil
	}
	r := new(apd.Decimal)
	if _, err := exactCtx.Sub(r, x, y); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(normalizeDec(r)), nil
}

func specialAddSub(x, y *apd.Decimal, sub bool) *apd.Decimal {
	if isNaNDec(x) || isNaNDec(y) {
		return decNaN()
	}
	yneg := y.Negative
	if sub {
		yneg = !yneg
	}
	switch {
	case isInfDec(x) && isInfDec(y):
		if x.Negative != yneg {
			return decNaN()
		}
		return decInf(x.Negative)
	case isInfDec(x):
		return decInf(x.Negative)
	}
	return decInf(yneg)
}

func numericMul(a, b types.Datum) (types.Datum, error) {
	x, y := a.Decimal(), b.Decimal()
	if x.Form != apd.Finite || y.Form != apd.Finite {
		if isNaNDec(x) || isNaNDec(y) {
			return types.DNumeric(decNaN()), nil
		}
		if (x.Form == apd.Finite && x.IsZero()) || (y.Form == apd.Finite && y.IsZero()) {
			return types.DNumeric(decNaN()), nil
		}
		return types.DNumeric(decInf(x.Negative != y.Negative)), nil
	}
	r := new(apd.Decimal)
	if _, err := exactCtx.Mul(r, x, y); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(normalizeDec(r)), nil
}

func numericOverflowErr() error {
	return sqlerr.New(sqlerr.NumericValueOutOfRange, "value overflows numeric format")
}

// nbaseWeight returns PostgreSQL's weight (in base-10000 digits) of the
// first non-zero digit group of a finite non-zero x, and that group's value.
func nbaseWeight(x *apd.Decimal) (weight int64, first int64) {
	coeff := x.Coeff.String()
	if coeff == "0" {
		return 0, 0
	}
	nd := int64(len(coeff))
	p := nd - 1 + int64(x.Exponent) // decimal position of the leading digit
	w := floorDiv(p, nbaseDigits)
	width := p - w*nbaseDigits + 1 // digits of the leading group
	var v int64
	for i := int64(0); i < width; i++ {
		v *= 10
		if i < nd {
			v += int64(coeff[i] - '0')
		}
	}
	return w, v
}

// selectDivScale is PostgreSQL's select_div_scale.
func selectDivScale(x, y *apd.Decimal) int32 {
	w1, f1 := nbaseWeight(x)
	w2, f2 := nbaseWeight(y)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	rscale := int64(numericMinSigDigits) - qweight*nbaseDigits
	rscale = max(rscale, int64(dscale(x)), int64(dscale(y)), numericMinDisplayScale)
	rscale = min(rscale, numericMaxDisplayScale)
	return int32(rscale)
}

// divRound returns x/y rounded half away from zero to rscale fractional
// digits, computed exactly with big integers.
func divRound(x, y *apd.Decimal, rscale int32) *apd.Decimal {
	// x/y = (cx*10^ex) / (cy*10^ey); scaled: q = cx*10^(ex-ey+rscale) / cy
	cx := new(big.Int).Set(x.Coeff.MathBigInt())
	cy := new(big.Int).Set(y.Coeff.MathBigInt())
	if x.Negative {
		cx.Neg(cx)
	}
	if y.Negative {
		cy.Neg(cy)
	}
	shift := int64(x.Exponent) - int64(y.Exponent) + int64(rscale)
	ten := big.NewInt(10)
	if shift >= 0 {
		cx.Mul(cx, new(big.Int).Exp(ten, big.NewInt(shift), nil))
	} else {
		cy.Mul(cy, new(big.Int).Exp(ten, big.NewInt(-shift), nil))
	}
	q, r := new(big.Int).QuoRem(cx, cy, new(big.Int))
	// round half away from zero: |2r| >= |cy|
	r2 := new(big.Int).Abs(r)
	r2.Lsh(r2, 1)
	if r2.CmpAbs(cy) >= 0 {
		if (cx.Sign() < 0) != (cy.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	res := new(apd.Decimal)
	res.Coeff.SetMathBigInt(new(big.Int).Abs(q))
	res.Negative = q.Sign() < 0
	res.Exponent = -rscale
	return normalizeDec(res)
}

func numericDiv(a, b types.Datum) (types.Datum, error) {
	x, y := a.Decimal(), b.Decimal()
	if x.Form != apd.Finite || y.Form != apd.Finite {
		switch {
		case isNaNDec(x) || isNaNDec(y):
			return types.DNumeric(decNaN()), nil
		case isInfDec(x) && isInfDec(y):
			return types.DNumeric(decNaN()), nil
		case isInfDec(x):
			if y.IsZero() {
				return types.NullDatum, errDivisionByZero
			}
			return types.DNumeric(decInf(x.Negative != y.Negative)), nil
		default: // finite / inf
			return types.DNumeric(apd.New(0, 0)), nil
		}
	}
	if y.IsZero() {
		return types.NullDatum, errDivisionByZero
	}
	return types.DNumeric(divRound(x, y, selectDivScale(x, y))), nil
}

// numericDivTrunc is div(numeric, numeric): the truncated integer quotient.
func numericDivTrunc(a, b types.Datum) (types.Datum, error) {
	x, y := a.Decimal(), b.Decimal()
	if x.Form != apd.Finite || y.Form != apd.Finite {
		if isNaNDec(x) || isNaNDec(y) || (isInfDec(x) && isInfDec(y)) {
			return types.DNumeric(decNaN()), nil
		}
		if isInfDec(x) {
			if y.IsZero() {
				return types.NullDatum, errDivisionByZero
			}
			return types.DNumeric(decInf(x.Negative != y.Negative)), nil
		}
		return types.DNumeric(apd.New(0, 0)), nil
	}
	if y.IsZero() {
		return types.NullDatum, errDivisionByZero
	}
	r := new(apd.Decimal)
	c := exactCtx.WithPrecision(2000)
	if _, err := c.QuoInteger(r, x, y); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(normalizeDec(r)), nil
}

func numericMod(a, b types.Datum) (types.Datum, error) {
	x, y := a.Decimal(), b.Decimal()
	if x.Form != apd.Finite || y.Form != apd.Finite {
		if isNaNDec(x) || isNaNDec(y) || isInfDec(x) {
			if isInfDec(x) && !isNaNDec(y) && y.Form == apd.Finite && y.IsZero() {
				return types.NullDatum, errDivisionByZero
			}
			return types.DNumeric(decNaN()), nil
		}
		return a, nil // finite % inf = x
	}
	if y.IsZero() {
		return types.NullDatum, errDivisionByZero
	}
	r := new(apd.Decimal)
	c := exactCtx.WithPrecision(2000)
	if _, err := c.Rem(r, x, y); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	// scale max(dscale)
	s := max(dscale(x), dscale(y))
	if dscale(r) < s {
		exactCtx.WithPrecision(4000).Quantize(r, r, -s)
	}
	return types.DNumeric(normalizeDec(r)), nil
}

func numericNeg(a types.Datum) (types.Datum, error) {
	x := a.Decimal()
	r := new(apd.Decimal).Set(x)
	if !(r.Form == apd.Finite && r.IsZero()) && !isNaNDec(r) {
		r.Negative = !r.Negative
	}
	return types.DNumeric(r), nil
}

func numericAbs(a types.Datum) (types.Datum, error) {
	r := new(apd.Decimal).Set(a.Decimal())
	r.Negative = false
	return types.DNumeric(r), nil
}

// roundDec rounds x to scale digits (negative scales round left of the
// point), half away from zero; the result has dscale max(scale, 0).
func roundDec(x *apd.Decimal, scale int32, truncate bool) *apd.Decimal {
	if x.Form != apd.Finite {
		return x
	}
	c := roundHalfUpCtx
	if truncate {
		c.Rounding = apd.RoundDown
	}
	r := new(apd.Decimal)
	if -scale < x.Exponent {
		// already fewer digits: just extend the scale
		r.Set(x)
		if scale >= 0 {
			c.Quantize(r, r, -scale)
		}
		return normalizeDec(r)
	}
	c.Quantize(r, x, -scale)
	normalizeDec(r)
	if scale < 0 {
		r.Exponent = 0
	}
	return r
}

func decFromFloat(f float64) *apd.Decimal {
	d := new(apd.Decimal)
	if _, err := d.SetFloat64(f); err != nil {
		return apd.New(0, 0)
	}
	return d
}

func decToFloat(d *apd.Decimal) float64 {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return math.NaN()
	case apd.Infinite:
		if d.Negative {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	f, _ := d.Float64()
	return f
}

func init() {
	two := []types.Type{types.Numeric, types.Numeric}
	regBinop("+", &overload{args: two, ret: types.Numeric, fn2: numericAdd})
	regBinop("-", &overload{args: two, ret: types.Numeric, fn2: numericSub})
	regBinop("*", &overload{args: two, ret: types.Numeric, fn2: numericMul})
	regBinop("/", &overload{args: two, ret: types.Numeric, fn2: numericDiv})
	regBinop("%", &overload{args: two, ret: types.Numeric, fn2: numericMod})
	regBinop("^", &overload{args: two, ret: types.Numeric, fn2: numericPower})
	regUnop("-", &overload{args: []types.Type{types.Numeric}, ret: types.Numeric, fn1: numericNeg})
	regUnop("+", &overload{args: []types.Type{types.Numeric}, ret: types.Numeric, fn1: func(a types.Datum) (types.Datum, error) { return a, nil }})
}
