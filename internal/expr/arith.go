package expr

import (
	"math"
	"math/big"
	"strconv"

	"github.com/cockroachdb/apd/v3"

	"github.com/runneldb/runnel/internal/types"
)

// Integer arithmetic follows PostgreSQL's int2/int4/int8 operators: every
// result is range-checked against the result type (22003 "smallint out of
// range" etc.), division truncates toward zero, x % y has the sign of x,
// and division by zero is 22012 for / and % alike.

func intRangeErr(k types.Kind) error {
	switch k {
	case types.KindInt16:
		return errSmallintOutOfRange
	case types.KindInt32:
		return errIntegerOutOfRange
	}
	return errBigintOutOfRange
}

func mkInt(k types.Kind, v int64) types.Datum {
	switch k {
	case types.KindInt16:
		return types.DInt16(int16(v))
	case types.KindInt32:
		return types.DInt32(int32(v))
	}
	return types.DInt64(v)
}

func fitsInt(k types.Kind, v int64) bool {
	switch k {
	case types.KindInt16:
		return v >= math.MinInt16 && v <= math.MaxInt16
	case types.KindInt32:
		return v >= math.MinInt32 && v <= math.MaxInt32
	}
	return true
}

func intAdd(k types.Kind) func(a, b types.Datum) (types.Datum, error) {
	if k == types.KindInt64 {
		return func(a, b types.Datum) (types.Datum, error) {
			x, y := a.Int(), b.Int()
			r := x + y
			if (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0) {
				return types.NullDatum, errBigintOutOfRange
			}
			return types.DInt64(r), nil
		}
	}
	return func(a, b types.Datum) (types.Datum, error) {
		r := a.Int() + b.Int()
		if !fitsInt(k, r) {
			return types.NullDatum, intRangeErr(k)
		}
		return mkInt(k, r), nil
	}
}

func intSub(k types.Kind) func(a, b types.Datum) (types.Datum, error) {
	if k == types.KindInt64 {
		return func(a, b types.Datum) (types.Datum, error) {
			x, y := a.Int(), b.Int()
			r := x - y
			if (x >= 0 && y < 0 && r < 0) || (x < 0 && y > 0 && r >= 0) {
				return types.NullDatum, errBigintOutOfRange
			}
			return types.DInt64(r), nil
		}
	}
	return func(a, b types.Datum) (types.Datum, error) {
		r := a.Int() - b.Int()
		if !fitsInt(k, r) {
			return types.NullDatum, intRangeErr(k)
		}
		return mkInt(k, r), nil
	}
}

// mul64 multiplies with overflow detection.
func mul64(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	r := x * y
	if r/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
		return 0, false
	}
	return r, true
}

func add64(x, y int64) (int64, bool) {
	r := x + y
	if (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0) {
		return 0, false
	}
	return r, true
}

func intMul(k types.Kind) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		r, ok := mul64(a.Int(), b.Int())
		if !ok || !fitsInt(k, r) {
			return types.NullDatum, intRangeErr(k)
		}
		return mkInt(k, r), nil
	}
}

func intDiv(k types.Kind) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		x, y := a.Int(), b.Int()
		if y == 0 {
			return types.NullDatum, errDivisionByZero
		}
		if y == -1 {
			if k == types.KindInt64 && x == math.MinInt64 {
				return types.NullDatum, errBigintOutOfRange
			}
			if !fitsInt(k, -x) {
				return types.NullDatum, intRangeErr(k)
			}
			return mkInt(k, -x), nil
		}
		return mkInt(k, x/y), nil
	}
}

func intMod(k types.Kind) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		x, y := a.Int(), b.Int()
		if y == 0 {
			return types.NullDatum, errDivisionByZero
		}
		if y == -1 {
			return mkInt(k, 0), nil
		}
		return mkInt(k, x%y), nil
	}
}

func intNeg(k types.Kind) func(a types.Datum) (types.Datum, error) {
	return func(a types.Datum) (types.Datum, error) {
		x := a.Int()
		if k == types.KindInt64 && x == math.MinInt64 {
			return types.NullDatum, errBigintOutOfRange
		}
		if !fitsInt(k, -x) {
			return types.NullDatum, intRangeErr(k)
		}
		return mkInt(k, -x), nil
	}
}

func intAbs(k types.Kind) func(a types.Datum) (types.Datum, error) {
	neg := intNeg(k)
	return func(a types.Datum) (types.Datum, error) {
		if a.Int() < 0 {
			return neg(a)
		}
		return a, nil
	}
}

