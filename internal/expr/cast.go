package expr

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// CastExpr converts its input to To.
type CastExpr struct {
	E        Expr
	To       types.Type
	Explicit bool
	fn       castFunc
	// folded caches the result for a constant input whose conversion
	// depends on the session (timestamptz literals), keyed by the context.
	folded atomic.Pointer[foldedCast]
}

type foldedCast struct {
	loc *time.Location
	now time.Time
	v   types.Datum
}

type castFunc func(ctx *EvalContext, d types.Datum) (types.Datum, error)

func (c *CastExpr) Type() types.Type { return c.To }
func (c *CastExpr) String() string {
	return "CAST(" + c.E.String() + " AS " + c.To.Name() + ")"
}

func (c *CastExpr) Eval(ctx *EvalContext, row types.Row) (types.Datum, error) {
	if k, ok := c.E.(*Const); ok && ctx != nil {
		if f := c.folded.Load(); f != nil && f.loc == ctx.Location && f.now.Equal(ctx.StatementTime) {
			return f.v, nil
		}
		v, err := c.eval(ctx, k.Value)
		if err == nil {
			c.folded.Store(&foldedCast{loc: ctx.Location, now: ctx.StatementTime, v: v})
		}
		return v, err
	}
	d, err := c.E.Eval(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	return c.eval(ctx, d)
}

func (c *CastExpr) eval(ctx *EvalContext, d types.Datum) (types.Datum, error) {
	if d.IsNull() {
		return types.NullDatum, nil
	}
	return c.fn(ctx, d)
}

// NewCast converts e to type to in context cc (CastExplicit for CAST and
// ::, CastAssignment for INSERT/UPDATE targets, CastImplicit otherwise).
// A cast that is not allowed in cc is 42846 "cannot cast type X to Y".
// Untyped literals are converted at bind time where the conversion does
// not depend on the session.
func NewCast(e Expr, to types.Type, cc CastContext) (Expr, error) {
	return coerceTo(e, to, cc)
}

// CoerceUnknown gives an untyped literal (a quoted string or NULL) the type
// to; expressions of any other type are returned unchanged.
func CoerceUnknown(e Expr, to types.Type) (Expr, error) {
	if !isUnknown(e.Type()) {
		return e, nil
	}
	return coerceTo(e, to, CastImplicit)
}

// ResolveUnknown turns a still-untyped expression into text, as PostgreSQL
// does for SELECT 'abc' and for the output of a subquery.
func ResolveUnknown(e Expr) (Expr, error) { return CoerceUnknown(e, types.Text) }

func cannotCast(from, to types.Type) error {
	return sqlerr.Errorf(codeCannotCoerce, "cannot cast type %s to %s", from.Name(), to.Name())
}

// sessionDependent reports whether parsing text as t depends on the
// session (time zone, current time), so it cannot be folded at bind time.
func sessionDependent(t types.Type) bool {
	switch t.Kind {
	case types.KindDate, types.KindTime, types.KindTimestamp, types.KindTimestamptz:
		return true
	}
	return false
}

func coerceTo(e Expr, to types.Type, cc CastContext) (Expr, error) {
	from := e.Type()
	if from == to && !isUnknown(to) {
		return e, nil
	}
	if to.Kind == types.KindNull || to.Kind == types.KindUnknown {
		return e, nil
	}
	c, ok := castContextOf(from, to)
	if !ok || c > cc {
		return nil, cannotCast(from, to)
	}
	if sameBase(from, to) && (to.Mod < 0 || to.Mod == from.Mod) {
		return e, nil
	}
	explicit := cc == CastExplicit
	fn := castFn(from, to, explicit)
	if fn == nil {
		return nil, cannotCast(from, to)
	}
	if k, isConst := e.(*Const); isConst {
		if k.Value.IsNull() {
			return &Const{Value: types.NullDatum, Typ: to}, nil
		}
		// Only untyped literals are converted at bind time (PostgreSQL
		// resolves literal types while parsing); other constant casts stay
		// lazy so that an untaken CASE branch cannot raise an error.
		if isUnknown(from) && !sessionDependent(to) {
			v, err := fn(nil, k.Value)
			if err != nil {
				return nil, err
			}
			return &Const{Value: v, Typ: to}, nil
		}
	}
	if from.Kind == types.KindNull {
		return &Const{Value: types.NullDatum, Typ: to}, nil
	}
	return &CastExpr{E: e, To: to, Explicit: explicit, fn: fn}, nil
}

func fmtOpts(ctx *EvalContext) *types.FormatOptions {
	if ctx == nil {
		return nil
	}
	return &types.FormatOptions{Location: ctx.Location, Now: ctx.StatementTime}
}

func ctxLoc(ctx *EvalContext) *time.Location {
	if ctx == nil || ctx.Location == nil {
		return time.UTC
	}
	return ctx.Location
}

// castFn returns the conversion from one type to another (nil if none).
func castFn(from, to types.Type, explicit bool) castFunc {
	typmod := func(d types.Datum) (types.Datum, error) { return types.ApplyTypmod(d, to, explicit) }
	if from.Kind == types.KindUnknown || from.Kind == types.KindVarchar || from.Kind == types.KindNull {
		if to.Kind == types.KindVarchar {
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				return typmod(types.DVarchar(d.Str()))
			}
		}
		return func(ctx *EvalContext, d types.Datum) (types.Datum, error) {
			v, err := types.ParseText(d.Str(), baseType(to), fmtOpts(ctx))
			if err != nil {
				return types.NullDatum, err
			}
			return typmod(v)
		}
	}
	if to.Kind == types.KindVarchar {
		if from.Kind == types.KindBool {
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				if d.Bool() {
					return typmod(types.DVarchar("true"))
				}
				return typmod(types.DVarchar("false"))
			}
		}
		return func(ctx *EvalContext, d types.Datum) (types.Datum, error) {
			return typmod(types.DVarchar(types.FormatText(d, from, fmtOpts(ctx))))
		}
	}
	if from.Kind == types.KindArray && to.Kind == types.KindArray {
		return arrayCastFn(from, to, explicit)
	}
	if from.Kind == to.Kind {
		return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return typmod(d) }
	}
	switch from.Kind {
	case types.KindInt16, types.KindInt32, types.KindInt64:
		switch to.Kind {
		case types.KindInt16, types.KindInt32, types.KindInt64:
			k := to.Kind
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				if !fitsInt(k, d.Int()) {
					return types.NullDatum, intRangeErr(k)
				}
				return mkInt(k, d.Int()), nil
			}
		case types.KindFloat32:
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return types.DFloat32(float32(d.Int())), nil }
		case types.KindFloat64:
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return types.DFloat64(float64(d.Int())), nil }
		case types.KindNumeric:
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				return typmod(types.DNumeric(apd.New(d.Int(), 0)))
			}
		case types.KindBool:
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return types.DBool(d.Int() != 0), nil }
		}
	case types.KindFloat32, types.KindFloat64:
		f32 := from.Kind == types.KindFloat32
		switch to.Kind {
		case types.KindInt16, types.KindInt32, types.KindInt64:
			k := to.Kind
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return floatToInt(d.Float(), k) }
		case types.KindFloat32:
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				f := d.Float()
				r := float32(f)
				if math.IsInf(float64(r), 0) && !math.IsInf(f, 0) {
					return types.NullDatum, errFloatOverflow
				}
				if r == 0 && f != 0 {
					return types.NullDatum, errFloatUnderflow
				}
				return types.DFloat32(r), nil
			}
		case types.KindFloat64:
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return types.DFloat64(d.Float()), nil }
		case types.KindNumeric:
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				n, err := floatToNumeric(d.Float(), f32)
				if err != nil {
					return types.NullDatum, err
				}
				return typmod(types.DNumeric(n))
			}
		}
	case types.KindNumeric:
		switch to.Kind {
		case types.KindInt16, types.KindInt32, types.KindInt64:
			k := to.Kind
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return numericToInt(d.Decimal(), k) }
		case types.KindFloat32, types.KindFloat64:
			f32 := to.Kind == types.KindFloat32
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return numericToFloat(d.Decimal(), f32) }
		}
	case types.KindBool:
		if to.Kind == types.KindInt32 {
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return types.DInt32(int32(d.Int())), nil }
		}
	case types.KindDate:
		switch to.Kind {
		case types.KindTimestamp:
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				v, err := dateToTimestamp(d.Int())
				return types.DTimestamp(v), err
			}
		case types.KindTimestamptz:
			return func(ctx *EvalContext, d types.Datum) (types.Datum, error) {
				v, err := dateToTimestamp(d.Int())
				if err != nil || isInfTS(v) {
					return types.DTimestamptz(v), err
				}
				return types.DTimestamptz(localToUTC(v, ctxLoc(ctx))), nil
			}
		}
	case types.KindTimestamp, types.KindTimestamptz:
		tz := from.Kind == types.KindTimestamptz
		local := func(ctx *EvalContext, v int64) int64 {
			if tz && !isInfTS(v) {
				return utcToLocal(v, ctxLoc(ctx))
			}
			return v
		}
		switch to.Kind {
		case types.KindDate:
			return func(ctx *EvalContext, d types.Datum) (types.Datum, error) {
				v := local(ctx, d.Int())
				if isInfTS(v) {
					return types.DDate(v), nil
				}
				return types.DDate(floorDiv(v, usPerDay)), nil
			}
		case types.KindTime:
			return func(ctx *EvalContext, d types.Datum) (types.Datum, error) {
				v := local(ctx, d.Int())
				if isInfTS(v) {
					return types.NullDatum, errTimestampOutOfRng
				}
				return typmod(types.DTime(floorMod(v, usPerDay)))
			}
		case types.KindTimestamp:
			return func(ctx *EvalContext, d types.Datum) (types.Datum, error) {
				return typmod(types.DTimestamp(local(ctx, d.Int())))
			}
		case types.KindTimestamptz:
			return func(ctx *EvalContext, d types.Datum) (types.Datum, error) {
				v := d.Int()
				if isInfTS(v) {
					return types.DTimestamptz(v), nil
				}
				return typmod(types.DTimestamptz(localToUTC(v, ctxLoc(ctx))))
			}
		}
	case types.KindTime:
		if to.Kind == types.KindInterval {
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				return types.DInterval(types.IntervalValue{Micros: d.Int()}), nil
			}
		}
	case types.KindInterval:
		if to.Kind == types.KindTime {
			return func(_ *EvalContext, d types.Datum) (types.Datum, error) {
				return typmod(types.DTime(floorMod(d.Interval().Micros, usPerDay)))
			}
		}
	case types.KindJsonb:
		return func(_ *EvalContext, d types.Datum) (types.Datum, error) { return jsonbToScalar(d.Str(), to) }
	}
	return nil
}

