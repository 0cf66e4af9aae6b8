package expr

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/types"
)

func f8(fn func(float64) (float64, error)) func(a types.Datum) (types.Datum, error) {
	return func(a types.Datum) (types.Datum, error) {
		r, err := fn(a.Float())
		if err != nil {
			return types.NullDatum, err
		}
		return types.DFloat64(r), nil
	}
}

func pure(fn func(float64) float64) func(float64) (float64, error) {
	return func(x float64) (float64, error) {
		r := fn(x)
		if math.IsInf(r, 0) && !math.IsInf(x, 0) {
			return 0, errFloatOverflow
		}
		return r, nil
	}
}

func floatSqrt(x float64) (float64, error) {
	if x < 0 {
		return 0, sqlError(codeInvalidArgumentForPower, "cannot take square root of a negative number")
	}
	return math.Sqrt(x), nil
}

func floatLn(log func(float64) float64) func(float64) (float64, error) {
	return func(x float64) (float64, error) {
		if x == 0 {
			return 0, sqlError(codeInvalidArgumentForLog, "cannot take logarithm of zero")
		}
		if x < 0 {
			return 0, sqlError(codeInvalidArgumentForLog, "cannot take logarithm of a negative number")
		}
		return log(x), nil
	}
}

// log10Float is log10 rounded once from a 34-digit decimal logarithm of
// x's exact binary value, as glibc's log10 (used by PostgreSQL) rounds:
// Go's math.Log10 is log2(x)*(ln 2/ln 10), one ulp off for x = 0.1
// (-0.9999999999999999 where PostgreSQL gives -1).
func log10Float(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		return math.Log10(x)
	}
	var a, d apd.Decimal
	if _, _, err := a.SetString(strconv.FormatFloat(x, 'e', 800, 64)); err != nil {
		return math.Log10(x)
	}
	if _, err := apd.BaseContext.WithPrecision(34).Log10(&d, &a); err != nil {
		return math.Log10(x)
	}
	r, err := strconv.ParseFloat(d.Text('g'), 64)
	if err != nil {
		return math.Log10(x)
	}
	return r
}

func floatExp(x float64) (float64, error) {
	r := math.Exp(x)
	if math.IsInf(r, 0) && !math.IsInf(x, 0) {
		return 0, errFloatOverflow
	}
	if r == 0 && !math.IsInf(x, 0) {
		return 0, errFloatUnderflow
	}
	return r, nil
}

func numUnary(fn func(d *apd.Decimal) *apd.Decimal) func(a types.Datum) (types.Datum, error) {
	return func(a types.Datum) (types.Datum, error) { return types.DNumeric(fn(a.Decimal())), nil }
}

func numCeilFloor(ceil bool) func(d *apd.Decimal) *apd.Decimal {
	return func(d *apd.Decimal) *apd.Decimal {
		if d.Form != apd.Finite {
			return d
		}
		r := new(apd.Decimal)
		if ceil {
			exactCtx.WithPrecision(4000).Ceil(r, d)
		} else {
			exactCtx.WithPrecision(4000).Floor(r, d)
		}
		return normalizeDec(r)
	}
}

func numSign(d *apd.Decimal) *apd.Decimal {
	switch {
	case isNaNDec(d):
		return d
	case d.Form == apd.Finite && d.IsZero():
		return apd.New(0, 0)
	case d.Negative:
		return apd.New(-1, 0)
	}
	return apd.New(1, 0)
}

func clampScale(v int64) int32 {
	return int32(min(max(v, -numericMaxResultScale), numericMaxResultScale))
}

func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func intGcd(k types.Kind) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		x, y := a.Int(), b.Int()
		g := gcd64(x, y)
		if g == math.MinInt64 || (k == types.KindInt32 && g == math.MinInt32) {
			return types.NullDatum, intRangeErr(k)
		}
		if g < 0 {
			g = -g
		}
		return mkInt(k, g), nil
	}
}