// Float arithmetic: results that overflow to infinity from finite inputs
// are 22003 "value out of range: overflow"; products that underflow to
// zero from non-zero inputs are "underflow"; x/0 is 22012 even for floats.

func checkFloat(r float64, infOK bool, zeroOK bool, f32 bool) (types.Datum, error) {
	if math.IsInf(r, 0) && !infOK {
		return types.NullDatum, errFloatOverflow
	}
	if r == 0 && !zeroOK {
		return types.NullDatum, errFloatUnderflow
	}
	if f32 {
		return types.DFloat32(float32(r)), nil
	}
	return types.DFloat64(r), nil
}

func floatOp(f32 bool, op byte) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		x, y := a.Float(), b.Float()
		infIn := math.IsInf(x, 0) || math.IsInf(y, 0)
		var r float64
		switch op {
		case '+':
			if f32 {
				r = float64(float32(x) + float32(y))
			} else {
				r = x + y
			}
			return checkFloat(r, infIn, true, f32)
		case '-':
			if f32 {
				r = float64(float32(x) - float32(y))
			} else {
				r = x - y
			}
			return checkFloat(r, infIn, true, f32)
		case '*':
			if f32 {
				r = float64(float32(x) * float32(y))
			} else {
				r = x * y
			}
			return checkFloat(r, infIn, x == 0 || y == 0, f32)
		case '/':
			if y == 0 && !math.IsNaN(x) {
				return types.NullDatum, errDivisionByZero
			}
			if f32 {
				r = float64(float32(x) / float32(y))
			} else {
				r = x / y
			}
			return checkFloat(r, math.IsInf(x, 0), x == 0 || math.IsInf(y, 0), f32)
		}
		return types.NullDatum, nil
	}
}

func floatNeg(f32 bool) func(a types.Datum) (types.Datum, error) {
	return func(a types.Datum) (types.Datum, error) {
		if f32 {
			return types.DFloat32(-float32(a.Float())), nil
		}
		return types.DFloat64(-a.Float()), nil
	}
}

func floatAbs(f32 bool) func(a types.Datum) (types.Datum, error) {
	return func(a types.Datum) (types.Datum, error) {
		if f32 {
			return types.DFloat32(float32(math.Abs(a.Float()))), nil
		}
		return types.DFloat64(math.Abs(a.Float())), nil
	}
}

// dpow is float8 ^ float8 (PostgreSQL's dpow, including its errors).
func dpow(a, b types.Datum) (types.Datum, error) {
	x, y := a.Float(), b.Float()
	if math.IsNaN(x) {
		if y == 0 {
			return types.DFloat64(1), nil
		}
		return types.DFloat64(math.NaN()), nil
	}
	if math.IsNaN(y) {
		if x == 1 {
			return types.DFloat64(1), nil
		}
		return types.DFloat64(math.NaN()), nil
	}
	if x == 0 && y < 0 {
		return types.NullDatum, sqlError(codeInvalidArgumentForPower, "zero raised to a negative power is undefined")
	}
	if x < 0 && math.Floor(y) != y && !math.IsInf(y, 0) {
		return types.NullDatum, sqlError(codeInvalidArgumentForPower, "a negative number raised to a non-integer power yields a complex result")
	}
	r := powFloat(x, y)
	if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return types.NullDatum, errFloatOverflow
	}
	if r == 0 && x != 0 && !math.IsInf(y, 0) && !math.IsInf(x, 0) {
		return types.NullDatum, errFloatUnderflow
	}
	return types.DFloat64(r), nil
}

// Comparison operators compare two values of one type with types.Compare,
// which orders NaN above every other float and equal to itself, as
// PostgreSQL does.
func cmpOp(op string) func(a, b types.Datum) (types.Datum, error) {
	switch op {
	case "=":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(types.Compare(a, b) == 0), nil }
	case "<>":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(types.Compare(a, b) != 0), nil }
	case "<":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(types.Compare(a, b) < 0), nil }
	case "<=":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(types.Compare(a, b) <= 0), nil }
	case ">":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(types.Compare(a, b) > 0), nil }
	case ">=":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(types.Compare(a, b) >= 0), nil }
	}
	return nil
}

// intCmpOp is a faster comparison for integer-like kinds.
func intCmpOp(op string) func(a, b types.Datum) (types.Datum, error) {
	switch op {
	case "=":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(a.Int() == b.Int()), nil }
	case "<>":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(a.Int() != b.Int()), nil }
	case "<":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(a.Int() < b.Int()), nil }
	case "<=":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(a.Int() <= b.Int()), nil }
	case ">":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(a.Int() > b.Int()), nil }
	case ">=":
		return func(a, b types.Datum) (types.Datum, error) { return types.DBool(a.Int() >= b.Int()), nil }
	}
	return nil
}

