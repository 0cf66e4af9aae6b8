package expr

import (
	"math"

	"github.com/runneldb/runnel/internal/types"
)

// Date/time arithmetic with PostgreSQL's semantics: adding months keeps
// the day of month, clamped to the month's last day; days and months are
// added in local (session time zone) wall-clock time for timestamptz,
// while the interval's time part is added as an absolute duration.

// addMonthsDays adds months then days to wall-clock micros.
func addMonthsDays(ts int64, months, days int32) (int64, error) {
	if months == 0 && days == 0 {
		return ts, nil
	}
	day := floorDiv(ts, usPerDay)
	tod := ts - day*usPerDay
	if months != 0 {
		y, m, d := civilFromDays(day)
		mm := int64(m-1) + int64(months)
		y += floorDiv(mm, 12)
		m = int(floorMod(mm, 12)) + 1
		if dim := daysInMonth(y, m); d > dim {
			d = dim
		}
		day = daysFromCivil(y, m, d)
	}
	day += int64(days)
	r, ok := mul64(day, usPerDay)
	if !ok {
		return 0, errTimestampOutOfRng
	}
	return r + tod, nil
}

func checkTS(v int64) (int64, error) {
	if v < minTimestamp || v > maxTimestamp {
		return 0, errTimestampOutOfRng
	}
	return v, nil
}

func timestampPlusInterval(ts int64, iv types.IntervalValue) (int64, error) {
	if isInfTS(ts) {
		return ts, nil
	}
	r, err := addMonthsDays(ts, iv.Months, iv.Days)
	if err != nil {
		return 0, err
	}
	r, ok := add64(r, iv.Micros)
	if !ok {
		return 0, errTimestampOutOfRng
	}
	return checkTS(r)
}

func timestamptzPlusInterval(ctx *EvalContext, ts int64, iv types.IntervalValue) (int64, error) {
	if isInfTS(ts) {
		return ts, nil
	}
	if iv.Months != 0 || iv.Days != 0 {
		loc := ctxLoc(ctx)
		local, err := addMonthsDays(utcToLocal(ts, loc), iv.Months, iv.Days)
		if err != nil {
			return 0, err
		}
		ts = localToUTC(local, loc)
	}
	r, ok := add64(ts, iv.Micros)
	if !ok {
		return 0, errTimestampOutOfRng
	}
	return checkTS(r)
}

// justifyHours moves whole days out of the time part (sign-preserving).
func justifyHours(iv types.IntervalValue) types.IntervalValue {
	d := iv.Micros / usPerDay
	iv.Micros -= d * usPerDay
	iv.Days += int32(d)
	if iv.Days > 0 && iv.Micros < 0 {
		iv.Micros += usPerDay
		iv.Days--
	} else if iv.Days < 0 && iv.Micros > 0 {
		iv.Micros -= usPerDay
		iv.Days++
	}
	return iv
}

func timestampMinus(a, b types.Datum) (types.Datum, error) {
	x, y := a.Int(), b.Int()
	if isInfTS(x) || isInfTS(y) {
		return types.NullDatum, sqlError("22008", "cannot subtract infinite timestamps")
	}
	d, ok := add64(x, -y)
	if !ok {
		return types.NullDatum, errIntervalOutOfRange
	}
	return types.DInterval(justifyHours(types.IntervalValue{Micros: d})), nil
}

func negIV(iv types.IntervalValue) types.IntervalValue {
	return types.IntervalValue{Months: -iv.Months, Days: -iv.Days, Micros: -iv.Micros}
}