func intLcm(k types.Kind) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		x, y := a.Int(), b.Int()
		if x == 0 || y == 0 {
			return mkInt(k, 0), nil
		}
		g := gcd64(x, y)
		r, ok := mul64(x/g, y)
		if !ok || !fitsInt(k, r) || r == math.MinInt64 || (k == types.KindInt32 && r == math.MinInt32) {
			return types.NullDatum, intRangeErr(k)
		}
		if r < 0 {
			r = -r
		}
		return mkInt(k, r), nil
	}
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	F, N := types.Float64, types.Numeric
	for _, t := range []types.Type{types.Int16, types.Int32, types.Int64} {
		regFunc("abs", &overload{args: T(t), ret: t, fn1: intAbs(t.Kind)})
		regFunc("mod", &overload{args: T(t, t), ret: t, fn2: intMod(t.Kind)})
	}
	for _, t := range []types.Type{types.Int32, types.Int64} {
		regFunc("gcd", &overload{args: T(t, t), ret: t, fn2: intGcd(t.Kind)})
		regFunc("lcm", &overload{args: T(t, t), ret: t, fn2: intLcm(t.Kind)})
	}
	regFunc("abs", &overload{args: T(types.Float32), ret: types.Float32, fn1: floatAbs(true)})
	regFunc("abs", &overload{args: T(F), ret: F, fn1: floatAbs(false)})
	regFunc("abs", &overload{args: T(N), ret: N, fn1: numericAbs})
	// Prefix @ is abs.
	for _, o := range funcRegistry["abs"] {
		regUnop("@", o)
	}
	regFunc("width_bucket", &overload{args: T(F, F, F, types.Int32), ret: types.Int32, fn: widthBucketFloat})
	regFunc("width_bucket", &overload{args: T(N, N, N, types.Int32), ret: types.Int32, fn: widthBucketNumeric})
	regFunc("mod", &overload{args: T(N, N), ret: N, fn2: numericMod})
	regFunc("div", &overload{args: T(N, N), ret: N, fn2: numericDivTrunc})

	regFunc("sign", &overload{args: T(F), ret: F, fn1: f8(func(x float64) (float64, error) {
		switch {
		case x > 0:
			return 1, nil
		case x < 0:
			return -1, nil
		}
		return 0, nil
	})})
	regFunc("sign", &overload{args: T(N), ret: N, fn1: numUnary(numSign)})
	for _, name := range []string{"ceil", "ceiling"} {
		regFunc(name, &overload{args: T(F), ret: F, fn1: f8(pure(math.Ceil))})
		regFunc(name, &overload{args: T(N), ret: N, fn1: numUnary(numCeilFloor(true))})
	}
	regFunc("floor", &overload{args: T(F), ret: F, fn1: f8(pure(math.Floor))})
	regFunc("floor", &overload{args: T(N), ret: N, fn1: numUnary(numCeilFloor(false))})
	// round(float8) is rint: ties to even. round(numeric): ties away from zero.
	regFunc("round", &overload{args: T(F), ret: F, fn1: f8(pure(math.RoundToEven))})
	regFunc("round", &overload{args: T(N), ret: N, fn1: numUnary(func(d *apd.Decimal) *apd.Decimal { return roundDec(d, 0, false) })})
	regFunc("round", &overload{args: T(N, types.Int32), ret: N, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DNumeric(roundDec(a.Decimal(), clampScale(b.Int()), false)), nil
	}})
	regFunc("trunc", &overload{args: T(F), ret: F, fn1: f8(pure(math.Trunc))})
	regFunc("trunc", &overload{args: T(N), ret: N, fn1: numUnary(func(d *apd.Decimal) *apd.Decimal { return roundDec(d, 0, true) })})
	regFunc("trunc", &overload{args: T(N, types.Int32), ret: N, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DNumeric(roundDec(a.Decimal(), clampScale(b.Int()), true)), nil
	}})
	for _, name := range []string{"power", "pow"} {
		regFunc(name, &overload{args: T(F, F), ret: F, fn2: dpow})
		regFunc(name, &overload{args: T(N, N), ret: N, fn2: numericPower})
	}
	regFunc("sqrt", &overload{args: T(F), ret: F, fn1: f8(floatSqrt)})
	regFunc("sqrt", &overload{args: T(N), ret: N, fn1: numericSqrt})
	regFunc("cbrt", &overload{args: T(F), ret: F, fn1: f8(pure(libmCbrt))})
	regFunc("exp", &overload{args: T(F), ret: F, fn1: f8(floatExp)})
	regFunc("exp", &overload{args: T(N), ret: N, fn1: numericExp})
	regFunc("ln", &overload{args: T(F), ret: F, fn1: f8(floatLn(math.Log))})
	regFunc("ln", &overload{args: T(N), ret: N, fn1: numericLn})
	for _, name := range []string{"log", "log10"} {
		regFunc(name, &overload{args: T(F), ret: F, fn1: f8(floatLn(log10Float))})
		regFunc(name, &overload{args: T(N), ret: N, fn1: func(a types.Datum) (types.Datum, error) {
			return numericLog(types.DNumeric(apd.New(10, 0)), a)
		}})
	}
	regFunc("log", &overload{args: T(N, N), ret: N, fn2: numericLog})
	regFunc("pi", &overload{args: nil, ret: F, fn: func(*EvalContext, []types.Datum) (types.Datum, error) { return types.DFloat64(math.Pi), nil }})
	regFunc("random", &overload{args: nil, ret: F, volatile: true, fn: func(*EvalContext, []types.Datum) (types.Datum, error) {
		return types.DFloat64(rand.Float64()), nil
	}})
	regFunc("degrees", &overload{args: T(F), ret: F, fn1: f8(pure(func(x float64) float64 { return x * 180 / math.Pi }))})
	regFunc("radians", &overload{args: T(F), ret: F, fn1: f8(pure(func(x float64) float64 { return x * math.Pi / 180 }))})
	for name, fn := range map[string]func(float64) float64{"sin": math.Sin, "cos": math.Cos, "tan": math.Tan, "asin": math.Asin, "acos": math.Acos, "atan": math.Atan} {
		fn := fn
		regFunc(name, &overload{args: T(F), ret: F, fn1: f8(func(x float64) (float64, error) {
			r := fn(x)
			if math.IsNaN(r) && !math.IsNaN(x) {
				return 0, sqlError(codeNumericValueOutOfRange, "input is out of range")
			}
			return r, nil
		})})
	}
	regFunc("atan2", &overload{args: T(F, F), ret: F, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DFloat64(math.Atan2(a.Float(), b.Float())), nil
	}})
	regFunc("scale", &overload{args: T(N), ret: types.Int32, fn1: func(a types.Datum) (types.Datum, error) {
		if a.Decimal().Form != apd.Finite {
			return types.NullDatum, nil
		}
		return types.DInt32(dscale(a.Decimal())), nil
	}})
	regFunc("factorial", &overload{args: T(types.Int64), ret: N, fn1: func(a types.Datum) (types.Datum, error) {
		n := a.Int()
		if n < 0 {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "factorial of a negative number is undefined")
		}
		if n > 32177 {
			return types.NullDatum, numericOverflowErr()
		}
		r := new(big.Int).MulRange(1, max(n, 1))
		d := new(apd.Decimal)
		d.Coeff.SetMathBigInt(r)
		return types.DNumeric(d), nil
	}})
}