// floatToInt rounds to nearest even (rint) and range-checks, as float8 ->
// int casts do.
func floatToInt(f float64, k types.Kind) (types.Datum, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return types.NullDatum, intRangeErr(k)
	}
	r := math.RoundToEven(f)
	if k == types.KindInt64 {
		if r < -9223372036854775808.0 || r >= 9223372036854775808.0 {
			return types.NullDatum, errBigintOutOfRange
		}
		return types.DInt64(int64(r)), nil
	}
	if r < math.MinInt32-1.0 || r > math.MaxInt32+1.0 || !fitsInt(k, int64(r)) {
		return types.NullDatum, intRangeErr(k)
	}
	return mkInt(k, int64(r)), nil
}

// floatToNumeric converts through the shortest-but-DBL_DIG text, as
// PostgreSQL does (float8 -> 15 significant digits, float4 -> 6).
func floatToNumeric(f float64, f32 bool) (*apd.Decimal, error) {
	switch {
	case math.IsNaN(f):
		return &apd.Decimal{Form: apd.NaN}, nil
	case math.IsInf(f, 1):
		return &apd.Decimal{Form: apd.Infinite}, nil
	case math.IsInf(f, -1):
		return &apd.Decimal{Form: apd.Infinite, Negative: true}, nil
	}
	prec := 15
	if f32 {
		prec = 6
	}
	s := strconv.FormatFloat(f, 'g', prec, 64)
	d, _, err := apd.NewFromString(s)
	if err != nil {
		return nil, sqlError(sqlerr.InvalidTextRepresentation, "invalid input syntax for type numeric: %q", s)
	}
	// %g output may carry an exponent; normalise to a plain scale (dscale
	// = digits after the point, never negative).
	if d.Exponent > 0 {
		var m apd.BigInt
		m.Exp(apd.NewBigInt(10), apd.NewBigInt(int64(d.Exponent)), nil)
		d.Coeff.Mul(&d.Coeff, &m)
		d.Exponent = 0
	}
	trimTrailingZeros(d)
	return d, nil
}

