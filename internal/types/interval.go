package types

import (
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// appendInterval writes an interval in IntervalStyle 'postgres':
// "1 year 2 mons -3 days +04:05:06.5". Years and months come from the
// month count, the clock from the microseconds; a field after a negative
// one carries an explicit '+' when positive, as PostgreSQL prints it.
func appendInterval(buf []byte, iv IntervalValue) []byte {
	year := int64(iv.Months) / 12
	mon := int64(iv.Months) % 12
	isZero, isBefore := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !isZero {
			buf = append(buf, ' ')
		}
		if isBefore && v > 0 {
			buf = append(buf, '+')
		}
		buf = strconv.AppendInt(buf, v, 10)
		buf = append(buf, ' ')
		buf = append(buf, unit...)
		if v != 1 {
			buf = append(buf, 's')
		}
		isBefore = v < 0
		isZero = false
	}
	part(year, "year")
	part(mon, "mon")
	part(int64(iv.Days), "day")
	us := iv.Micros
	if isZero || us != 0 {
		if !isZero {
			buf = append(buf, ' ')
		}
		// Work on the magnitude as uint64 so that MinInt64 does not overflow.
		mag := uint64(us)
		if us < 0 {
			buf = append(buf, '-')
			mag = -mag
		} else if isBefore {
			buf = append(buf, '+')
		}
		h := mag / uint64(microsPerHour)
		rest := int64(mag - h*uint64(microsPerHour))
		buf = appendPadU(buf, h, 2)
		buf = append(buf, ':')
		buf = appendPad(buf, rest/microsPerMinute, 2)
		buf = append(buf, ':')
		buf = appendSeconds(buf, rest%microsPerMinute)
	}
	return buf
}

func appendPadU(buf []byte, v uint64, width int) []byte {
	var tmp [24]byte
	s := strconv.AppendUint(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// intervalUnit identifies an interval input unit.
type intervalUnit uint8

const (
	unitNone intervalUnit = iota
	unitMicrosecond
	unitMillisecond
	unitSecond
	unitMinute
	unitHour
	unitDay
	unitWeek
	unitMonth
	unitYear
	unitDecade
	unitCentury
	unitMillennium
)

var intervalUnits = map[string]intervalUnit{
	"microsecond": unitMicrosecond, "microseconds": unitMicrosecond, "us": unitMicrosecond, "usec": unitMicrosecond, "usecs": unitMicrosecond, "useconds": unitMicrosecond,
	"millisecond": unitMillisecond, "milliseconds": unitMillisecond, "ms": unitMillisecond, "msec": unitMillisecond, "msecs": unitMillisecond, "mseconds": unitMillisecond,
	"second": unitSecond, "seconds": unitSecond, "s": unitSecond, "sec": unitSecond, "secs": unitSecond,
	"minute": unitMinute, "minutes": unitMinute, "m": unitMinute, "min": unitMinute, "mins": unitMinute,
	"hour": unitHour, "hours": unitHour, "h": unitHour, "hr": unitHour, "hrs": unitHour,
	"day": unitDay, "days": unitDay, "d": unitDay,
	"week": unitWeek, "weeks": unitWeek, "w": unitWeek,
	"month": unitMonth, "months": unitMonth, "mon": unitMonth, "mons": unitMonth,
	"year": unitYear, "years": unitYear, "y": unitYear, "yr": unitYear, "yrs": unitYear,
	"decade": unitDecade, "decades": unitDecade, "dec": unitDecade, "decs": unitDecade,
	"century": unitCentury, "centuries": unitCentury, "c": unitCentury, "cent": unitCentury,
	"millennium": unitMillennium, "millennia": unitMillennium, "mil": unitMillennium, "mils": unitMillennium,
}

// ivAcc accumulates interval input with overflow detection; months and
// days are narrowed to int32 at the end.
type ivAcc struct {
	months, days, micros int64
	overflow             bool
}

func (a *ivAcc) add(dst *int64, v int64) {
	s, o := addInt64(*dst, v)
	if o {
		a.overflow = true
	}
	*dst = s
}

func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0)
}

