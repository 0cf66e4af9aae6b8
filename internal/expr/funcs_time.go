package expr

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// civil is a broken-down wall-clock time.
type civil struct {
	year           int64 // astronomical: 0 is 1 BC
	month, day     int
	hour, min, sec int
	usec           int64 // microseconds within the second
	days           int64 // days since 1970-01-01
	offset         int64 // zone offset in seconds (timestamptz only)
	zone           string
	interval       bool // to_char(interval): signed fields, no calendar
}

func toCivil(wall int64) civil {
	day := floorDiv(wall, usPerDay)
	tod := wall - day*usPerDay
	y, m, d := civilFromDays(day)
	return civil{year: y, month: m, day: d, hour: int(tod / usPerHour), min: int(tod / usPerMin % 60),
		sec: int(tod / usPerSec % 60), usec: tod % usPerSec, days: day}
}

func fromCivil(c civil) int64 {
	return daysFromCivil(c.year, c.month, c.day)*usPerDay + int64(c.hour)*usPerHour + int64(c.min)*usPerMin + int64(c.sec)*usPerSec + c.usec
}

// wallOf returns the wall-clock civil time of a timestamp datum (in the
// session zone for timestamptz).
func wallOf(ctx *EvalContext, d types.Datum, tz bool) civil {
	if !tz {
		return toCivil(d.Int())
	}
	loc := ctxLoc(ctx)
	w := utcToLocal(d.Int(), loc)
	c := toCivil(w)
	c.offset = (w - d.Int()) / usPerSec
	name, _ := time.Unix(floorDiv(d.Int(), usPerSec), 0).In(loc).Zone()
	c.zone = name
	return c
}

func unitErr(unit string, t types.Type) error {
	return sqlError(codeFeatureNotSupported, "unit \"%s\" not supported for type %s", unit, t.Name())
}

func unrecognizedUnit(unit string, t types.Type) error {
	return sqlError(codeInvalidParameterValue, "unit \"%s\" not recognized for type %s", unit, t.Name())
}

// normUnit maps PostgreSQL's unit spellings to one name.
func normUnit(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	switch u {
	case "microsecond", "microseconds", "us", "usec", "usecs", "useconds":
		return "microseconds"
	case "millisecond", "milliseconds", "ms", "msec", "msecs", "mseconds":
		return "milliseconds"
	case "second", "seconds", "s", "sec", "secs":
		return "second"
	case "minute", "minutes", "m", "min", "mins":
		return "minute"
	case "hour", "hours", "h", "hr", "hrs":
		return "hour"
	case "day", "days", "d":
		return "day"
	case "week", "weeks", "w":
		return "week"
	case "month", "months", "mon", "mons":
		return "month"
	case "quarter", "qtr":
		return "quarter"
	case "year", "years", "y", "yr", "yrs":
		return "year"
	case "decade", "decades", "dec", "decs":
		return "decade"
	case "century", "centuries", "c", "cent":
		return "century"
	case "millennium", "millennia", "mil", "mils", "millenniums":
		return "millennium"
	}
	return u
}

// truncCivil truncates c to unit; ok is false for unknown units.
func truncCivil(c civil, unit string) (civil, bool) {
	switch unit {
	case "millennium":
		if c.year > 0 {
			c.year = ((c.year+999)/1000)*1000 - 999
		} else {
			c.year = -((999 - (c.year - 1)) / 1000 * 1000) + 1
		}
		c.month, c.day = 1, 1
	case "century":
		if c.year > 0 {
			c.year = ((c.year+99)/100)*100 - 99
		} else {
			c.year = -((99 - (c.year - 1)) / 100 * 100) + 1
		}
		c.month, c.day = 1, 1
	case "decade":
		if c.year > 0 {
			c.year = (c.year / 10) * 10
		} else {
			c.year = -((8 - (c.year - 1)) / 10 * 10)
		}
		c.month, c.day = 1, 1
	case "year":
		c.month, c.day = 1, 1
	case "quarter":
		c.month, c.day = (c.month-1)/3*3+1, 1
	case "month":
		c.day = 1
	case "week":
		dow := int(floorMod(c.days+3, 7)) // 0 = Monday
		y, m, d := civilFromDays(c.days - int64(dow))
		c.year, c.month, c.day = y, m, d
	case "day":
	case "hour":
		c.min, c.sec, c.usec = 0, 0, 0
		return c, true
	case "minute":
		c.sec, c.usec = 0, 0
		return c, true
	case "second":
		c.usec = 0
		return c, true
	case "milliseconds":
		c.usec = c.usec / 1000 * 1000
		return c, true
	case "microseconds":
		return c, true
	default:
		return c, false
	}
	c.hour, c.min, c.sec, c.usec = 0, 0, 0, 0
	return c, true
}

