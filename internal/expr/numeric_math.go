package expr

import (
	"math"
	"strconv"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/types"
)

// Transcendental numeric functions compute with apd at a working precision
// comfortably above the result scale, then round (half away from zero) to
// the result scale PostgreSQL's numeric.c would choose for the same inputs.

// nbaseGroups returns x's weight and base-10000 digit groups (without
// trailing zero groups), as PostgreSQL's NumericVar holds them.
func nbaseGroups(x *apd.Decimal) (weight int64, groups []int64) {
	coeff := x.Coeff.String()
	if coeff == "0" || x.Form != apd.Finite {
		return 0, nil
	}
	nd := int64(len(coeff))
	lead := nd - 1 + int64(x.Exponent)
	w := floorDiv(lead, nbaseDigits)
	low := floorDiv(int64(x.Exponent), nbaseDigits)
	for g := w; g >= low; g-- {
		var v int64
		for pos := g*nbaseDigits + 3; pos >= g*nbaseDigits; pos-- {
			// digit at decimal position pos
			idx := lead - pos
			v *= 10
			if idx >= 0 && idx < nd {
				v += int64(coeff[idx] - '0')
			}
		}
		groups = append(groups, v)
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	return w, groups
}

func workCtx(digits int64) *apd.Context {
	c := roundHalfUpCtx
	// numeric allows 131072 digits before the point and 16383 after
	c.Precision = uint32(min(max(digits, 30), 150000))
	return &c
}

// integerDigits returns the number of decimal digits before the point.
func integerDigits(x *apd.Decimal) int64 {
	if x.Form != apd.Finite || x.IsZero() {
		return 1
	}
	return max(int64(x.NumDigits())+int64(x.Exponent), 1)
}

func finishScale(r *apd.Decimal, rscale int64) *apd.Decimal {
	rscale = min(max(rscale, numericMinDisplayScale), numericMaxDisplayScale)
	out := new(apd.Decimal)
	c := workCtx(integerDigits(r) + rscale + 5)
	c.Quantize(out, r, int32(-rscale))
	return normalizeDec(out)
}

func numericSqrt(a types.Datum) (types.Datum, error) {
	x := a.Decimal()
	if isNaNDec(x) {
		return a, nil
	}
	if x.Negative && !(x.Form == apd.Finite && x.IsZero()) {
		return types.NullDatum, sqlError(codeInvalidArgumentForPower, "cannot take square root of a negative number")
	}
	if isInfDec(x) {
		return a, nil
	}
	w, _ := nbaseGroups(x)
	sweight := (w+1)*nbaseDigits/2 - 1
	rscale := max(int64(numericMinSigDigits)-sweight, int64(dscale(x)))
	r := new(apd.Decimal)
	c := workCtx(integerDigits(x) + rscale + 10)
	if _, err := c.Sqrt(r, x); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(finishScale(r, rscale)), nil
}

func numericExp(a types.Datum) (types.Datum, error) {
	x := a.Decimal()
	if isNaNDec(x) {
		return a, nil
	}
	if isInfDec(x) {
		if x.Negative {
			return types.DNumeric(apd.New(0, 0)), nil
		}
		return a, nil
	}
	val := decToFloat(x)
	if math.Abs(val) > numericMaxResultScale*3 {
		if val > 0 {
			return types.NullDatum, numericOverflowErr()
		}
		z := apd.New(0, -numericMaxDisplayScale)
		return types.DNumeric(z), nil
	}
	rscale := max(int64(numericMinSigDigits)-int64(val*0.434294481903252), int64(dscale(x)))
	r := new(apd.Decimal)
	c := workCtx(int64(math.Abs(val)*0.4343) + rscale + 10)
	if _, err := c.Exp(r, x); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(finishScale(r, rscale)), nil
}

// estimateLnDweight is PostgreSQL's estimate_ln_dweight: the decimal
// weight of ln(x).
func estimateLnDweight(x *apd.Decimal) int64 {
	if x.Negative || x.Form != apd.Finite || x.IsZero() {
		return 0
	}
	lo, hi := apd.New(9, -1), apd.New(11, -1)
	if x.Cmp(lo) >= 0 && x.Cmp(hi) <= 0 {
		var d apd.Decimal
		exactCtx.Sub(&d, x, apd.New(1, 0))
		w, g := nbaseGroups(&d)
		if len(g) == 0 {
			return 0
		}
		return w*nbaseDigits + int64(math.Log10(float64(g[0])))
	}
	w, g := nbaseGroups(x)
	digits := float64(g[0])
	dweight := w * nbaseDigits
	if len(g) > 1 {
		digits = digits*10000 + float64(g[1])
		dweight -= nbaseDigits
	}
	lnv := math.Log(digits) + float64(dweight)*2.302585092994046
	return int64(math.Log10(math.Abs(lnv)))
}

func lnArgCheck(x *apd.Decimal) error {
	if x.Form == apd.Finite && x.IsZero() {
		return sqlError(codeInvalidArgumentForLog, "cannot take logarithm of zero")
	}
	if x.Negative {
		return sqlError(codeInvalidArgumentForLog, "cannot take logarithm of a negative number")
	}
	return nil
}

func numericLn(a types.Datum) (types.Datum, error) {
	x := a.Decimal()
	if isNaNDec(x) {
		return a, nil
	}
	if err := lnArgCheck(x); err != nil {
		return types.NullDatum, err
	}
	if isInfDec(x) {
		return a, nil
	}
	rscale := max(int64(numericMinSigDigits)-estimateLnDweight(x), int64(dscale(x)))
	r := new(apd.Decimal)
	c := workCtx(rscale + 20)
	if _, err := c.Ln(r, x); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(finishScale(r, rscale)), nil
}

// numericLog is log(base, x).
func numericLog(b, a types.Datum) (types.Datum, error) {
	base, x := b.Decimal(), a.Decimal()
	if isNaNDec(x) || isNaNDec(base) {
		return types.DNumeric(decNaN()), nil
	}
	if err := lnArgCheck(base); err != nil {
		return types.NullDatum, err
	}
	if err := lnArgCheck(x); err != nil {
		return types.NullDatum, err
	}
	if isInfDec(x) || isInfDec(base) {
		if isInfDec(x) && isInfDec(base) {
			return types.DNumeric(decNaN()), nil
		}
		if isInfDec(base) {
			return types.DNumeric(apd.New(0, 0)), nil
		}
		return a, nil
	}
	if base.Cmp(apd.New(1, 0)) == 0 {
		return types.NullDatum, errDivisionByZero
	}
	resultDweight := estimateLnDweight(x) - estimateLnDweight(base)
	rscale := max(int64(numericMinSigDigits)-resultDweight, int64(dscale(base)), int64(dscale(x)))
	c := workCtx(rscale + 30)
	var lx, lb, r apd.Decimal
	c.Ln(&lx, x)
	c.Ln(&lb, base)
	if _, err := c.Quo(&r, &lx, &lb); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(finishScale(&r, rscale)), nil
}

func numericPower(a, b types.Datum) (types.Datum, error) {
	x, y := a.Decimal(), b.Decimal()
	if isNaNDec(x) || isNaNDec(y) {
		if isNaNDec(x) && y.Form == apd.Finite && y.IsZero() {
			return types.DNumeric(apd.New(1, 0)), nil
		}
		if isNaNDec(y) && x.Form == apd.Finite && x.Cmp(apd.New(1, 0)) == 0 {
			return types.DNumeric(apd.New(1, 0)), nil
		}
		return types.DNumeric(decNaN()), nil
	}
	if isInfDec(x) || isInfDec(y) {
		f, err := dpow(types.DFloat64(decToFloat(x)), types.DFloat64(decToFloat(y)))
		if err != nil {
			return types.NullDatum, err
		}
		n, _ := floatToNumeric(f.Float(), false)
		return types.DNumeric(n), nil
	}
	if x.IsZero() && y.Negative {
		return types.NullDatum, sqlError(codeInvalidArgumentForPower, "zero raised to a negative power is undefined")
	}
	yInt := isIntegral(y)
	if x.Negative && !yInt {
		return types.NullDatum, sqlError(codeInvalidArgumentForPower, "a negative number raised to a non-integer power yields a complex result")
	}
	if yInt {
		if e, err := y.Int64(); err == nil && e >= math.MinInt32 && e <= math.MaxInt32 {
			return powerInt(x, e, int64(dscale(y)))
		}
	}
	// general case: exp(y * ln(x))
	if x.IsZero() {
		return types.DNumeric(finishScale(apd.New(0, 0), numericMinSigDigits)), nil
	}
	val := approxLn(x) * decToFloat(y)
	if math.IsNaN(val) {
		val = 0 // ln 1 times an exponent past float64's range
	}
	if math.Abs(val) > numericMaxResultScale*3.01 {
		if val > 0 {
			return types.NullDatum, numericOverflowErr()
		}
		return types.DNumeric(apd.New(0, -numericMaxDisplayScale)), nil
	}
	val *= 0.434294481903252
	rscale := max(int64(numericMinSigDigits)-int64(val), int64(dscale(x)), int64(dscale(y)))
	r := new(apd.Decimal)
	c := workCtx(int64(math.Abs(val)) + rscale + 20)
	if _, err := c.Pow(r, x, y); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(finishScale(r, rscale)), nil
}

// approxLn is ln|x| in double precision for a finite non-zero x of any
// magnitude, from its leading digits and decimal exponent: converting x
// to float64 first would overflow past 1e308, where numeric goes on to
// 131072 digits.
func approxLn(x *apd.Decimal) float64 {
	digits := x.Coeff.String()
	lead := digits[:min(len(digits), 17)]
	f, err := strconv.ParseFloat(lead, 64)
	if err != nil {
		return math.Log(math.Abs(decToFloat(x)))
	}
	return math.Log(f) + float64(len(digits)-len(lead)+int(x.Exponent))*math.Ln10
}

func isIntegral(d *apd.Decimal) bool {
	if d.Exponent >= 0 {
		return true
	}
	var r apd.Decimal
	exactCtx.WithPrecision(4000).Rem(&r, d, apd.New(1, 0))
	return r.IsZero()
}

// powerInt is PostgreSQL 15's power_var_int path: an integral exponent
// gives a result with scale max(16, dscale(base)).
func powerInt(x *apd.Decimal, e int64, _ int64) (types.Datum, error) {
	rscale := max(int64(numericMinSigDigits), int64(dscale(x)))
	rscale = min(rscale, numericMaxDisplayScale)
	if e == 0 {
		return types.DNumeric(finishScale(apd.New(1, 0), rscale)), nil
	}
	// crude overflow test on the decimal weight of the result
	if x.Form == apd.Finite && !x.IsZero() {
		if lw := float64(e) * approxLn(x) / math.Ln10; lw > 131072 {
			return types.NullDatum, numericOverflowErr()
		} else if lw < -float64(rscale)-10 {
			return types.DNumeric(finishScale(apd.New(0, 0), rscale)), nil
		}
	}
	r := new(apd.Decimal)
	f := math.Abs(float64(e) * approxLn(x) / math.Ln10)
	c := workCtx(int64(f) + rscale + 20)
	if _, err := c.Pow(r, x, apd.New(e, 0)); err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	return types.DNumeric(finishScale(r, rscale)), nil
}