func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(absInt64(a)), uint64(absInt64(b)))
	neg := (a < 0) != (b < 0)
	if hi != 0 || lo > math.MaxInt64+1 || (lo == math.MaxInt64+1 && !neg) {
		return 0, true
	}
	if neg {
		return -int64(lo), false
	}
	return int64(lo), false
}

func absInt64(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

func (a *ivAcc) addScaled(dst *int64, whole int64, scale int64) {
	v, o := mulInt64(whole, scale)
	if o {
		a.overflow = true
		return
	}
	a.add(dst, v)
}

// addFracMicros adds frac (a fraction of `scale` microseconds) as
// PostgreSQL's AdjustFractMicroseconds does: truncate, then round the
// leftover with ties toward zero (1.5 us is 1 us, 1.7 us is 2 us).
func (a *ivAcc) addFracMicros(frac float64, scale int64) {
	if frac == 0 {
		return
	}
	v := frac * float64(scale)
	if math.Abs(v) > 9e18 {
		a.overflow = true
		return
	}
	w := math.Trunc(v)
	switch r := v - w; {
	case r > 0.5:
		w++
	case r < -0.5:
		w--
	}
	a.add(&a.micros, int64(w))
}

// addFracDays handles a fractional count of `scale` days: whole days go to
// days, the rest to microseconds (PostgreSQL's AdjustFractDays).
func (a *ivAcc) addFracDays(frac float64, scale int64) {
	if frac == 0 {
		return
	}
	f := frac * float64(scale)
	whole := math.Trunc(f)
	a.add(&a.days, int64(whole))
	a.addFracMicros(f-whole, microsPerDay)
}

// apply adds value (whole part and signed fraction) in the given unit;
// months and days must stay within int32 after every field, as in
// PostgreSQL.
func (a *ivAcc) apply(u intervalUnit, whole int64, frac float64) {
	a.applyUnit(u, whole, frac)
	if a.months != int64(int32(a.months)) || a.days != int64(int32(a.days)) {
		a.overflow = true
	}
}

func (a *ivAcc) applyUnit(u intervalUnit, whole int64, frac float64) {
	switch u {
	case unitMicrosecond:
		a.add(&a.micros, whole)
		a.addFracMicros(frac, 1)
	case unitMillisecond:
		a.addScaled(&a.micros, whole, 1000)
		a.addFracMicros(frac, 1000)
	case unitSecond:
		a.addScaled(&a.micros, whole, microsPerSecond)
		a.addFracMicros(frac, microsPerSecond)
	case unitMinute:
		a.addScaled(&a.micros, whole, microsPerMinute)
		a.addFracMicros(frac, microsPerMinute)
	case unitHour:
		a.addScaled(&a.micros, whole, microsPerHour)
		a.addFracMicros(frac, microsPerHour)
	case unitDay:
		a.add(&a.days, whole)
		a.addFracDays(frac, 1)
	case unitWeek:
		a.addScaled(&a.days, whole, 7)
		a.addFracDays(frac, 7)
	case unitMonth:
		a.add(&a.months, whole)
		a.addFracDays(frac, 30)
	case unitYear, unitDecade, unitCentury, unitMillennium:
		scale := int64(12)
		switch u {
		case unitDecade:
			scale = 120
		case unitCentury:
			scale = 1200
		case unitMillennium:
			scale = 12000
		}
		a.addScaled(&a.months, whole, scale)
		a.add(&a.months, int64(math.RoundToEven(frac*float64(scale))))
	}
}

func (a *ivAcc) overflowError(s string) (IntervalValue, error) {
	return IntervalValue{}, sqlerr.Errorf(sqlerr.IntervalFieldOverflow, "interval field value out of range: %s", pgQuote(s))
}

// numberOverflows reports whether t is a well-formed number whose whole
// part does not fit an int64.
func numberOverflows(t string) bool {
	t = strings.TrimLeft(t, "+-")
	whole, _, _ := strings.Cut(t, ".")
	if whole == "" {
		return false
	}
	for i := 0; i < len(whole); i++ {
		if !isDigit(whole[i]) {
			return false
		}
	}
	return len(strings.TrimLeft(whole, "0")) >= 19
}

func (a *ivAcc) result(s string) (IntervalValue, error) {
	if a.overflow || a.months != int64(int32(a.months)) || a.days != int64(int32(a.days)) {
		return IntervalValue{}, sqlerr.Errorf(sqlerr.IntervalFieldOverflow, "interval field value out of range: %s", pgQuote(s))
	}
	return IntervalValue{Months: int32(a.months), Days: int32(a.days), Micros: a.micros}, nil
}

// splitNumber parses [+-]digits[.digits] into a whole part and a fraction
// carrying the same sign.
func splitNumber(t string) (int64, float64, bool) {
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	whole, fracS, hasFrac := strings.Cut(t, ".")
	if whole == "" && (!hasFrac || fracS == "") {
		return 0, 0, false
	}
	var w int64
	for i := 0; i < len(whole); i++ {
		if !isDigit(whole[i]) {
			return 0, 0, false
		}
		dg := int64(whole[i] - '0')
		if w > (math.MaxInt64-dg)/10 {
			return 0, 0, false
		}
		w = w*10 + dg
	}
	var f float64
	if hasFrac && fracS != "" {
		for i := 0; i < len(fracS); i++ {
			if !isDigit(fracS[i]) {
				return 0, 0, false
			}
		}
		v, err := strconv.ParseFloat("0."+fracS, 64)
		if err != nil {
			return 0, 0, false
		}
		f = v
	}
	if neg {
		return -w, -f, true
	}
	return w, f, true
}

// unitSet is a set of interval units.
type unitSet uint32

const (
	allSecondUnits = unitSet(1)<<unitSecond | unitSet(1)<<unitMillisecond | unitSet(1)<<unitMicrosecond
	clockUnits     = allSecondUnits | unitSet(1)<<unitHour | unitSet(1)<<unitMinute
)

func (s unitSet) has(u intervalUnit) bool { return s&(1<<u) != 0 }
func (s *unitSet) add(u intervalUnit)     { *s |= 1 << u }

type ivToken struct {
	kind byte // 'n' number, 't' time, 'y' year-month, 'w' word
	text string
}

func parseInterval(s string) (IntervalValue, error) {
	bad := func() (IntervalValue, error) {
		return IntervalValue{}, sqlerr.Errorf(sqlerr.InvalidDatetimeFormat, "invalid input syntax for type interval: %s", pgQuote(s))
	}
	v := trimSpace(s)
	if v == "" {
		return bad()
	}
	if v[0] == 'P' {
		iv, ok, overflow := parseISOInterval(v[1:])
		if overflow {
			return IntervalValue{}, sqlerr.Errorf(sqlerr.IntervalFieldOverflow, "interval field value out of range: %s", pgQuote(s))
		}
		if !ok {
			return bad()
		}
		return iv, nil
	}
	// tokenize
	var tokBuf [16]ivToken
	toks := tokBuf[:0]
	i := 0
	for i < len(v) {
		c := v[i]
		switch {
		case isSpace(c) || c == ',':
			i++
		case c == '@':
			i++
		case isDigit(c) || c == '.' || c == '+' || c == '-':
			j := i
			sign := ""
			if c == '+' || c == '-' {
				sign = v[i : i+1]
				j++
				for j < len(v) && isSpace(v[j]) {
					j++
				}
				i = j - 1 // the number starts after the spaces; sign kept apart
			}
			for j < len(v) && (isDigit(v[j]) || v[j] == '.') {
				j++
			}
			kind := byte('n')
			if j < len(v) && v[j] == ':' {
				kind = 't'
				for j < len(v) && (isDigit(v[j]) || v[j] == ':' || v[j] == '.') {
					j++
				}
			} else if j < len(v) && v[j] == '-' && j+1 < len(v) && isDigit(v[j+1]) {
				kind = 'y'
				j++
				for j < len(v) && isDigit(v[j]) {
					j++
				}
			}
			text := v[i:j]
			if sign != "" {
				text = sign + v[i+1:j]
			}
			toks = append(toks, ivToken{kind, text})
			i = j
		case isAlpha(c):
			j := i
			for j < len(v) && isAlpha(v[j]) {
				j++
			}
			toks = append(toks, ivToken{'w', strings.ToLower(v[i:j])})
			i = j
		default:
			return bad()
		}
	}
	if len(toks) == 0 {
		return bad()
	}
	var acc ivAcc
	ago := false
	unit := unitNone
	var seen unitSet
	timeSeen := false
	// Right to left: a unit word applies to the number on its left; a
	// number without a unit is seconds if rightmost, days left of a time.
	for k := len(toks) - 1; k >= 0; k-- {
		t := toks[k]
		switch t.kind {
		case 'w':
			if t.text == "ago" {
				ago = true
				continue
			}
			u, ok := intervalUnits[t.text]
			if !ok || k == 0 || toks[k-1].kind != 'n' {
				return bad()
			}
			unit = u
		case 't':
			// A clock covers hours, minutes and all of the second units.
			if timeSeen || seen&clockUnits != 0 {
				return bad()
			}
			timeSeen = true
			seen |= clockUnits
			us, ok, overflow := parseIntervalClock(t.text)
			if overflow && t.text[0] != '+' && t.text[0] != '-' {
				return IntervalValue{}, sqlerr.Errorf(sqlerr.IntervalFieldOverflow, "interval field value out of range: %s", pgQuote(s))
			}
			if !ok {
				return bad() // (a signed clock out of range is a syntax error in PostgreSQL)
			}
			acc.add(&acc.micros, us)
			unit = unitDay
		case 'y':
			neg := t.text[0] == '-'
			body := strings.TrimLeft(t.text, "+-")
			ys, ms, _ := strings.Cut(body, "-")
			y, ok1 := atoiDigits(ys)
			m, ok2 := atoiDigits(ms)
			if !ok1 || !ok2 || seen.has(unitYear) || seen.has(unitMonth) {
				return bad()
			}
			if m > 11 {
				return acc.overflowError(s)
			}
			seen.add(unitYear)
			seen.add(unitMonth)
			total := y*12 + m
			if neg {
				total = -total
			}
			acc.add(&acc.months, total)
			unit = unitDay
		case 'n':
			u := unit
			if u == unitNone {
				u = unitSecond
			}
			whole, frac, ok := splitNumber(t.text)
			if !ok {
				if numberOverflows(t.text) {
					return acc.overflowError(s)
				}
				return bad()
			}
			// PostgreSQL computes (and range-checks) a field before it
			// rejects a repeated unit, so overflow wins over duplication.
			// Fractional seconds claim the millisecond and microsecond
			// units too.
			mask := unitSet(1) << u
			if u == unitSecond && frac != 0 {
				mask = allSecondUnits
			}
			dup := seen&mask != 0
			seen |= mask
			acc.apply(u, whole, frac)
			if acc.overflow {
				return acc.overflowError(s)
			}
			if dup {
				return bad()
			}
			unit = u
			if u == unitHour {
				unit = unitDay // as after a clock: a bare number left of hours is days
			}
		}
	}
	if seen == 0 && !timeSeen {
		return bad() // only "ago" or "@"
	}
	if ago {
		acc.months, acc.days, acc.micros = -acc.months, -acc.days, -acc.micros
	}
	return acc.result(s)
}

// parseIntervalClock parses [+-]h:m[:s[.f]] (any number of hours) or
// [+-]m:s.f into signed microseconds.
func parseIntervalClock(t string) (us int64, ok, overflow bool) {
	neg := false
	if t[0] == '+' || t[0] == '-' {
		neg = t[0] == '-'
		t = t[1:]
	}
	var pb [4]string
	parts, good := splitParts(t, ':', &pb)
	if !good || len(parts) < 2 || len(parts) > 3 {
		return 0, false, false
	}
	var h, m, secUs int64
	if len(parts) == 2 && strings.Contains(parts[1], ".") {
		if m, ok = atoiDigits(parts[0]); !ok {
			return 0, false, false
		}
		sec, frac, ok := splitSecondsFrac(parts[1])
		if !ok {
			return 0, false, false
		}
		secUs = sec + frac
	} else {
		if h, ok = atoiDigits(parts[0]); !ok {
			return 0, false, false
		}
		if m, ok = atoiDigits(parts[1]); !ok {
			return 0, false, false
		}
		if len(parts) == 3 {
			sec, frac, ok := splitSecondsFrac(parts[2])
			if !ok {
				return 0, false, false
			}
			secUs = sec + frac
		}
	}
	if m >= 60 || secUs >= 61*microsPerSecond {
		return 0, false, true
	}
	// As in PostgreSQL: too many hours is a field overflow, while the sum
	// overflowing afterwards is reported as bad syntax.
	total, o1 := mulInt64(h, microsPerHour)
	if o1 {
		return 0, false, true
	}
	total, o2 := addInt64(total, m*microsPerMinute+secUs)
	if o2 {
		return 0, false, false
	}
	if neg {
		total = -total
	}
	return total, true, false
}

// parseISOInterval parses the part after 'P' of an ISO 8601 duration with
// designators: nY nM nW nD, then after 'T' nH nM nS; numbers may be signed
// and fractional.
func parseISOInterval(s string) (iv IntervalValue, ok bool, overflow bool) {
	var acc ivAcc
	inTime := false
	if s == "" {
		return iv, false, false
	}
	for len(s) > 0 {
		if s[0] == 'T' || s[0] == 't' {
			if inTime {
				return iv, false, false
			}
			inTime = true
			s = s[1:]
			continue
		}
		// PostgreSQL's ParseISO8601Number: a number starting with a
		// digit, '-' or '.', read by strtod; the fraction is val - (int)val
		// in floating point, rounding quirks included.
		j := 0
		if s[0] == '-' {
			j++
		}
		for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
			j++
		}
		if j == len(s) || j == 0 {
			return iv, false, false
		}
		if _, _, good := splitNumber(s[:j]); !good {
			return iv, false, false
		}
		val, err := strconv.ParseFloat(s[:j], 64)
		if err != nil || math.Abs(val) >= 9.2e18 {
			return iv, false, true
		}
		whole := int64(val)
		frac := val - float64(whole)
		var u intervalUnit
		switch s[j] {
		case 'Y', 'y':
			u = unitYear
		case 'M', 'm':
			if inTime {
				u = unitMinute
			} else {
				u = unitMonth
			}
		case 'W', 'w':
			u = unitWeek
		case 'D', 'd':
			u = unitDay
		case 'H', 'h':
			u = unitHour
		case 'S', 's':
			u = unitSecond
		default:
			return iv, false, false
		}
		if inTime != (u == unitHour || u == unitMinute || u == unitSecond) {
			return iv, false, false
		}
		acc.apply(u, whole, frac)
		s = s[j+1:]
	}
	res, err := acc.result("")
	if err != nil {
		return iv, false, true
	}
	return res, true, false
}