func dateTrunc(ctx *EvalContext, unitD, v types.Datum, t types.Type) (types.Datum, error) {
	unit := normUnit(unitD.Str())
	if isInfTS(v.Int()) {
		return v, nil
	}
	tz := t.Kind == types.KindTimestamptz
	c := wallOf(ctx, v, tz)
	r, ok := truncCivil(c, unit)
	if !ok {
		return types.NullDatum, unrecognizedUnit(unitD.Str(), t)
	}
	w := fromCivil(r)
	if tz {
		return types.DTimestamptz(localToUTC(w, ctxLoc(ctx))), nil
	}
	return types.DTimestamp(w), nil
}

func intervalTrunc(unitD, v types.Datum) (types.Datum, error) {
	unit := normUnit(unitD.Str())
	iv := v.Interval()
	years, mons := iv.Months/12, iv.Months%12
	r := types.IntervalValue{}
	switch unit {
	case "millennium":
		r.Months = years / 1000 * 1000 * 12
	case "century":
		r.Months = years / 100 * 100 * 12
	case "decade":
		r.Months = years / 10 * 10 * 12
	case "year":
		r.Months = years * 12
	case "quarter":
		r.Months = years*12 + mons/3*3
	case "month":
		r.Months = iv.Months
	case "day":
		r.Months, r.Days = iv.Months, iv.Days
	case "hour", "minute", "second", "milliseconds", "microseconds":
		r.Months, r.Days = iv.Months, iv.Days
		q := map[string]int64{"hour": usPerHour, "minute": usPerMin, "second": usPerSec, "milliseconds": 1000, "microseconds": 1}[unit]
		r.Micros = iv.Micros / q * q
	case "week":
		return types.NullDatum, sqlError(codeFeatureNotSupported, "unit \"%s\" not supported for type interval", unitD.Str()).(*sqlerr.Error).WithDetail("Months usually have fractional weeks.")
	default:
		return types.NullDatum, unrecognizedUnit(unitD.Str(), types.Interval)
	}
	return types.DInterval(r), nil
}

func isoWeek(c civil) (year int64, week int) {
	t := time.Date(int(c.year), time.Month(c.month), c.day, 0, 0, 0, 0, time.UTC)
	y, w := t.ISOWeek()
	return int64(y), w
}