// trimTrailingZeros removes fractional trailing zeros (what %g printing
// then numeric_in would produce).
func trimTrailingZeros(d *apd.Decimal) {
	if d.Exponent >= 0 || d.Coeff.Sign() == 0 {
		if d.Coeff.Sign() == 0 && d.Exponent < 0 {
			d.Exponent = 0
		}
		return
	}
	ten := apd.NewBigInt(10)
	var q, r apd.BigInt
	for d.Exponent < 0 {
		q.QuoRem(&d.Coeff, ten, &r)
		if r.Sign() != 0 {
			break
		}
		d.Coeff.Set(&q)
		d.Exponent++
	}
}

var roundHalfUpCtx = apd.Context{
	Precision:   2000,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       apd.DefaultTraps,
	Rounding:    apd.RoundHalfUp,
}

// numericToInt rounds half away from zero and range-checks.
func numericToInt(d *apd.Decimal, k types.Kind) (types.Datum, error) {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return types.NullDatum, sqlError(sqlerr.FeatureNotSupported, "cannot convert NaN to %s", kindTypeName(k))
	case apd.Infinite:
		return types.NullDatum, sqlError(sqlerr.FeatureNotSupported, "cannot convert infinity to %s", kindTypeName(k))
	}
	var r apd.Decimal
	if _, err := roundHalfUpCtx.Quantize(&r, d, 0); err != nil {
		return types.NullDatum, intRangeErr(k)
	}
	v, err := r.Int64()
	if err != nil || !fitsInt(k, v) {
		return types.NullDatum, intRangeErr(k)
	}
	return mkInt(k, v), nil
}