// IntervalCompareKey returns PostgreSQL's comparison key of an interval:
// the 128-bit span months*30 days + days*24 hours + micros, as (hi, lo)
// with hi signed. Two intervals are SQL-equal iff their keys are equal
// ('1 mon' = '30 days').
func IntervalCompareKey(iv IntervalValue) (hi int64, lo uint64) {
	days := int64(iv.Months)*30 + int64(iv.Days) // fits easily in int64
	// days * microsPerDay as 128-bit signed
	ph, pl := mul64Signed(days, microsPerDay)
	// add micros (sign-extended)
	var carry uint64
	mh := int64(0)
	if iv.Micros < 0 {
		mh = -1
	}
	lo, carry = bits.Add64(pl, uint64(iv.Micros), 0)
	hi = ph + mh + int64(carry)
	return hi, lo
}

// mul64Signed returns the 128-bit product of a and b (b > 0).
func mul64Signed(a, b int64) (int64, uint64) {
	neg := a < 0
	ua := uint64(a)
	if neg {
		ua = -ua
	}
	h, l := bits.Mul64(ua, uint64(b))
	if neg {
		// two's complement negate of (h, l)
		l = ^l + 1
		h = ^h
		if l == 0 {
			h++
		}
	}
	return int64(h), l
}

func compareInterval(a, b IntervalValue) int {
	ah, al := IntervalCompareKey(a)
	bh, bl := IntervalCompareKey(b)
	switch {
	case ah < bh:
		return -1
	case ah > bh:
		return 1
	case al < bl:
		return -1
	case al > bl:
		return 1
	}
	return 0
}