// extractField returns EXTRACT(field FROM v) as a decimal (PostgreSQL 14+
// returns numeric; date_part converts it to float8).
func extractField(ctx *EvalContext, fieldD, v types.Datum, t types.Type) (*apd.Decimal, error) {
	raw := strings.ToLower(strings.TrimSpace(fieldD.Str()))
	field := normUnit(raw)
	switch t.Kind {
	case types.KindInterval:
		return extractInterval(field, raw, v.Interval())
	case types.KindTime:
		c := toCivil(v.Int())
		switch field {
		case "hour", "minute", "second", "milliseconds", "microseconds":
			return extractClock(field, c), nil
		case "epoch":
			return apd.New(v.Int(), -6), nil
		}
		return nil, unitErr(raw, t)
	}
	if isInfTS(v.Int()) {
		switch field {
		case "epoch", "year", "decade", "century", "millennium", "isoyear", "julian":
			return &apd.Decimal{Form: apd.Infinite, Negative: v.Int() < 0}, nil
		}
		return nil, nil
	}
	var c civil
	isDate := t.Kind == types.KindDate
	if isDate {
		c = toCivil(v.Int() * usPerDay)
	} else {
		c = wallOf(ctx, v, t.Kind == types.KindTimestamptz)
	}
	yearOut := c.year
	if yearOut <= 0 {
		yearOut--
	}
	switch field {
	case "year":
		return apd.New(yearOut, 0), nil
	case "month":
		return apd.New(int64(c.month), 0), nil
	case "day":
		return apd.New(int64(c.day), 0), nil
	case "quarter":
		return apd.New(int64((c.month-1)/3+1), 0), nil
	case "decade":
		if c.year >= 0 {
			return apd.New(c.year/10, 0), nil
		}
		return apd.New(-((8 - (c.year - 1)) / 10), 0), nil
	case "century":
		if c.year > 0 {
			return apd.New((c.year+99)/100, 0), nil
		}
		return apd.New(-((99 - (c.year - 1)) / 100), 0), nil
	case "millennium":
		if c.year > 0 {
			return apd.New((c.year+999)/1000, 0), nil
		}
		return apd.New(-((999 - (c.year - 1)) / 1000), 0), nil
	case "week":
		_, w := isoWeek(c)
		return apd.New(int64(w), 0), nil
	case "isoyear":
		y, _ := isoWeek(c)
		if y <= 0 {
			y--
		}
		return apd.New(y, 0), nil
	case "dow":
		return apd.New(floorMod(c.days+4, 7), 0), nil
	case "isodow":
		return apd.New(floorMod(c.days+3, 7)+1, 0), nil
	case "doy":
		return apd.New(c.days-daysFromCivil(c.year, 1, 1)+1, 0), nil
	case "epoch":
		if isDate {
			return apd.New(v.Int()*86400, 0), nil
		}
		return apd.New(v.Int(), -6), nil
	case "julian":
		jd := c.days + 2440588
		if isDate {
			return apd.New(jd, 0), nil
		}
		tod := fromCivil(c) - c.days*usPerDay
		frac, err := numericDiv(types.DNumeric(apd.New(tod, 0)), types.DNumeric(apd.New(usPerDay, 0)))
		if err != nil {
			return nil, err
		}
		r, err := numericAdd(types.DNumeric(apd.New(jd, 0)), frac)
		if err != nil {
			return nil, err
		}
		return r.Decimal(), nil
	case "hour", "minute", "second", "milliseconds", "microseconds":
		if isDate {
			return nil, unitErr(raw, t)
		}
		return extractClock(field, c), nil
	case "timezone", "timezone_hour", "timezone_minute":
		if t.Kind != types.KindTimestamptz {
			return nil, unitErr(raw, t)
		}
		switch field {
		case "timezone":
			return apd.New(c.offset, 0), nil
		case "timezone_hour":
			return apd.New(c.offset/3600, 0), nil
		}
		return apd.New(c.offset/60%60, 0), nil
	}
	return nil, unrecognizedUnit(raw, t)
}

func extractClock(field string, c civil) *apd.Decimal {
	us := int64(c.sec)*usPerSec + c.usec
	switch field {
	case "hour":
		return apd.New(int64(c.hour), 0)
	case "minute":
		return apd.New(int64(c.min), 0)
	case "second":
		return apd.New(us, -6)
	case "milliseconds":
		return apd.New(us, -3)
	}
	return apd.New(us, 0)
}

func extractInterval(field, raw string, iv types.IntervalValue) (*apd.Decimal, error) {
	years, mons := int64(iv.Months/12), int64(iv.Months%12)
	tod := iv.Micros
	switch field {
	case "millennium":
		return apd.New(years/1000, 0), nil
	case "century":
		return apd.New(years/100, 0), nil
	case "decade":
		return apd.New(years/10, 0), nil
	case "year":
		return apd.New(years, 0), nil
	case "quarter":
		return apd.New(mons/3+1, 0), nil
	case "month":
		return apd.New(mons, 0), nil
	case "day":
		return apd.New(int64(iv.Days), 0), nil
	case "hour":
		return apd.New(tod/usPerHour, 0), nil
	case "minute":
		return apd.New(tod/usPerMin%60, 0), nil
	case "second":
		return apd.New(tod%usPerMin, -6), nil
	case "milliseconds":
		return apd.New(tod%usPerMin, -3), nil
	case "microseconds":
		return apd.New(tod%usPerMin, 0), nil
	case "epoch":
		// years are 365.25 days, months 30 days
		r := new(apd.Decimal)
		parts := []*apd.Decimal{
			apd.New(tod, -6),
			apd.New(years*31557600, 0),
			apd.New(mons*2592000, 0),
			apd.New(int64(iv.Days)*86400, 0),
		}
		r.Set(parts[0])
		for _, p := range parts[1:] {
			exactCtx.Add(r, r, p)
		}
		return r, nil
	}
	switch field {
	case "dow", "isodow", "doy", "week", "isoyear", "julian", "timezone", "timezone_hour", "timezone_minute":
		return nil, unitErr(raw, types.Interval)
	}
	return nil, unrecognizedUnit(raw, types.Interval)
}

