package expr

import (
	"encoding/binary"
	"math"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/types"
)

// Variance and standard deviation.
//
// Numeric (and integer) inputs keep exact N, sum(x) and sum(x*x) and
// compute the result as PostgreSQL's numeric_stddev_internal does:
// (N*sumX2 - sumX^2) / (N*(N-1)) (or N*N for _pop) with select_div_scale,
// a non-positive numerator giving exactly 0. Float inputs use the
// Youngs-Cramer update that float8_accum uses, with its algebraic inverse
// for retraction.

type numVarAgg struct {
	n           int64
	sumX, sumX2 *apd.Decimal
	samp, sqrt  bool
}

func (s *numVarAgg) upd(x *apd.Decimal, sign int64) error {
	if s.sumX == nil {
		s.sumX, s.sumX2 = apd.New(0, 0), apd.New(0, 0)
	}
	var x2 apd.Decimal
	if _, err := exactCtx.Mul(&x2, x, x); err != nil {
		return err
	}
	s.n += sign
	if sign > 0 {
		exactCtx.Add(s.sumX, s.sumX, x)
		exactCtx.Add(s.sumX2, s.sumX2, &x2)
	} else {
		exactCtx.Sub(s.sumX, s.sumX, x)
		exactCtx.Sub(s.sumX2, s.sumX2, &x2)
	}
	return nil
}

func toDec(d types.Datum) *apd.Decimal {
	if d.Kind() == types.KindNumeric {
		return d.Decimal()
	}
	return apd.New(d.Int(), 0)
}

func (s *numVarAgg) add(args []types.Datum) error { return s.upd(toDec(args[0]), 1) }
func (s *numVarAgg) retract(args []types.Datum) error {
	if s.n == 0 {
		return errRetractUnknown("variance")
	}
	return s.upd(toDec(args[0]), -1)
}

func (s *numVarAgg) result() (types.Datum, error) {
	if s.n == 0 || (s.samp && s.n <= 1) {
		return types.NullDatum, nil
	}
	if isNaNDec(s.sumX) || isInfDec(s.sumX) {
		return types.DNumeric(decNaN()), nil
	}
	n := apd.New(s.n, 0)
	var sx2, nsx2, num apd.Decimal
	exactCtx.Mul(&sx2, s.sumX, s.sumX)
	exactCtx.Mul(&nsx2, n, s.sumX2)
	exactCtx.Sub(&num, &nsx2, &sx2)
	if num.Sign() <= 0 {
		return types.DNumeric(apd.New(0, 0)), nil
	}
	var den apd.Decimal
	if s.samp {
		exactCtx.Mul(&den, n, apd.New(s.n-1, 0))
	} else {
		exactCtx.Mul(&den, n, n)
	}
	normalizeDec(&num)
	rscale := selectDivScale(&num, &den)
	v := divRound(&num, &den, rscale)
	if !s.sqrt {
		return types.DNumeric(v), nil
	}
	r := new(apd.Decimal)
	c := workCtx(integerDigits(v) + int64(rscale) + 10)
	c.Sqrt(r, v)
	return types.DNumeric(finishScale(r, int64(rscale))), nil
}

func (s *numVarAgg) encode(buf []byte) []byte {
	buf = binary.AppendVarint(buf, s.n)
	if s.sumX == nil {
		s.sumX, s.sumX2 = apd.New(0, 0), apd.New(0, 0)
	}
	buf = appendDecimal(buf, s.sumX)
	return appendDecimal(buf, s.sumX2)
}

func (s *numVarAgg) decode(b []byte) ([]byte, error) {
	n, sz := binary.Varint(b)
	if sz <= 0 {
		return nil, errBadState
	}
	s.n = n
	var err error
	if s.sumX, b, err = readDecimal(b[sz:]); err != nil {
		return nil, err
	}
	if s.sumX2, b, err = readDecimal(b); err != nil {
		return nil, err
	}
	return b, nil
}

type floatVarAgg struct {
	n          float64
	sx, sxx    float64
	samp, sqrt bool
}

func (s *floatVarAgg) add(args []types.Datum) error {
	x := args[0].Float()
	s.n++
	s.sx += x
	if s.n > 1 {
		tmp := x*s.n - s.sx
		s.sxx += tmp * tmp / (s.n * (s.n - 1))
		if math.IsInf(s.sx, 0) || math.IsInf(s.sxx, 0) {
			if !math.IsInf(x, 0) && !math.IsInf(s.sx-x, 0) {
				return errFloatOverflow
			}
			s.sxx = math.NaN()
		}
	} else if math.IsNaN(x) || math.IsInf(x, 0) {
		s.sxx = math.NaN()
	} else {
		s.sxx = 0
	}
	return nil
}

func (s *floatVarAgg) retract(args []types.Datum) error {
	if s.n == 0 {
		return errRetractUnknown("variance")
	}
	x := args[0].Float()
	if s.n > 1 {
		tmp := x*s.n - s.sx
		s.sxx -= tmp * tmp / (s.n * (s.n - 1))
	} else {
		s.sxx = 0
	}
	s.n--
	s.sx -= x
	if s.n == 0 {
		s.sx, s.sxx = 0, 0
	}
	if s.sxx < 0 {
		s.sxx = 0
	}
	return nil
}