// Interval field masks of an interval type's range (INTERVAL '2' HOUR,
// INTERVAL DAY TO SECOND), as PostgreSQL's parser encodes them in the
// type's first modifier: one bit per field.
const (
	IntervalMaskMonth  int32 = 1 << 1
	IntervalMaskYear   int32 = 1 << 2
	IntervalMaskDay    int32 = 1 << 3
	IntervalMaskHour   int32 = 1 << 10
	IntervalMaskMinute int32 = 1 << 11
	IntervalMaskSecond int32 = 1 << 12
	// IntervalFullRange is a modifier without a field range.
	IntervalFullRange int32 = 0x7FFF
)

// ParseIntervalRange parses the text of an interval literal with a field
// range, as PostgreSQL does for INTERVAL '2' HOUR or '1 day 3' DAY TO HOUR:
// a trailing number without a unit counts in the range's last field
// ('2' HOUR is two hours, not two seconds), and the fields below the last
// one are dropped ('1 day 02:30' DAY TO HOUR is 1 day 02:00:00).
func ParseIntervalRange(s string, mask int32) (IntervalValue, error) {
	if mask == IntervalFullRange || mask&(IntervalMaskYear|IntervalMaskMonth|IntervalMaskDay|IntervalMaskHour|IntervalMaskMinute|IntervalMaskSecond) == 0 {
		return parseInterval(s)
	}
	unit := ""
	switch {
	case mask&IntervalMaskSecond != 0:
		unit = "second"
	case mask&IntervalMaskMinute != 0:
		unit = "minute"
	case mask&IntervalMaskHour != 0:
		unit = "hour"
	case mask&IntervalMaskDay != 0:
		unit = "day"
	case mask&IntervalMaskMonth != 0:
		unit = "month"
	default:
		unit = "year"
	}
	text := s
	if f := strings.Fields(s); len(f) > 0 && !strings.HasPrefix(strings.TrimSpace(s), "P") {
		if _, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			text = s + " " + unit
		}
	}
	iv, err := parseInterval(text)
	if err != nil {
		return iv, err
	}
	switch unit {
	case "year":
		iv = IntervalValue{Months: iv.Months / 12 * 12}
	case "month":
		iv = IntervalValue{Months: iv.Months}
	case "day":
		iv.Micros = 0
	case "hour":
		iv.Micros -= iv.Micros % (3600 * 1e6)
	case "minute":
		iv.Micros -= iv.Micros % (60 * 1e6)
	}
	return iv, nil
}