func ageOf(a, b civil, aBefore bool) types.IntervalValue {
	usec := a.usec - b.usec
	sec := a.sec - b.sec
	mi := a.min - b.min
	hour := a.hour - b.hour
	day := a.day - b.day
	mon := a.month - b.month
	year := a.year - b.year
	if aBefore {
		usec, sec, mi, hour, day, mon, year = -usec, -sec, -mi, -hour, -day, -mon, -year
	}
	for usec < 0 {
		usec += usPerSec
		sec--
	}
	for sec < 0 {
		sec += 60
		mi--
	}
	for mi < 0 {
		mi += 60
		hour--
	}
	for hour < 0 {
		hour += 24
		day--
	}
	for day < 0 {
		if aBefore {
			day += daysInMonth(a.year, a.month)
		} else {
			day += daysInMonth(b.year, b.month)
		}
		mon--
	}
	for mon < 0 {
		mon += 12
		year--
	}
	iv := types.IntervalValue{Months: int32(year*12 + int64(mon)), Days: int32(day),
		Micros: int64(hour)*usPerHour + int64(mi)*usPerMin + int64(sec)*usPerSec + usec}
	if aBefore {
		iv = negIV(iv)
	}
	return iv
}

func justifyDays(iv types.IntervalValue) types.IntervalValue {
	m := iv.Days / 30
	iv.Days -= m * 30
	iv.Months += m
	if iv.Months > 0 && iv.Days < 0 {
		iv.Days += 30
		iv.Months--
	} else if iv.Months < 0 && iv.Days > 0 {
		iv.Days -= 30
		iv.Months++
	}
	return iv
}

func justifyInterval(iv types.IntervalValue) types.IntervalValue {
	d := iv.Micros / usPerDay
	iv.Micros -= d * usPerDay
	iv.Days += int32(d)
	m := iv.Days / 30
	iv.Days -= m * 30
	iv.Months += m
	if iv.Months > 0 && (iv.Days < 0 || (iv.Days == 0 && iv.Micros < 0)) {
		iv.Days += 30
		iv.Months--
	} else if iv.Months < 0 && (iv.Days > 0 || (iv.Days == 0 && iv.Micros > 0)) {
		iv.Days -= 30
		iv.Months++
	}
	if iv.Days > 0 && iv.Micros < 0 {
		iv.Micros += usPerDay
		iv.Days--
	} else if iv.Days < 0 && iv.Micros > 0 {
		iv.Micros -= usPerDay
		iv.Days++
	}
	return iv
}

