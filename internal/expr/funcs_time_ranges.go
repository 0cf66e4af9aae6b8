package expr

import (
	"time"

	"github.com/runneldb/runnel/internal/types"
)

// date_bin, OVERLAPS and txid_current.

// dateBin is date_bin(stride, ts, origin) for timestamp and timestamptz
// (both bin the absolute microsecond count, so no time zone is involved):
// the start of the stride-wide bin, counted from origin, that holds ts.
func dateBin(stride types.IntervalValue, ts, origin int64) (int64, error) {
	if isInfTS(ts) {
		return ts, nil
	}
	if isInfTS(origin) {
		return 0, sqlError("22008", "origin out of range")
	}
	if stride.Months != 0 {
		return 0, sqlError(codeFeatureNotSupported, "timestamps cannot be binned into intervals containing months or years")
	}
	days, ok := mul64(int64(stride.Days), usPerDay)
	if ok {
		days, ok = add64(days, stride.Micros)
	}
	if !ok {
		return 0, errIntervalOutOfRange
	}
	if days <= 0 {
		return 0, sqlError("22008", "stride must be greater than zero")
	}
	diff, ok := add64(ts, -origin)
	if !ok {
		return 0, errIntervalOutOfRange
	}
	delta := diff - diff%days
	if diff < 0 && diff%days != 0 {
		delta -= days // the bin starts before ts even when origin is later
	}
	r, ok := add64(origin, delta)
	if !ok {
		return 0, errTimestampOutOfRng
	}
	return checkTS(r)
}

// overlaps is (s1, e1) OVERLAPS (s2, e2) over comparable int64 points
// (timestamps, or times of day), with PostgreSQL's NULL rules: an interval
// with one NULL end is the single point of its other end, and the result
// is NULL exactly when the known ends cannot decide it.
func overlaps(a []types.Datum) types.Datum {
	s1, e1, s2, e2 := a[0], a[1], a[2], a[3]
	norm := func(s, e types.Datum) (int64, int64, bool, bool) {
		if s.IsNull() {
			if e.IsNull() {
				return 0, 0, false, false
			}
			return e.Int(), 0, true, false
		}
		if e.IsNull() {
			return s.Int(), 0, true, false
		}
		if s.Int() > e.Int() {
			return e.Int(), s.Int(), true, true
		}
		return s.Int(), e.Int(), true, true
	}
	ts1, te1, ok1, hasE1 := norm(s1, e1)
	ts2, te2, ok2, hasE2 := norm(s2, e2)
	if !ok1 || !ok2 {
		return types.NullDatum
	}
	switch {
	case ts1 > ts2:
		if !hasE2 {
			return types.NullDatum
		}
		if ts1 < te2 {
			return types.DBool(true)
		}
		if !hasE1 {
			return types.NullDatum
		}
		return types.DBool(false)
	case ts1 < ts2:
		if !hasE1 {
			return types.NullDatum
		}
		if ts2 < te1 {
			return types.DBool(true)
		}
		if !hasE2 {
			return types.NullDatum
		}
		return types.DBool(false)
	}
	if !hasE1 || !hasE2 {
		return types.NullDatum
	}
	return types.DBool(true)
}

// txidCurrent backs txid_current(): PostgreSQL returns the current
// transaction's id, the same for every call in the transaction. Runnel has
// no transaction counter, so it returns the statement time in
// microseconds: fixed within a statement, growing from one to the next.
func txidCurrent(ctx *EvalContext) int64 {
	if ctx == nil || ctx.StatementTime.IsZero() {
		return time.Now().UnixMicro()
	}
	return ctx.StatementTime.UnixMicro()
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	TS, TZ, IV, TM := types.Timestamp, types.Timestamptz, types.Interval, types.Time
	for _, t := range []types.Type{TS, TZ} {
		mk := types.DTimestamp
		if t.Kind == types.KindTimestamptz {
			mk = types.DTimestamptz
		}
		regFunc("date_bin", &overload{args: T(IV, t, t), ret: t, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			r, err := dateBin(a[0].Interval(), a[1].Int(), a[2].Int())
			return mk(r), err
		}})
	}
	// overlaps: the grammar's (a, b) OVERLAPS (c, d) is overlaps(a, b, c,
	// d); an interval end is start + interval, computed (as PostgreSQL's
	// SQL-language overloads do) before the NULL rules apply.
	plus := func(ctx *EvalContext, t types.Type, s, iv types.Datum) (types.Datum, error) {
		if s.IsNull() || iv.IsNull() {
			return types.NullDatum, nil
		}
		switch t.Kind {
		case types.KindTimestamptz:
			r, err := timestamptzPlusInterval(ctx, s.Int(), iv.Interval())
			return types.DTimestamptz(r), err
		case types.KindTime:
			return types.DTime(floorMod(s.Int()+iv.Interval().Micros%usPerDay, usPerDay)), nil
		}
		r, err := timestampPlusInterval(s.Int(), iv.Interval())
		return types.DTimestamp(r), err
	}
	for _, t := range []types.Type{TS, TZ, TM} {
		for _, sig := range [][]types.Type{T(t, t, t, t), T(t, IV, t, IV), T(t, t, t, IV), T(t, IV, t, t)} {
			endIv1, endIv2 := sig[1].Kind == types.KindInterval, sig[3].Kind == types.KindInterval
			regFunc("overlaps", &overload{args: sig, ret: types.Bool, nonStrict: true, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
				b := []types.Datum{a[0], a[1], a[2], a[3]}
				var err error
				if endIv1 {
					if b[1], err = plus(ctx, t, a[0], a[1]); err != nil {
						return types.NullDatum, err
					}
				}
				if endIv2 {
					if b[3], err = plus(ctx, t, a[2], a[3]); err != nil {
						return types.NullDatum, err
					}
				}
				return overlaps(b), nil
			}})
		}
	}
	regFunc("txid_current", &overload{args: nil, ret: types.Int64, volatile: true, fn: func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		return types.DInt64(txidCurrent(ctx)), nil
	}})
}