// width_bucket(operand, low, high, count): the 1-based bucket of operand
// among count equal-width buckets between low and high (0 below, count+1
// above; low > high reverses the direction), with PostgreSQL's 2201G
// errors.
func widthBucketCheck(count int64) error {
	if count <= 0 {
		return sqlError("2201G", "count must be greater than zero")
	}
	return nil
}

func widthBucketFloat(_ *EvalContext, a []types.Datum) (types.Datum, error) {
	op, lo, hi, count := a[0].Float(), a[1].Float(), a[2].Float(), a[3].Int()
	if err := widthBucketCheck(count); err != nil {
		return types.NullDatum, err
	}
	if math.IsNaN(op) || math.IsNaN(lo) || math.IsNaN(hi) {
		return types.NullDatum, sqlError("2201G", "operand, lower bound, and upper bound cannot be NaN")
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return types.NullDatum, sqlError("2201G", "lower and upper bounds must be finite")
	}
	var r int64
	switch {
	case lo < hi:
		switch {
		case op < lo:
			r = 0
		case op >= hi:
			r = count + 1
		default:
			r = int64(float64(count)*(op-lo)/(hi-lo)) + 1
		}
	case lo > hi:
		switch {
		case op > lo:
			r = 0
		case op <= hi:
			r = count + 1
		default:
			r = int64(float64(count)*(lo-op)/(lo-hi)) + 1
		}
	default:
		return types.NullDatum, sqlError("2201G", "lower bound cannot equal upper bound")
	}
	if r > math.MaxInt32 {
		return types.NullDatum, intRangeErr(types.KindInt32)
	}
	return types.DInt32(int32(r)), nil
}

func widthBucketNumeric(_ *EvalContext, a []types.Datum) (types.Datum, error) {
	op, lo, hi, count := a[0].Decimal(), a[1].Decimal(), a[2].Decimal(), a[3].Int()
	if err := widthBucketCheck(count); err != nil {
		return types.NullDatum, err
	}
	if op.Form == apd.NaN || lo.Form == apd.NaN || hi.Form == apd.NaN {
		return types.NullDatum, sqlError("2201G", "operand, lower bound, and upper bound cannot be NaN")
	}
	if lo.Form != apd.Finite || hi.Form != apd.Finite {
		return types.NullDatum, sqlError("2201G", "lower and upper bounds must be finite")
	}
	ctx := apd.BaseContext.WithPrecision(1000)
	bucket := func(num1, num2, den1, den2 *apd.Decimal) (int64, error) {
		// floor(count * (num1 - num2) / (den1 - den2)) + 1, exactly.
		var n, d, q apd.Decimal
		if _, err := ctx.Sub(&n, num1, num2); err != nil {
			return 0, err
		}
		if _, err := ctx.Mul(&n, &n, apd.New(count, 0)); err != nil {
			return 0, err
		}
		if _, err := ctx.Sub(&d, den1, den2); err != nil {
			return 0, err
		}
		if _, err := ctx.QuoInteger(&q, &n, &d); err != nil {
			return 0, err
		}
		v, err := q.Int64()
		return v + 1, err
	}
	var r int64
	var err error
	switch c := lo.Cmp(hi); {
	case c < 0:
		switch {
		case op.Cmp(lo) < 0:
			r = 0
		case op.Cmp(hi) >= 0:
			r = count + 1
		default:
			r, err = bucket(op, lo, hi, lo)
		}
	case c > 0:
		switch {
		case op.Cmp(lo) > 0:
			r = 0
		case op.Cmp(hi) <= 0:
			r = count + 1
		default:
			r, err = bucket(lo, op, lo, hi)
		}
	default:
		return types.NullDatum, sqlError("2201G", "lower bound cannot equal upper bound")
	}
	if err != nil {
		return types.NullDatum, numericOverflowErr()
	}
	if r > math.MaxInt32 {
		return types.NullDatum, intRangeErr(types.KindInt32)
	}
	return types.DInt32(int32(r)), nil
}