func makeDate(y, m, d int64) (int64, error) {
	yy := y
	if y < 0 {
		yy = y + 1 // 1 BC is year 0
	}
	if y == 0 || m < 1 || m > 12 || d < 1 || d > int64(daysInMonth(yy, int(m))) {
		return 0, sqlError(codeDatetimeFieldOverflow, "date field value out of range: %d-%02d-%02d", y, m, d)
	}
	return daysFromCivil(yy, int(m), int(d)), nil
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	X, TS, TZ, D, IV, F := types.Text, types.Timestamp, types.Timestamptz, types.Date, types.Interval, types.Float64
	stmtTime := func(ctx *EvalContext) int64 {
		if ctx == nil || ctx.StatementTime.IsZero() {
			return time.Now().UnixMicro()
		}
		return ctx.StatementTime.UnixMicro()
	}
	for _, n := range []string{"now", "current_timestamp", "transaction_timestamp", "statement_timestamp"} {
		regFunc(n, &overload{args: nil, ret: TZ, volatile: true, fn: func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
			return types.DTimestamptz(stmtTime(ctx)), nil
		}})
	}
	// pg_sleep(seconds), pg_sleep_for(interval) and pg_sleep_until(time)
	// wait, and stop early (with the context's error, which the server
	// reports as 57014) when the statement is cancelled or times out.
	regFunc("pg_sleep", &overload{args: T(F), ret: types.Void, volatile: true, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		return types.NullDatum, sleepSeconds(ctx, a[0].Float())
	}})
	regFunc("pg_sleep_for", &overload{args: T(IV), ret: types.Void, volatile: true, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		iv := a[0].Interval() // as EXTRACT(epoch): a month is 30 days
		secs := (float64(iv.Months)*30+float64(iv.Days))*86400 + float64(iv.Micros)/1e6
		return types.NullDatum, sleepSeconds(ctx, secs)
	}})
	regFunc("pg_sleep_until", &overload{args: T(TZ), ret: types.Void, volatile: true, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		return types.NullDatum, sleepSeconds(ctx, float64(a[0].Int()-time.Now().UnixMicro())/1e6)
	}})
	regFunc("clock_timestamp", &overload{args: nil, ret: TZ, volatile: true, fn: func(*EvalContext, []types.Datum) (types.Datum, error) {
		return types.DTimestamptz(time.Now().UnixMicro()), nil
	}})
	regFunc("localtimestamp", &overload{args: nil, ret: TS, volatile: true, fn: func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		return types.DTimestamp(utcToLocal(stmtTime(ctx), ctxLoc(ctx))), nil
	}})
	regFunc("localtime", &overload{args: nil, ret: types.Time, volatile: true, fn: func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		return types.DTime(floorMod(utcToLocal(stmtTime(ctx), ctxLoc(ctx)), usPerDay)), nil
	}})
	regFunc("current_date", &overload{args: nil, ret: D, volatile: true, fn: func(ctx *EvalContext, _ []types.Datum) (types.Datum, error) {
		return types.DDate(floorDiv(utcToLocal(stmtTime(ctx), ctxLoc(ctx)), usPerDay)), nil
	}})

	regFunc("date_trunc", &overload{args: T(X, TS), ret: TS, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) { return dateTrunc(ctx, a[0], a[1], TS) }})
	regFunc("date_trunc", &overload{args: T(X, TZ), ret: TZ, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) { return dateTrunc(ctx, a[0], a[1], TZ) }})
	regFunc("date_trunc", &overload{args: T(X, IV), ret: IV, fn2: intervalTrunc})

	for _, t := range []types.Type{D, TS, TZ, IV, types.Time} {
		t := t
		regFunc("extract", &overload{args: T(X, t), ret: types.Numeric, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
			r, err := extractField(ctx, a[0], a[1], t)
			if err != nil || r == nil {
				return types.NullDatum, err
			}
			return types.DNumeric(normalizeDec(r)), nil
		}})
		if t.Kind == types.KindDate {
			continue // date_part(text, date) resolves to the timestamp version
		}
		regFunc("date_part", &overload{args: T(X, t), ret: F, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
			r, err := extractField(ctx, a[0], a[1], t)
			if err != nil || r == nil {
				return types.NullDatum, err
			}
			return types.DFloat64(decToFloat(r)), nil
		}})
	}

	regFunc("to_timestamp", &overload{args: T(F), ret: TZ, fn1: func(a types.Datum) (types.Datum, error) {
		f := a.Float()
		switch {
		case math.IsNaN(f):
			return types.NullDatum, sqlError(codeDatetimeFieldOverflow, "timestamp cannot be NaN")
		case math.IsInf(f, 1):
			return types.DTimestamptz(math.MaxInt64), nil
		case math.IsInf(f, -1):
			return types.DTimestamptz(math.MinInt64), nil
		}
		us := math.RoundToEven(f * 1e6)
		if us < float64(minTimestamp) || us > float64(maxTimestamp) {
			return types.NullDatum, sqlError(codeDatetimeFieldOverflow, "timestamp out of range: \"%s\"", strconv.FormatFloat(f, 'g', -1, 64))
		}
		return types.DTimestamptz(int64(us)), nil
	}})
	regFunc("make_date", &overload{args: T(types.Int32, types.Int32, types.Int32), ret: D, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		d, err := makeDate(a[0].Int(), a[1].Int(), a[2].Int())
		return types.DDate(d), err
	}})
	regFunc("make_timestamp", &overload{args: T(types.Int32, types.Int32, types.Int32, types.Int32, types.Int32, F), ret: TS,
		fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			us, err := makeTimestamp(a)
			return types.DTimestamp(us), err
		}})
	// make_timestamptz reads the wall-clock time in the session time zone,
	// or in the zone given as a seventh argument.
	regFunc("make_timestamptz", &overload{args: T(types.Int32, types.Int32, types.Int32, types.Int32, types.Int32, F), ret: TZ,
		fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
			us, err := makeTimestamp(a)
			if err != nil {
				return types.NullDatum, err
			}
			return types.DTimestamptz(localToUTC(us, ctxLoc(ctx))), nil
		}})
	regFunc("make_timestamptz", &overload{args: T(types.Int32, types.Int32, types.Int32, types.Int32, types.Int32, F, X), ret: TZ,
		fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
			us, err := makeTimestamp(a)
			if err != nil {
				return types.NullDatum, err
			}
			loc, err := types.LoadTimeZone(a[6].Str())
			if err != nil {
				return types.NullDatum, err
			}
			return types.DTimestamptz(localToUTC(us, loc)), nil
		}})
	// make_interval(years, months, weeks, days, hours, mins, secs): every
	// parameter defaults to 0, so any prefix may be given (and any subset
	// by name, see FuncParams).
	mkIntervalArgs := T(types.Int32, types.Int32, types.Int32, types.Int32, types.Int32, types.Int32, F)
	for n := 0; n <= len(mkIntervalArgs); n++ {
		regFunc("make_interval", &overload{args: mkIntervalArgs[:n], ret: IV, fn: makeInterval, uncataloged: n < len(mkIntervalArgs)})
	}
	regFunc("age", &overload{args: T(TS, TS), ret: IV, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DInterval(ageOf(toCivil(a.Int()), toCivil(b.Int()), a.Int() < b.Int())), nil
	}})
	regFunc("age", &overload{args: T(TZ, TZ), ret: IV, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		return types.DInterval(ageOf(wallOf(ctx, a[0], true), wallOf(ctx, a[1], true), a[0].Int() < a[1].Int())), nil
	}})
	regFunc("age", &overload{args: T(TS), ret: IV, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		today := floorDiv(utcToLocal(stmtTime(ctx), ctxLoc(ctx)), usPerDay) * usPerDay
		return types.DInterval(ageOf(toCivil(today), toCivil(a[0].Int()), today < a[0].Int())), nil
	}})
	regFunc("justify_days", &overload{args: T(IV), ret: IV, fn1: func(a types.Datum) (types.Datum, error) { return types.DInterval(justifyDays(a.Interval())), nil }})
	regFunc("justify_hours", &overload{args: T(IV), ret: IV, fn1: func(a types.Datum) (types.Datum, error) { return types.DInterval(justifyHours(a.Interval())), nil }})
	regFunc("justify_interval", &overload{args: T(IV), ret: IV, fn1: func(a types.Datum) (types.Datum, error) { return types.DInterval(justifyInterval(a.Interval())), nil }})
	regFunc("isfinite", &overload{args: T(D), ret: types.Bool, fn1: func(a types.Datum) (types.Datum, error) { return types.DBool(!isInfTS(a.Int())), nil }})
	regFunc("isfinite", &overload{args: T(TS), ret: types.Bool, fn1: func(a types.Datum) (types.Datum, error) { return types.DBool(!isInfTS(a.Int())), nil }})
	regFunc("isfinite", &overload{args: T(TZ), ret: types.Bool, fn1: func(a types.Datum) (types.Datum, error) { return types.DBool(!isInfTS(a.Int())), nil }})

	// timezone(zone, ts) is AT TIME ZONE.
	regFunc("timezone", &overload{args: T(X, TZ), ret: TS, fn2: func(z, v types.Datum) (types.Datum, error) {
		loc, err := types.LoadTimeZone(z.Str())
		if err != nil {
			return types.NullDatum, err
		}
		if isInfTS(v.Int()) {
			return types.DTimestamp(v.Int()), nil
		}
		return types.DTimestamp(utcToLocal(v.Int(), loc)), nil
	}})
	regFunc("timezone", &overload{args: T(X, TS), ret: TZ, fn2: func(z, v types.Datum) (types.Datum, error) {
		loc, err := types.LoadTimeZone(z.Str())
		if err != nil {
			return types.NullDatum, err
		}
		if isInfTS(v.Int()) {
			return types.DTimestamptz(v.Int()), nil
		}
		return types.DTimestamptz(localToUTC(v.Int(), loc)), nil
	}})
	regFunc("to_char", &overload{args: T(IV, X), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		return toCharInterval(a.Interval(), b.Str())
	}})
	regFunc("to_char", &overload{args: T(TS, X), ret: X, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		return toChar(wallOf(ctx, a[0], false), a[1].Str(), isInfTS(a[0].Int()))
	}})
	regFunc("to_char", &overload{args: T(TZ, X), ret: X, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		if isInfTS(a[0].Int()) {
			return types.NullDatum, nil
		}
		return toChar(wallOf(ctx, a[0], true), a[1].Str(), false)
	}})
}