func (s *floatVarAgg) result() (types.Datum, error) {
	if s.n == 0 || (s.samp && s.n <= 1) {
		return types.NullDatum, nil
	}
	d := s.n
	if s.samp {
		d = s.n - 1
	}
	v := s.sxx / d
	if s.sqrt {
		v = math.Sqrt(v)
	}
	return types.DFloat64(v), nil
}

func (s *floatVarAgg) encode(buf []byte) []byte {
	for _, f := range []float64{s.n, s.sx, s.sxx} {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(f))
	}
	return buf
}

func (s *floatVarAgg) decode(b []byte) ([]byte, error) {
	if len(b) < 24 {
		return nil, errBadState
	}
	s.n = math.Float64frombits(binary.LittleEndian.Uint64(b))
	s.sx = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	s.sxx = math.Float64frombits(binary.LittleEndian.Uint64(b[16:]))
	return b[24:], nil
}

func init() {
	one := func(t types.Type) []types.Type { return []types.Type{t} }
	regAgg("count", &aggSig{args: nil, ret: types.Int64, retractable: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &countAgg{} }})
	regAgg("count", &aggSig{args: one(types.Unknown), ret: types.Int64, retractable: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &countAgg{} }})

	for _, t := range []types.Type{types.Int16, types.Int32, types.Int64} {
		mode, ret := uint8(0), types.Int64
		if t.Kind == types.KindInt64 {
			mode, ret = 1, types.Numeric
		}
		m := mode
		regAgg("sum", &aggSig{args: one(t), ret: ret, retractable: true,
			mk: func([]types.Type, types.Type, bool) aggImpl { return &intSumAgg{mode: m} }})
		regAgg("avg", &aggSig{args: one(t), ret: types.Numeric, retractable: true,
			mk: func([]types.Type, types.Type, bool) aggImpl { return &intSumAgg{mode: 2} }})
	}
	regAgg("sum", &aggSig{args: one(types.Numeric), ret: types.Numeric, retractable: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &numSumAgg{} }})
	regAgg("avg", &aggSig{args: one(types.Numeric), ret: types.Numeric, retractable: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &numSumAgg{avg: true} }})
	regAgg("sum", &aggSig{args: one(types.Float32), ret: types.Float32, retractable: true, inexact: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &floatSumAgg{f32: true} }})
	regAgg("sum", &aggSig{args: one(types.Float64), ret: types.Float64, retractable: true, inexact: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &floatSumAgg{} }})
	for _, t := range []types.Type{types.Float32, types.Float64} {
		regAgg("avg", &aggSig{args: one(t), ret: types.Float64, retractable: true, inexact: true,
			mk: func([]types.Type, types.Type, bool) aggImpl { return &floatSumAgg{avg: true} }})
	}
	regAgg("sum", &aggSig{args: one(types.Interval), ret: types.Interval, retractable: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &intervalSumAgg{} }})
	regAgg("avg", &aggSig{args: one(types.Interval), ret: types.Interval, retractable: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &intervalSumAgg{avg: true} }})

	for _, name := range []string{"min", "max"} {
		sign := 1
		if name == "min" {
			sign = -1
		}
		for _, t := range comparableTypes {
			if t.Kind == types.KindJsonb {
				continue
			}
			sg := sign
			regAgg(name, &aggSig{args: one(t), ret: t, needsInputs: true,
				retFn: func(a []types.Type) types.Type { return a[0] },
				mk: func(at []types.Type, _ types.Type, retractable bool) aggImpl {
					s := &minMaxAgg{sign: sg, typ: at[0]}
					if retractable {
						s.multi = map[string]*msEntry{}
					}
					return s
				}})
		}
	}
	regAgg("string_agg", &aggSig{args: []types.Type{types.Text, types.Text}, ret: types.Text, needsInputs: true,
		mk: func([]types.Type, types.Type, bool) aggImpl { return &stringAgg{} }})
	for _, name := range []string{"bool_and", "every", "bool_or"} {
		and := name != "bool_or"
		regAgg(name, &aggSig{args: one(types.Bool), ret: types.Bool, retractable: true,
			mk: func([]types.Type, types.Type, bool) aggImpl { return &boolAgg{and: and} }})
	}
	stats := map[string][2]bool{ // samp, sqrt
		"stddev": {true, true}, "stddev_samp": {true, true}, "stddev_pop": {false, true},
		"variance": {true, false}, "var_samp": {true, false}, "var_pop": {false, false},
	}
	for name, f := range stats {
		samp, sq := f[0], f[1]
		for _, t := range []types.Type{types.Int16, types.Int32, types.Int64, types.Numeric} {
			regAgg(name, &aggSig{args: one(t), ret: types.Numeric, retractable: true,
				mk: func([]types.Type, types.Type, bool) aggImpl { return &numVarAgg{samp: samp, sqrt: sq} }})
		}
		for _, t := range []types.Type{types.Float32, types.Float64} {
			regAgg(name, &aggSig{args: one(t), ret: types.Float64, retractable: true, inexact: true,
				mk: func([]types.Type, types.Type, bool) aggImpl { return &floatVarAgg{samp: samp, sqrt: sq} }})
		}
	}
}