// intShift shifts a left (or arithmetically right) by n as PostgreSQL's
// int2/int4/int8 shift operators do on the machines it runs on: int2 and
// int4 shift a 32-bit value by n mod 32 (int2's result then wraps to 16
// bits), int8 a 64-bit value by n mod 64.
func intShift(k types.Kind, a, n int64, left bool) types.Datum {
	if k == types.KindInt64 {
		c := uint(n & 63)
		if left {
			return mkInt(k, a<<c)
		}
		return mkInt(k, a>>c)
	}
	c := uint(n & 31)
	v := int32(a)
	if left {
		v <<= c
	} else {
		v >>= c
	}
	if k == types.KindInt16 {
		return mkInt(k, int64(int16(v)))
	}
	return mkInt(k, int64(v))
}

var comparisonOps = []string{"=", "<>", "<", "<=", ">", ">="}

// comparableTypes have the six comparison operators on themselves.
var comparableTypes = []types.Type{
	types.Bool, types.Int16, types.Int32, types.Int64, types.Float32, types.Float64, types.Numeric,
	types.Text, types.Bytea, types.Date, types.Time, types.Timestamp, types.Timestamptz,
	types.Interval, types.Jsonb, types.UUID,
}

func init() {
	for _, t := range []types.Type{types.Int16, types.Int32, types.Int64} {
		k := t.Kind
		two := []types.Type{t, t}
		regBinop("+", &overload{args: two, ret: t, fn2: intAdd(k)})
		regBinop("-", &overload{args: two, ret: t, fn2: intSub(k)})
		regBinop("*", &overload{args: two, ret: t, fn2: intMul(k)})
		regBinop("/", &overload{args: two, ret: t, fn2: intDiv(k)})
		regBinop("%", &overload{args: two, ret: t, fn2: intMod(k)})
		// Bitwise operators (pgjdbc's getIndexInfo reads indoption & 1).
		// The result of two values of one width fits that width.
		regBinop("&", &overload{args: two, ret: t, fn2: func(a, b types.Datum) (types.Datum, error) { return mkInt(k, a.Int()&b.Int()), nil }})
		regBinop("|", &overload{args: two, ret: t, fn2: func(a, b types.Datum) (types.Datum, error) { return mkInt(k, a.Int()|b.Int()), nil }})
		regBinop("#", &overload{args: two, ret: t, fn2: func(a, b types.Datum) (types.Datum, error) { return mkInt(k, a.Int()^b.Int()), nil }})
		regUnop("~", &overload{args: []types.Type{t}, ret: t, fn1: func(a types.Datum) (types.Datum, error) { return mkInt(k, ^a.Int()), nil }})
		// Shifts take an int4 count, as PostgreSQL's int2shl/int4shl/int8shl.
		shiftArgs := []types.Type{t, types.Int32}
		regBinop("<<", &overload{args: shiftArgs, ret: t, fn2: func(a, b types.Datum) (types.Datum, error) { return intShift(k, a.Int(), b.Int(), true), nil }})
		regBinop(">>", &overload{args: shiftArgs, ret: t, fn2: func(a, b types.Datum) (types.Datum, error) { return intShift(k, a.Int(), b.Int(), false), nil }})
		regUnop("-", &overload{args: []types.Type{t}, ret: t, fn1: intNeg(k)})
		regUnop("+", &overload{args: []types.Type{t}, ret: t, fn1: func(a types.Datum) (types.Datum, error) { return a, nil }})
	}
	for _, t := range []types.Type{types.Float32, types.Float64} {
		f32 := t.Kind == types.KindFloat32
		two := []types.Type{t, t}
		for _, op := range []byte{'+', '-', '*', '/'} {
			regBinop(string(op), &overload{args: two, ret: t, fn2: floatOp(f32, op)})
		}
		regUnop("-", &overload{args: []types.Type{t}, ret: t, fn1: floatNeg(f32)})
		regUnop("+", &overload{args: []types.Type{t}, ret: t, fn1: func(a types.Datum) (types.Datum, error) { return a, nil }})
	}
	// Cross-width integer operators, as PostgreSQL has them (int48pl,
	// int24lt, ...): the result is the wider type, and no cast is
	// evaluated per row.
	ints := []types.Type{types.Int16, types.Int32, types.Int64}
	for _, a := range ints {
		for _, b := range ints {
			if a.Kind == b.Kind {
				continue
			}
			wide := a
			if b.Kind > a.Kind {
				wide = b
			}
			two := []types.Type{a, b}
			regBinop("+", &overload{args: two, ret: wide, fn2: intAdd(wide.Kind)})
			regBinop("-", &overload{args: two, ret: wide, fn2: intSub(wide.Kind)})
			regBinop("*", &overload{args: two, ret: wide, fn2: intMul(wide.Kind)})
			regBinop("/", &overload{args: two, ret: wide, fn2: intDiv(wide.Kind)})
			for _, op := range comparisonOps {
				regBinop(op, &overload{args: two, ret: types.Bool, fn2: intCmpOp(op)})
			}
		}
	}
	// Mixed-width float operators, as PostgreSQL has them (float48pl,
	// float84lt, ...): both sides are compared and computed in double
	// precision. Operator resolution then prefers them (float8 is the
	// preferred numeric type) whenever an integer or numeric meets a real,
	// so real < bigint widens both sides instead of rounding the bigint
	// to real.
	for _, two := range [][]types.Type{{types.Float32, types.Float64}, {types.Float64, types.Float32}} {
		for _, op := range []byte{'+', '-', '*', '/'} {
			regBinop(string(op), &overload{args: two, ret: types.Float64, fn2: floatOp(false, op)})
		}
		for _, op := range comparisonOps {
			f := cmpOp(op)
			regBinop(op, &overload{args: two, ret: types.Bool, fn2: func(a, b types.Datum) (types.Datum, error) {
				return f(types.DFloat64(a.Float()), types.DFloat64(b.Float()))
			}})
		}
	}
	regBinop("^", &overload{args: []types.Type{types.Float64, types.Float64}, ret: types.Float64, fn2: dpow})
	for _, t := range comparableTypes {
		two := []types.Type{t, t}
		for _, op := range comparisonOps {
			f := cmpOp(op)
			switch t.Kind {
			case types.KindBool, types.KindInt16, types.KindInt32, types.KindInt64, types.KindDate,
				types.KindTime, types.KindTimestamp, types.KindTimestamptz:
				f = intCmpOp(op)
			case types.KindJsonb:
				f = jsonbCmpOp(op)
			}
			regBinop(op, &overload{args: two, ret: types.Bool, fn2: f})
		}
	}
}