func dateCheck(v int64) (types.Datum, error) {
	if v < minDate || v > maxDate {
		return types.NullDatum, errDateOutOfRange
	}
	return types.DDate(v), nil
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	// date +/- integer, date - date
	regBinop("+", &overload{args: T(types.Date, types.Int32), ret: types.Date, fn2: func(a, b types.Datum) (types.Datum, error) {
		if isInfTS(a.Int()) {
			return a, nil
		}
		return dateCheck(a.Int() + b.Int())
	}})
	regBinop("+", &overload{args: T(types.Int32, types.Date), ret: types.Date, fn2: func(a, b types.Datum) (types.Datum, error) {
		if isInfTS(b.Int()) {
			return b, nil
		}
		return dateCheck(a.Int() + b.Int())
	}})
	regBinop("-", &overload{args: T(types.Date, types.Int32), ret: types.Date, fn2: func(a, b types.Datum) (types.Datum, error) {
		if isInfTS(a.Int()) {
			return a, nil
		}
		return dateCheck(a.Int() - b.Int())
	}})
	regBinop("-", &overload{args: T(types.Date, types.Date), ret: types.Int32, fn2: func(a, b types.Datum) (types.Datum, error) {
		if isInfTS(a.Int()) || isInfTS(b.Int()) {
			return types.NullDatum, sqlError("22008", "cannot subtract infinite dates")
		}
		return types.DInt32(int32(a.Int() - b.Int())), nil
	}})
	// date + time, date +/- interval -> timestamp
	dateTime := func(d, t types.Datum) (types.Datum, error) {
		v, err := dateToTimestamp(d.Int())
		if err != nil || isInfTS(v) {
			return types.DTimestamp(v), err
		}
		r, err := checkTS(v + t.Int())
		return types.DTimestamp(r), err
	}
	regBinop("+", &overload{args: T(types.Date, types.Time), ret: types.Timestamp, fn2: dateTime})
	regBinop("+", &overload{args: T(types.Time, types.Date), ret: types.Timestamp, fn2: func(a, b types.Datum) (types.Datum, error) { return dateTime(b, a) }})
	dateIv := func(d types.Datum, iv types.IntervalValue) (types.Datum, error) {
		v, err := dateToTimestamp(d.Int())
		if err != nil {
			return types.NullDatum, err
		}
		r, err := timestampPlusInterval(v, iv)
		return types.DTimestamp(r), err
	}
	regBinop("+", &overload{args: T(types.Date, types.Interval), ret: types.Timestamp, fn2: func(a, b types.Datum) (types.Datum, error) { return dateIv(a, b.Interval()) }})
	regBinop("+", &overload{args: T(types.Interval, types.Date), ret: types.Timestamp, fn2: func(a, b types.Datum) (types.Datum, error) { return dateIv(b, a.Interval()) }})
	regBinop("-", &overload{args: T(types.Date, types.Interval), ret: types.Timestamp, fn2: func(a, b types.Datum) (types.Datum, error) { return dateIv(a, negIV(b.Interval())) }})
	// timestamp +/- interval
	tsIv := func(a types.Datum, iv types.IntervalValue) (types.Datum, error) {
		r, err := timestampPlusInterval(a.Int(), iv)
		return types.DTimestamp(r), err
	}
	regBinop("+", &overload{args: T(types.Timestamp, types.Interval), ret: types.Timestamp, fn2: func(a, b types.Datum) (types.Datum, error) { return tsIv(a, b.Interval()) }})
	regBinop("+", &overload{args: T(types.Interval, types.Timestamp), ret: types.Timestamp, fn2: func(a, b types.Datum) (types.Datum, error) { return tsIv(b, a.Interval()) }})
	regBinop("-", &overload{args: T(types.Timestamp, types.Interval), ret: types.Timestamp, fn2: func(a, b types.Datum) (types.Datum, error) { return tsIv(a, negIV(b.Interval())) }})
	regBinop("-", &overload{args: T(types.Timestamp, types.Timestamp), ret: types.Interval, fn2: timestampMinus})
	// timestamptz +/- interval (session time zone)
	tzIv := func(ctx *EvalContext, a types.Datum, iv types.IntervalValue) (types.Datum, error) {
		r, err := timestamptzPlusInterval(ctx, a.Int(), iv)
		return types.DTimestamptz(r), err
	}
	regBinop("+", &overload{args: T(types.Timestamptz, types.Interval), ret: types.Timestamptz, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) { return tzIv(ctx, a[0], a[1].Interval()) }})
	regBinop("+", &overload{args: T(types.Interval, types.Timestamptz), ret: types.Timestamptz, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) { return tzIv(ctx, a[1], a[0].Interval()) }})
	regBinop("-", &overload{args: T(types.Timestamptz, types.Interval), ret: types.Timestamptz, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		return tzIv(ctx, a[0], negIV(a[1].Interval()))
	}})
	regBinop("-", &overload{args: T(types.Timestamptz, types.Timestamptz), ret: types.Interval, fn2: timestampMinus})
	// time +/- interval, time - time
	timeIv := func(t types.Datum, iv types.IntervalValue, sign int64) (types.Datum, error) {
		return types.DTime(floorMod(t.Int()+sign*(iv.Micros%usPerDay), usPerDay)), nil
	}
	regBinop("+", &overload{args: T(types.Time, types.Interval), ret: types.Time, fn2: func(a, b types.Datum) (types.Datum, error) { return timeIv(a, b.Interval(), 1) }})
	regBinop("+", &overload{args: T(types.Interval, types.Time), ret: types.Time, fn2: func(a, b types.Datum) (types.Datum, error) { return timeIv(b, a.Interval(), 1) }})
	regBinop("-", &overload{args: T(types.Time, types.Interval), ret: types.Time, fn2: func(a, b types.Datum) (types.Datum, error) { return timeIv(a, b.Interval(), -1) }})
	regBinop("-", &overload{args: T(types.Time, types.Time), ret: types.Interval, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DInterval(types.IntervalValue{Micros: a.Int() - b.Int()}), nil
	}})
	// interval arithmetic
	regBinop("+", &overload{args: T(types.Interval, types.Interval), ret: types.Interval, fn2: func(a, b types.Datum) (types.Datum, error) {
		r, err := intervalAdd(a.Interval(), b.Interval())
		return types.DInterval(r), err
	}})
	regBinop("-", &overload{args: T(types.Interval, types.Interval), ret: types.Interval, fn2: func(a, b types.Datum) (types.Datum, error) {
		r, err := intervalSub(a.Interval(), b.Interval())
		return types.DInterval(r), err
	}})
	regUnop("-", &overload{args: T(types.Interval), ret: types.Interval, fn1: func(a types.Datum) (types.Datum, error) {
		r, err := intervalNeg(a.Interval())
		return types.DInterval(r), err
	}})
	regUnop("+", &overload{args: T(types.Interval), ret: types.Interval, fn1: func(a types.Datum) (types.Datum, error) { return a, nil }})
	mulIv := func(iv types.Datum, f types.Datum) (types.Datum, error) {
		r, err := intervalMulFloat(iv.Interval(), f.Float())
		return types.DInterval(r), err
	}
	regBinop("*", &overload{args: T(types.Interval, types.Float64), ret: types.Interval, fn2: mulIv})
	regBinop("*", &overload{args: T(types.Float64, types.Interval), ret: types.Interval, fn2: func(a, b types.Datum) (types.Datum, error) { return mulIv(b, a) }})
	regBinop("/", &overload{args: T(types.Interval, types.Float64), ret: types.Interval, fn2: func(a, b types.Datum) (types.Datum, error) {
		r, err := intervalDivFloat(a.Interval(), b.Float())
		return types.DInterval(r), err
	}})
	_ = math.MaxInt64
}