// sleepSeconds waits secs seconds (none when secs is not positive), or
// until the statement's context ends.
func sleepSeconds(ctx *EvalContext, secs float64) error {
	if !(secs > 0) {
		return nil
	}
	d := time.Duration(math.MaxInt64)
	if secs < float64(math.MaxInt64)/float64(time.Second) {
		d = time.Duration(secs * float64(time.Second))
	}
	var done <-chan struct{}
	if ctx != nil && ctx.Ctx != nil {
		done = ctx.Ctx.Done()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-done:
		return ctx.Ctx.Err()
	}
}

// makeTimestamp is make_timestamp's wall-clock value from (year, month,
// mday, hour, min, sec).
func makeTimestamp(a []types.Datum) (int64, error) {
	d, err := makeDate(a[0].Int(), a[1].Int(), a[2].Int())
	if err != nil {
		return 0, err
	}
	h, mi, s := a[3].Int(), a[4].Int(), a[5].Float()
	if h < 0 || h > 24 || mi < 0 || mi > 59 || s < 0 || s > 60 || math.IsNaN(s) ||
		(h == 24 && (mi > 0 || s > 0)) {
		return 0, sqlError(codeDatetimeFieldOverflow, "time field value out of range: %d:%02d:%s", h, mi, strconv.FormatFloat(s, 'g', -1, 64))
	}
	return d*usPerDay + h*usPerHour + mi*usPerMin + int64(math.RoundToEven(s*1e6)), nil
}