// powFloat is pow() rounded as C's correctly-rounded pow rounds: Go's
// math.Pow multiplies by repeated squaring for integral exponents, which
// can be one ulp off, so small integral exponents are computed in 256-bit
// precision and rounded once.
func powFloat(x, y float64) float64 {
	if y == math.Trunc(y) && math.Abs(y) <= 64 && x != 0 && !math.IsInf(x, 0) && !math.IsNaN(x) {
		n := int(math.Abs(y))
		acc := new(big.Float).SetPrec(256).SetFloat64(1)
		base := new(big.Float).SetPrec(256).SetFloat64(x)
		for i := 0; i < n; i++ {
			acc.Mul(acc, base)
		}
		if y < 0 {
			acc.Quo(new(big.Float).SetPrec(256).SetFloat64(1), acc)
		}
		r, _ := acc.Float64()
		return r
	}
	if x > 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) && !math.IsNaN(y) && !math.IsNaN(x) {
		return powDecimal(x, y)
	}
	return math.Pow(x, y)
}

// powDecimal computes x^y for x > 0 in 40-digit decimal arithmetic and
// rounds once: Go's math.Pow loses up to hundreds of ulps for large |y*ln x|,
// where glibc's pow (used by PostgreSQL) is correctly rounded.
func powDecimal(x, y float64) float64 {
	var a, b, d apd.Decimal
	// The operands' exact binary values, not their shortest decimal
	// spellings: 0.1 is 0.1000000000000000055..., and the difference shows
	// in x^y when |y*ln x| is large (1e-300 ^ 0.1 = 9.999999999999962e-31).
	if _, _, err := a.SetString(strconv.FormatFloat(x, 'e', 800, 64)); err != nil {
		return math.Pow(x, y)
	}
	if _, _, err := b.SetString(strconv.FormatFloat(y, 'e', 800, 64)); err != nil {
		return math.Pow(x, y)
	}
	c := apd.BaseContext.WithPrecision(40)
	if _, err := c.Pow(&d, &a, &b); err != nil {
		return math.Pow(x, y)
	}
	r, err := strconv.ParseFloat(d.Text('g'), 64)
	if err != nil {
		// out of float64 range: let the caller's overflow/underflow checks see it
		return math.Pow(x, y)
	}
	return r
}