func kindTypeName(k types.Kind) string {
	return types.Type{Kind: k, Mod: -1}.Name()
}

func numericToFloat(d *apd.Decimal, f32 bool) (types.Datum, error) {
	var f float64
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		f = math.NaN()
	case apd.Infinite:
		f = math.Inf(1)
		if d.Negative {
			f = math.Inf(-1)
		}
	default:
		bits := 64
		if f32 {
			bits = 32
		}
		v, err := strconv.ParseFloat(d.Text('f'), bits)
		if err != nil {
			name := "double precision"
			if f32 {
				name = "real"
			}
			return types.NullDatum, sqlError(sqlerr.NumericValueOutOfRange, "\"%s\" is out of range for type %s", d.Text('f'), name)
		}
		f = v
	}
	if f32 {
		return types.DFloat32(float32(f)), nil
	}
	return types.DFloat64(f), nil
}

// jsonbToScalar implements the jsonb -> bool/numeric/int/float casts.
func jsonbToScalar(j string, to types.Type) (types.Datum, error) {
	s := strings.TrimSpace(j)
	kind := jsonKindOf(s)
	want := "number"
	if to.Kind == types.KindBool {
		want = "boolean"
	}
	if kind != want {
		if kind == "object" || kind == "array" {
			return types.NullDatum, sqlError(sqlerr.InvalidParameterValue, "cannot cast jsonb %s to type %s", kind, to.Name())
		}
		return types.NullDatum, sqlError(sqlerr.InvalidParameterValue, "cannot cast jsonb %s to type %s", kind, to.Name())
	}
	if to.Kind == types.KindBool {
		return types.DBool(s == "true"), nil
	}
	n, err := types.ParseText(s, types.Numeric, nil)
	if err != nil {
		return types.NullDatum, err
	}
	return castFn(types.Numeric, to, true)(nil, n)
}
