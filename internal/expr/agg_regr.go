package expr

import (
	"encoding/binary"
	"math"

	"github.com/runneldb/runnel/internal/types"
)

// Two-variable statistics: corr, covar_pop, covar_samp and the regr_*
// family, all (Y, X) over double precision as in PostgreSQL.
//
// The state is PostgreSQL's float8_regr_accum: N, Sx, Sy and the
// Youngs-Cramer sums of squared (co)deviations Sxx, Syy, Sxy, updated with
// the same formula (so results print the same digits). Retraction applies
// the algebraic inverse of one update; like variance over floats it can
// drift in the last bits from a recomputation (InexactRetract), and
// retracting from an empty state is an error (I6).
type regrAgg struct {
	fn                       string
	n, sx, sy, sxx, syy, sxy float64
}

func (s *regrAgg) add(args []types.Datum) error {
	y, x := args[0].Float(), args[1].Float()
	old, oldSx, oldSy := s.n, s.sx, s.sy
	s.n++
	s.sx += x
	s.sy += y
	if old > 0 {
		tx, ty := x*s.n-s.sx, y*s.n-s.sy
		scale := 1.0 / (s.n * old)
		s.sxx += tx * tx * scale
		s.syy += ty * ty * scale
		s.sxy += tx * ty * scale
		// An infinity from finite inputs is an overflow (22003); from an
		// infinite input the sums become NaN, as PostgreSQL does.
		inf := math.IsInf
		if inf(s.sx, 0) || inf(s.sxx, 0) {
			if !inf(oldSx, 0) && !inf(x, 0) {
				return errFloatOverflow
			}
			s.sxx = math.NaN()
		}
		if inf(s.sy, 0) || inf(s.syy, 0) {
			if !inf(oldSy, 0) && !inf(y, 0) {
				return errFloatOverflow
			}
			s.syy = math.NaN()
		}
		if inf(s.sxy, 0) {
			if !inf(oldSx, 0) && !inf(x, 0) && !inf(oldSy, 0) && !inf(y, 0) {
				return errFloatOverflow
			}
			s.sxy = math.NaN()
		}
		return nil
	}
	// The first value: the sums of squares are 0, or NaN after a NaN or
	// infinite input, as PostgreSQL sets them.
	s.sxx, s.syy, s.sxy = 0, 0, 0
	if math.IsNaN(x) || math.IsInf(x, 0) {
		s.sxx, s.sxy = math.NaN(), math.NaN()
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		s.syy, s.sxy = math.NaN(), math.NaN()
	}
	return nil
}

func (s *regrAgg) retract(args []types.Datum) error {
	if s.n == 0 {
		return errRetractUnknown(s.fn)
	}
	y, x := args[0].Float(), args[1].Float()
	if s.n > 1 {
		tx, ty := x*s.n-s.sx, y*s.n-s.sy
		scale := 1.0 / (s.n * (s.n - 1))
		s.sxx -= tx * tx * scale
		s.syy -= ty * ty * scale
		s.sxy -= tx * ty * scale
	}
	s.n--
	s.sx -= x
	s.sy -= y
	if s.n == 0 {
		*s = regrAgg{fn: s.fn}
	}
	s.sxx, s.syy = max(s.sxx, 0), max(s.syy, 0)
	return nil
}

func (s *regrAgg) result() (types.Datum, error) {
	f := types.DFloat64
	if s.fn == "regr_count" {
		return types.DInt64(int64(s.n)), nil
	}
	if s.n < 1 {
		return types.NullDatum, nil
	}
	switch s.fn {
	case "covar_pop":
		return f(s.sxy / s.n), nil
	case "covar_samp":
		if s.n < 2 {
			return types.NullDatum, nil
		}
		return f(s.sxy / (s.n - 1)), nil
	case "corr":
		if s.sxx == 0 || s.syy == 0 {
			return types.NullDatum, nil
		}
		return f(s.sxy / math.Sqrt(s.sxx*s.syy)), nil
	case "regr_r2":
		if s.sxx == 0 {
			return types.NullDatum, nil
		}
		if s.syy == 0 {
			return f(1), nil
		}
		return f((s.sxy * s.sxy) / (s.sxx * s.syy)), nil
	case "regr_slope":
		if s.sxx == 0 {
			return types.NullDatum, nil
		}
		return f(s.sxy / s.sxx), nil
	case "regr_intercept":
		if s.sxx == 0 {
			return types.NullDatum, nil
		}
		return f((s.sy - s.sx*s.sxy/s.sxx) / s.n), nil
	case "regr_avgx":
		return f(s.sx / s.n), nil
	case "regr_avgy":
		return f(s.sy / s.n), nil
	case "regr_sxx":
		return f(s.sxx), nil
	case "regr_syy":
		return f(s.syy), nil
	}
	return f(s.sxy), nil // regr_sxy
}

func (s *regrAgg) encode(buf []byte) []byte {
	for _, v := range []float64{s.n, s.sx, s.sy, s.sxx, s.syy, s.sxy} {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	return buf
}

func (s *regrAgg) decode(b []byte) ([]byte, error) {
	if len(b) < 48 {
		return nil, errBadState
	}
	for i, p := range []*float64{&s.n, &s.sx, &s.sy, &s.sxx, &s.syy, &s.sxy} {
		*p = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return b[48:], nil
}

func init() {
	F := types.Float64
	for _, name := range []string{"corr", "covar_pop", "covar_samp", "regr_count", "regr_r2", "regr_slope", "regr_intercept",
		"regr_avgx", "regr_avgy", "regr_sxx", "regr_syy", "regr_sxy"} {
		ret := F
		if name == "regr_count" {
			ret = types.Int64
		}
		fn := name
		regAgg(name, &aggSig{args: []types.Type{F, F}, ret: ret, retractable: true, inexact: name != "regr_count",
			mk: func([]types.Type, types.Type, bool) aggImpl { return &regrAgg{fn: fn} }})
	}
}