// makeInterval is make_interval over any prefix of its seven parameters.
func makeInterval(_ *EvalContext, a []types.Datum) (types.Datum, error) {
	var v [6]int64
	secs := 0.0
	for i, d := range a {
		if i < 6 {
			v[i] = d.Int()
		} else {
			secs = d.Float()
		}
	}
	if math.IsNaN(secs) || math.IsInf(secs, 0) {
		return types.NullDatum, errIntervalOutOfRange
	}
	months := v[0]*12 + v[1]
	days := v[2]*7 + v[3]
	us := v[4]*usPerHour + v[5]*usPerMin + int64(math.RoundToEven(secs*1e6))
	if months != int64(int32(months)) || days != int64(int32(days)) {
		return types.NullDatum, errIntervalOutOfRange
	}
	return types.DInterval(types.IntervalValue{Months: int32(months), Days: int32(days), Micros: us}), nil
}

// toCharInterval is to_char(interval, format): the interval's fields as
// PostgreSQL's interval2tm splits them (years and months from the month
// count, days as given, hours unbounded), each keeping its sign.
func toCharInterval(iv types.IntervalValue, f string) (types.Datum, error) {
	us := iv.Micros
	c := civil{
		interval: true,
		year:     int64(iv.Months / 12),
		month:    int(iv.Months % 12),
		day:      int(iv.Days),
		hour:     int(us / usPerHour),
		min:      int(us / usPerMin % 60),
		sec:      int(us / usPerSec % 60),
		usec:     us % usPerSec,
	}
	return toChar(c, f, false)
}
