package types

import (
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Dates and timestamps use the proleptic Gregorian calendar with
// astronomical year numbering (1 BC is year 0), as PostgreSQL does.

const (
	microsPerSecond = int64(1e6)
	microsPerMinute = 60 * microsPerSecond
	microsPerHour   = 60 * microsPerMinute
	microsPerDay    = 24 * microsPerHour

	// pgEpochDays is 2000-01-01, PostgreSQL's internal epoch, in days since
	// 1970-01-01; binary date/timestamp values count from it.
	pgEpochDays   = 10957
	pgEpochMicros = pgEpochDays * microsPerDay
)

// Range limits. Dates are PostgreSQL's: 4714-11-24 BC (Julian day 0) to
// 5874897-12-31. Timestamps start at 4714-11-24 00:00 BC as in PostgreSQL,
// but end before 294247-01-01 rather than PostgreSQL's 294277-01-01:
// Datum counts microseconds from 1970 in an int64 (see datum.go), which
// cannot hold PostgreSQL's last 30 years (PostgreSQL counts from 2000).
const (
	MinDate        int64 = -2440588                    // 4714-11-24 BC; TestDateLimits checks the numbers
	MaxDate        int64 = 2145042905                  // 5874897-12-31
	MinTimestamp         = MinDate * microsPerDay      // 4714-11-24 00:00:00 BC
	EndTimestamp   int64 = 9223371244800000000         // 294247-01-01 00:00:00, exclusive
	PosInfinity          = int64(math.MaxInt64)        // +infinity for Date, Timestamp, Timestamptz
	NegInfinity          = int64(math.MinInt64)        // -infinity
	maxTimeOfDay         = microsPerDay                // 24:00:00 is a valid time
	maxTzDisplaceS       = int64(15*3600 + 59*60 + 59) // PostgreSQL's MAX_TZDISP
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// daysFromCivil returns the days since 1970-01-01 of the given date.
// The month is 1..12; shifting the year to start in March puts the leap
// day last, so a day-of-year is a simple linear function of the month.
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400 // [0, 399]
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysInMonth(y int64, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// ---- output ----

func appendPad(buf []byte, v int64, width int) []byte {
	var tmp [24]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// appendYMD writes YYYY-MM-DD and reports whether the year is BC.
func appendYMD(buf []byte, days int64) ([]byte, bool) {
	y, m, d := civilFromDays(days)
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	buf = appendPad(buf, y, 4)
	buf = append(buf, '-')
	buf = appendPad(buf, int64(m), 2)
	buf = append(buf, '-')
	buf = appendPad(buf, int64(d), 2)
	return buf, bc
}

func appendDate(buf []byte, days int64) []byte {
	switch days {
	case PosInfinity:
		return append(buf, "infinity"...)
	case NegInfinity:
		return append(buf, "-infinity"...)
	}
	buf, bc := appendYMD(buf, days)
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

// appendClock writes HH:MM:SS[.ffffff] with trailing fraction zeros
// trimmed; hours may exceed 23 (24:00:00, intervals).
func appendClock(buf []byte, micros int64) []byte {
	h := micros / microsPerHour
	micros -= h * microsPerHour
	mi := micros / microsPerMinute
	micros -= mi * microsPerMinute
	buf = appendPad(buf, h, 2)
	buf = append(buf, ':')
	buf = appendPad(buf, mi, 2)
	buf = append(buf, ':')
	return appendSeconds(buf, micros)
}

// appendSeconds writes SS[.ffffff] (trailing zeros trimmed) for a
// non-negative microsecond count below one minute.
func appendSeconds(buf []byte, micros int64) []byte {
	buf = appendPad(buf, micros/microsPerSecond, 2)
	frac := micros % microsPerSecond
	if frac != 0 {
		buf = append(buf, '.')
		var f [6]byte
		for i := 5; i >= 0; i-- {
			f[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 6
		for n > 0 && f[n-1] == '0' {
			n--
		}
		buf = append(buf, f[:n]...)
	}
	return buf
}

func appendTimeOfDay(buf []byte, micros int64) []byte { return appendClock(buf, micros) }

// appendTimestamp writes "YYYY-MM-DD HH:MM:SS[.f][+TZ][ BC]".
func appendTimestamp(buf []byte, micros int64, withTZ bool, loc *time.Location) []byte {
	switch micros {
	case PosInfinity:
		return append(buf, "infinity"...)
	case NegInfinity:
		return append(buf, "-infinity"...)
	}
	offset := int64(0)
	if withTZ {
		offset = zoneOffset(micros, loc)
		micros += offset * microsPerSecond
	}
	days := floorDiv(micros, microsPerDay)
	buf, bc := appendYMD(buf, days)
	buf = append(buf, ' ')
	buf = appendClock(buf, micros-days*microsPerDay)
	if withTZ {
		buf = appendOffset(buf, offset)
	}
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

// appendOffset writes a UTC offset as PostgreSQL does: +HH, +HH:MM or
// +HH:MM:SS, omitting zero minutes and seconds.
func appendOffset(buf []byte, offset int64) []byte {
	if offset < 0 {
		buf = append(buf, '-')
		offset = -offset
	} else {
		buf = append(buf, '+')
	}
	buf = appendPad(buf, offset/3600, 2)
	m, s := offset/60%60, offset%60
	if m != 0 || s != 0 {
		buf = append(buf, ':')
		buf = appendPad(buf, m, 2)
	}
	if s != 0 {
		buf = append(buf, ':')
		buf = appendPad(buf, s, 2)
	}
	return buf
}

// zoneOffset is loc's UTC offset in seconds at the given instant.
func zoneOffset(micros int64, loc *time.Location) int64 {
	if loc == nil || loc == time.UTC {
		return 0
	}
	sec := floorDiv(micros, microsPerSecond)
	_, off := time.Unix(sec, 0).In(loc).Zone()
	return int64(off)
}

// localToUTC converts a wall-clock time in loc (microseconds since
// 1970-01-01, local) to UTC microseconds. Where the wall time occurs twice
// (a DST fall-back or any backward clock change) PostgreSQL prefers the
// reading with the smaller UTC offset (standard time); where it does not
// occur (spring-forward gap) it uses the offset in effect before the
// transition, which moves the time forward.
func localToUTC(local int64, loc *time.Location) int64 {
	if loc == nil || loc == time.UTC {
		return local
	}
	// Offsets in effect a day before and a day after bracket any single
	// transition near this wall time.
	before := zoneOffset(local-microsPerDay, loc)
	after := zoneOffset(local+microsPerDay, loc)
	valid := func(off int64) bool { return zoneOffset(local-off*microsPerSecond, loc) == off }
	vb, va := valid(before), valid(after)
	switch {
	case vb && va:
		return local - min(before, after)*microsPerSecond
	case vb:
		return local - before*microsPerSecond
	case va:
		return local - after*microsPerSecond
	}
	// Neither bracket offset fits: a gap, or transitions closer than a day.
	if off := zoneOffset(local, loc); valid(off) {
		return local - off*microsPerSecond
	}
	return local - before*microsPerSecond
}

// ---- input ----

type dtFieldKind uint8

const (
	dtNumber dtFieldKind = iota // digits, maybe with a fraction
	dtDate                      // digits/month names with - / . separators
	dtTime                      // digits with ':'
	dtTZ                        // +hh[:mm[:ss]] or -hh...
	dtString                    // letters (month, AM, BC, zone, special)
	dtJulian                    // J followed by a Julian day number
	dtZone                      // a time zone name with punctuation or digits
)

type dtField struct {
	kind dtFieldKind
	text string
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// splitDateTime breaks datetime input into fields, like PostgreSQL's
// ParseDateTime: whitespace and commas separate fields; a 'T' between
// digits is the ISO 8601 date/time separator.
func splitDateTime(s string, fields []dtField) ([]dtField, bool) {
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case isSpace(c) || c == ',':
			i++
		case isDigit(c) || c == '.':
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			if j < len(s) && s[j] == ':' {
				for j < len(s) && (isDigit(s[j]) || s[j] == ':' || s[j] == '.') {
					j++
				}
				fields = append(fields, dtField{dtTime, s[i:j]})
			} else if j < len(s) && (s[j] == '-' || s[j] == '/' || (s[j] == '.' && strings.Count(nextWordish(s[j:]), ".") > 1)) {
				sep := s[j]
				textMonth := j+1 < len(s) && isAlpha(s[j+1])
				for j < len(s) && (isDigit(s[j]) || s[j] == sep || textMonth && isAlpha(s[j])) {
					j++
				}
				fields = append(fields, dtField{dtDate, s[i:j]})
			} else {
				for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
					j++
				}
				fields = append(fields, dtField{dtNumber, s[i:j]})
			}
			if j < len(s) && (s[j] == 'T' || s[j] == 't') && j+1 < len(s) && isDigit(s[j+1]) {
				j++ // ISO separator
			}
			i = j
		case isAlpha(c):
			j := i
			for j < len(s) && isAlpha(s[j]) {
				j++
			}
			if j == i+1 && (c == 'T' || c == 't') && j < len(s) && isDigit(s[j]) {
				i = j // ISO 8601 "T" before a time
				continue
			}
			if j == i+1 && (c == 'J' || c == 'j') && j < len(s) && isDigit(s[j]) {
				k := j
				for k < len(s) && isDigit(s[k]) {
					k++
				}
				fields = append(fields, dtField{dtJulian, s[j:k]})
				i = k
				continue
			}
			// As in PostgreSQL's ParseDateTime: letters followed by - / .
			// start a date (Jan-02-2024) or a zone name
			// (America/New_York); followed by a digit or '+' they start a
			// zone (PST8PDT, UTC+3) unless they are a keyword (pm+00,
			// bc+05:30).
			zoneish := func(k int) int {
				for k < len(s) && (isAlpha(s[k]) || isDigit(s[k]) || s[k] == '/' || s[k] == '_' || s[k] == '+' || s[k] == '-' || s[k] == '.' || s[k] == ':') {
					k++
				}
				return k
			}
			if j < len(s) && (s[j] == '-' || s[j] == '/' || s[j] == '.') {
				k := zoneish(j)
				fields = append(fields, dtField{dtDate, s[i:k]})
				j = k
			} else if j < len(s) && (s[j] == '+' || isDigit(s[j])) && !isDateKeyword(strings.ToLower(s[i:j])) {
				k := zoneish(j)
				fields = append(fields, dtField{dtZone, s[i:k]})
				j = k
			} else {
				fields = append(fields, dtField{dtString, s[i:j]})
			}
			i = j
		case c == '+' || c == '-':
			j := i + 1
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			if j < len(s) && isAlpha(s[j]) {
				k := j
				for k < len(s) && isAlpha(s[k]) {
					k++
				}
				text := s[i:k]
				if j > i+1 {
					text = string(c) + s[j:k] // drop the spaces after the sign
				}
				fields = append(fields, dtField{dtString, text})
				i = k
				continue
			}
			if j >= len(s) || !(isDigit(s[j]) || s[j] == '.') {
				return nil, false
			}
			k := j
			for k < len(s) && (isDigit(s[k]) || s[k] == ':' || s[k] == '.') {
				k++
			}
			text := s[i:k]
			if j > i+1 {
				text = string(c) + s[j:k]
			}
			fields = append(fields, dtField{dtTZ, text})
			i = k
		default:
			return nil, false
		}
	}
	return fields, true
}

// isDateKeyword reports whether a word is one of the non-zone keywords of
// datetime input.
func isDateKeyword(w string) bool {
	if monthNumber(w) > 0 || isWeekday(w) {
		return true
	}
	switch w {
	case "am", "pm", "bc", "ad", "t", "j", "infinity", "epoch", "now", "today", "tomorrow", "yesterday", "allballs":
		return true
	}
	return false
}

// nextWordish returns s up to the next separator, for deciding whether a
// '.' starts a date (2024.01.02) or a fraction.
func nextWordish(s string) string {
	j := 0
	for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
		j++
	}
	return s[:j]
}

var monthNames = [...]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var monthFull = [...]string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}

func monthNumber(w string) int {
	for i, m := range monthNames {
		if w == m || w == monthFull[i] {
			return i + 1
		}
	}
	if w == "sept" {
		return 9
	}
	return 0
}

func isWeekday(w string) bool {
	switch w {
	case "sun", "mon", "tue", "tues", "wed", "wednes", "thu", "thur", "thurs", "fri", "sat",
		"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday":
		return true
	}
	return false
}

// zoneAbbrevs is a subset of PostgreSQL's 'Default' timezone_abbreviations
// (offsets in seconds east of UTC).
var zoneAbbrevs = map[string]int64{
	"utc": 0, "gmt": 0, "ut": 0, "z": 0, "zulu": 0,
	"est": -5 * 3600, "edt": -4 * 3600, "cst": -6 * 3600, "cdt": -5 * 3600,
	"mst": -7 * 3600, "mdt": -6 * 3600, "pst": -8 * 3600, "pdt": -7 * 3600,
	"akst": -9 * 3600, "akdt": -8 * 3600, "hst": -10 * 3600,
	"ast": -4 * 3600, "adt": -3 * 3600, "nst": -(3*3600 + 1800), "ndt": -(2*3600 + 1800),
	"wet": 0, "west": 3600, "bst": 3600, "cet": 3600, "cest": 2 * 3600, "met": 3600, "mest": 2 * 3600,
	"eet": 2 * 3600, "eest": 3 * 3600, "msk": 3 * 3600, "ist": 2 * 3600,
	"jst": 9 * 3600, "kst": 9 * 3600, "hkt": 8 * 3600, "sgt": 8 * 3600,
	"awst": 8 * 3600, "acst": 9*3600 + 1800, "aest": 10 * 3600, "aedt": 11 * 3600,
	"nzst": 12 * 3600, "nzdt": 13 * 3600,
}

// dynamicAbbrevs are abbreviations whose offset PostgreSQL takes from a
// zone's history (MSK was +04 from 2011 to 2014).
var dynamicAbbrevs = map[string]string{"msk": "Europe/Moscow"}

// dtParse is the state of decoding one datetime input.
type dtParse struct {
	year            int64
	yearDigits      int
	mon, day        int
	haveYear        bool
	haveMon         bool
	haveDay         bool
	haveDate        bool
	hour, min       int64
	usec            int64 // seconds and fraction, in microseconds
	haveTime        bool
	ampm            int // 0 none, 1 am, 2 pm
	bc              bool
	tz              int64 // seconds east of UTC
	haveTZ          bool
	loc             *time.Location
	special         string
	timeOnly        bool // decoding a time: undelimited numbers are hhmmss
	fieldOverflow   bool // a date field out of range (reported after all fields)
	mdFieldOverflow bool
	timeOverflow    bool // a time field out of range (reported at once)
	// nonDateSeen: a field other than a time zone came before a delimited
	// date; PostgreSQL's DecodeDate then rejects the input.
	nonDateSeen bool
	doy         int    // ISO ordinal day, resolved once BC is known
	dynAbbrev   string // zone whose history defines the abbreviation's offset
}

func dtBadFormat(typ, s string) *sqlerr.Error {
	return sqlerr.Errorf(sqlerr.InvalidDatetimeFormat, "invalid input syntax for type %s: %s", typ, pgQuote(s))
}

func dtFieldOverflow(s string) *sqlerr.Error {
	return sqlerr.Errorf(sqlerr.DatetimeFieldOverflow, "date/time field value out of range: %s", pgQuote(s))
}

// decodeDateTime decodes the fields of a date, time or timestamp input.
func decodeDateTime(s, typ string) (*dtParse, error) {
	var fieldBuf [12]dtField
	fields, ok := splitDateTime(s, fieldBuf[:0])
	if !ok || len(fields) == 0 {
		return nil, dtBadFormat(typ, s)
	}
	p := &dtParse{timeOnly: typ == "time"}
	bad := func() (*dtParse, error) { return nil, dtBadFormat(typ, s) }
	for fi, f := range fields {
		if p.timeOverflow {
			return nil, dtFieldOverflow(s)
		}
		if f.kind != dtDate && f.kind != dtTZ && f.kind != dtZone {
			if _, isZone := zoneAbbrevs[strings.ToLower(f.text)]; f.kind != dtString || !isZone {
				p.nonDateSeen = true
			}
		}
		switch f.kind {
		case dtDate:
			if p.timeOnly || p.haveMon && p.haveDay {
				// PostgreSQL reads a date-like field after a complete
				// month and day as a zone name, or as a run-together time
				// with a zone (hhmmss-zz).
				if isAlpha(f.text[0]) {
					if p.haveTZ {
						return bad()
					}
					loc, err := loadZone(f.text)
					if err != nil {
						return nil, err
					}
					p.loc, p.haveTZ = loc, true
					continue
				}
				if !p.timeOnly {
					k := strings.IndexByte(f.text, '-')
					if k <= 0 || p.haveTime || p.haveTZ {
						return bad()
					}
					off, ok := parseTZOffset(true, f.text[k+1:])
					if !ok || !p.decodeNumber(f.text[:k]) || !p.haveTime {
						return bad()
					}
					if off < -maxTzDisplaceS || off > maxTzDisplaceS {
						return nil, sqlerr.Errorf(sqlerr.InvalidTimeZoneDisplacement, "time zone displacement out of range: %s", pgQuote(s))
					}
					p.tz, p.haveTZ = off, true
					continue
				}
			}
			if p.haveDate {
				return bad()
			}
			if !p.decodeDate(f.text) {
				return bad()
			}
		case dtTime:
			if p.haveTime {
				return bad()
			}
			if !p.decodeTime(f.text) {
				return bad()
			}
		case dtTZ:
			off, ok := parseTZOffset(f.text[0] == '-', f.text[1:])
			if !ok || p.haveTZ {
				if ok && p.haveTZ {
					return bad()
				}
				return bad()
			}
			if off < -maxTzDisplaceS || off > maxTzDisplaceS {
				return nil, sqlerr.Errorf(sqlerr.InvalidTimeZoneDisplacement, "time zone displacement out of range: %s", pgQuote(s))
			}
			p.tz, p.haveTZ = off, true
		case dtNumber:
			if !p.decodeNumber(f.text) {
				return bad()
			}
		case dtJulian:
			jd, ok := atoiDigits(f.text)
			if !ok || p.haveDate {
				return bad()
			}
			y, m, d := civilFromDays(jd - 2440588)
			p.year, p.mon, p.day, p.yearDigits = y, m, d, 4
			if y <= 0 {
				p.year, p.bc = 1-y, true
			}
			p.haveYear, p.haveMon, p.haveDay, p.haveDate = true, true, true, true
		case dtZone:
			if p.timeOnly || p.haveTZ {
				return bad()
			}
			loc, err := loadZone(f.text)
			if err != nil {
				return nil, err
			}
			p.loc, p.haveTZ = loc, true
		case dtString:
			w := strings.ToLower(f.text)
			if m := monthNumber(w); m > 0 {
				if p.haveMon {
					return bad()
				}
				p.mon, p.haveMon = m, true
				continue
			}
			switch w {
			case "am":
				p.ampm = 1
				continue
			case "pm":
				p.ampm = 2
				continue
			case "bc":
				p.bc = true
				continue
			case "ad":
				continue
			case "t":
				if fi == len(fields)-1 {
					return bad() // ISO "T" with no time after it
				}
				continue
			case "allballs":
				if p.haveTime {
					return bad()
				}
				p.haveTime = true // 00:00:00
				continue
			case "infinity", "+infinity", "-infinity", "epoch", "now", "today", "tomorrow", "yesterday":
				if p.special != "" || len(fields) > 1 && w != "today" && w != "tomorrow" && w != "yesterday" {
					return bad()
				}
				p.special = w
				continue
			}
			if isWeekday(w) {
				continue
			}
			if off, ok := zoneAbbrevs[w]; ok {
				if p.haveTZ {
					return bad()
				}
				p.tz, p.haveTZ = off, true
				p.dynAbbrev = dynamicAbbrevs[w]
				continue
			}
			return bad()
		default:
			return bad()
		}
	}
	if p.timeOverflow {
		return nil, dtFieldOverflow(s)
	}
	if p.ampm != 0 {
		if !p.haveTime && !p.haveDate {
			// "5 pm" style: a lone number already went into the date; reject
			return bad()
		}
		if p.hour > 12 || p.hour < 0 {
			return nil, dtFieldOverflow(s)
		}
		if p.ampm == 1 && p.hour == 12 {
			p.hour = 0
		} else if p.ampm == 2 && p.hour != 12 {
			p.hour += 12
		}
	}
	if p.mdFieldOverflow {
		return nil, sqlerr.Errorf(sqlerr.DatetimeFieldOverflow, "date/time field value out of range: %s", pgQuote(s)).
			WithHint("Perhaps you need a different \"datestyle\" setting.")
	}
	if p.fieldOverflow {
		return nil, dtFieldOverflow(s)
	}
	return p, nil
}

// loadZone resolves a time zone name case-insensitively, as PostgreSQL
// does, falling back to a POSIX-style "ABC+3" fixed offset.
func loadZone(name string) (*time.Location, error) {
	if loc, ok := lookupZoneName(name); ok {
		return loc, nil
	}
	if loc, ok := posixFixedZone(name, 3); ok {
		return loc, nil
	}
	return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "time zone %s not recognized", pgQuote(strings.ToLower(name)))
}

var (
	zoneIndexOnce sync.Once
	zoneIndex     map[string]string // lower-case name -> file name
	zoneCacheMu   sync.Mutex
	zoneCache     = map[string]*time.Location{}
)

// zoneinfoDirs are searched for the case-insensitive name index; Go's
// time.LoadLocation itself also consults $ZONEINFO and an embedded copy
// when the program imports time/tzdata.
var zoneinfoDirs = []string{"/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/usr/share/lib/zoneinfo"}

func lookupZoneName(name string) (*time.Location, bool) {
	if name == "" || name == "Local" || strings.Contains(name, "..") {
		return nil, false
	}
	key := strings.ToLower(name)
	zoneCacheMu.Lock()
	loc, ok := zoneCache[key]
	zoneCacheMu.Unlock()
	if ok {
		return loc, loc != nil
	}
	loc = loadZoneUncached(name, key)
	zoneCacheMu.Lock()
	zoneCache[key] = loc
	zoneCacheMu.Unlock()
	return loc, loc != nil
}

func loadZoneUncached(name, key string) *time.Location {
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	zoneIndexOnce.Do(func() {
		zoneIndex = map[string]string{}
		for _, dir := range zoneinfoDirs {
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				rel, err := filepath.Rel(dir, p)
				if err == nil {
					if _, dup := zoneIndex[strings.ToLower(rel)]; !dup {
						zoneIndex[strings.ToLower(rel)] = rel
					}
				}
				return nil
			})
		}
	})
	if real, ok := zoneIndex[key]; ok {
		if loc, err := time.LoadLocation(real); err == nil {
			return loc
		}
	}
	if loc, err := time.LoadLocation(strings.ToUpper(name)); err == nil {
		return loc
	}
	return nil
}

// LoadTimeZone resolves a value of the TimeZone setting as PostgreSQL's
// SET TIME ZONE does: a plain number is hours east of UTC ('-7', '5.5');
// otherwise a zone name, case-insensitively ('Europe/Berlin', 'est',
// 'PST8PDT'); otherwise a POSIX-style offset, hours *west* of UTC
// ('UTC+3', '+05:30'). Errors carry SQLSTATE 22023.
func LoadTimeZone(name string) (*time.Location, error) {
	n := trimSpace(name)
	if f, err := strconv.ParseFloat(n, 64); err == nil && n != "" && (isDigit(n[len(n)-1]) || n[len(n)-1] == '.') && !strings.ContainsAny(n, "eExXpPnN") {
		off := int64(math.Round(f * 3600))
		if off < -maxTzDisplaceS || off > maxTzDisplaceS {
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value for parameter \"TimeZone\": %s", pgQuote(name))
		}
		return time.FixedZone(n, int(off)), nil
	}
	if loc, ok := lookupZoneName(n); ok {
		return loc, nil
	}
	if loc, ok := posixFixedZone(n, 0); ok {
		return loc, nil
	}
	return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "invalid value for parameter \"TimeZone\": %s", pgQuote(name))
}

// posixFixedZone reads a POSIX TZ string without DST rules, "ABC+3" or
// "UTC-05:30": a zone abbreviation of at least minAbbrev letters and hours
// *west* of UTC.
func posixFixedZone(name string, minAbbrev int) (*time.Location, bool) {
	i := 0
	if strings.HasPrefix(name, "<") {
		// a quoted abbreviation such as <+03>
		end := strings.IndexByte(name, '>')
		if end < 0 {
			return nil, false
		}
		i = end + 1
		minAbbrev = 0
	}
	for i < len(name) && isAlpha(name[i]) {
		i++
	}
	if i < minAbbrev || i == len(name) || (name[i] != '+' && name[i] != '-' && !isDigit(name[i])) {
		return nil, false
	}
	neg := name[i] == '-'
	body := name[i:]
	if name[i] == '+' || name[i] == '-' {
		body = name[i+1:]
	}
	if strings.Count(body, ":") == 0 && len(body) > 2 {
		return nil, false
	}
	off, ok := parseTZOffset(neg, body)
	if !ok {
		return nil, false
	}
	return time.FixedZone(strings.ToUpper(name), int(-off)), true
}

// parseTZOffset parses hh, hhmm, hh:mm, hh:mm:ss (sign already removed).
func parseTZOffset(neg bool, s string) (int64, bool) {
	var h, m, sec int64
	if strings.Contains(s, ":") {
		var pb [4]string
		parts, ok := splitParts(s, ':', &pb)
		if !ok || len(parts) > 3 {
			return 0, false
		}
		vals := [3]int64{}
		for i, p := range parts {
			v, ok := atoiDigits(p)
			if !ok {
				return 0, false
			}
			vals[i] = v
		}
		h, m, sec = vals[0], vals[1], vals[2]
	} else {
		v, ok := atoiDigits(s)
		if !ok {
			return 0, false
		}
		switch {
		case len(s) <= 2:
			h = v
		case len(s) <= 4:
			h, m = v/100, v%100
		case len(s) <= 6:
			h, m, sec = v/10000, v/100%100, v%100
		default:
			return 0, false
		}
	}
	if m >= 60 || sec >= 60 {
		return 0, false
	}
	off := h*3600 + m*60 + sec
	if neg {
		off = -off
	}
	return off, true
}

func atoiDigits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int64(s[i]-'0')
	}
	return v, true
}

// decodeDate handles one delimited date field: ISO (y-m-d, when the first
// number has more than two digits), otherwise month/day/year (DateStyle
// MDY), with month names allowed anywhere.
func (p *dtParse) decodeDate(text string) bool {
	sep := byte(0)
	for i := 0; i < len(text); i++ {
		if text[i] == '-' || text[i] == '/' || text[i] == '.' {
			sep = text[i]
			break
		}
	}
	if p.nonDateSeen {
		return false
	}
	var pb [4]string
	parts, ok := splitParts(text, sep, &pb)
	if !ok || len(parts) < 2 || len(parts) > 3 {
		return false
	}
	var nb [3]string
	nums := nb[:0]
	for _, part := range parts {
		if part == "" {
			return false
		}
		if isAlpha(part[0]) {
			m := monthNumber(strings.ToLower(part))
			if m == 0 || p.haveMon {
				return false
			}
			p.mon, p.haveMon = m, true
			continue
		}
		for i := 0; i < len(part); i++ {
			if !isDigit(part[i]) {
				return false
			}
		}
		nums = append(nums, part)
	}
	p.haveDate = true
	switch {
	case !p.haveMon && len(nums) == 2 && len(nums[0]) > 2 && len(nums[1]) == 3:
		// ISO 8601 ordinal date: YYYY-DDD
		doy, _ := atoiDigits(nums[1])
		if !p.setYear(nums[0]) {
			return false
		}
		if doy < 1 || doy > 366 {
			p.fieldOverflow = true
			return true
		}
		p.doy = int(doy)
		p.mon, p.day, p.haveMon, p.haveDay = 1, 1, true, true
		return true
	case p.haveMon && len(nums) == 2:
		// Month name plus two numbers: the long one (or the last) is the year.
		if len(nums[0]) > 2 {
			return p.setYear(nums[0]) && p.setDay(nums[1])
		}
		return p.setDay(nums[0]) && p.setYear(nums[1])
	case p.haveMon && len(nums) == 1:
		// Jan-2024 or 02-Jan: one number; a long one is the year.
		if len(nums[0]) > 2 {
			return p.setYear(nums[0])
		}
		return p.setDay(nums[0])
	case len(nums) == 3:
		if len(nums[0]) > 2 {
			return p.setYear(nums[0]) && p.setMonth(nums[1]) && p.setDay(nums[2])
		}
		return p.setMonth(nums[0]) && p.setDay(nums[1]) && p.setYear(nums[2])
	}
	return false
}

func (p *dtParse) setYear(s string) bool {
	v, ok := atoiDigits(s)
	if !ok || p.haveYear {
		return false
	}
	p.year, p.yearDigits, p.haveYear = v, len(s), true
	return true
}

func (p *dtParse) setMonth(s string) bool {
	v, ok := atoiDigits(s)
	if !ok || p.haveMon {
		return false
	}
	if v < 1 || v > 12 {
		p.mdFieldOverflow = true
	}
	p.mon, p.haveMon = int(v), true
	return true
}

func (p *dtParse) setDay(s string) bool {
	v, ok := atoiDigits(s)
	if !ok || p.haveDay {
		return false
	}
	if v < 1 || v > 31 {
		p.fieldOverflow = true
	}
	p.day, p.haveDay = int(v), true
	return true
}

// splitParts splits s at sep into at most len(buf) parts without
// allocating; ok is false when there are more.
func splitParts(s string, sep byte, buf *[4]string) ([]string, bool) {
	parts := buf[:0]
	for {
		i := strings.IndexByte(s, sep)
		if len(parts) == len(buf) {
			return nil, false
		}
		if i < 0 {
			return append(parts, s), true
		}
		parts = append(parts, s[:i])
		s = s[i+1:]
	}
}

// decodeTime parses hh:mm[:ss[.ffffff]].
func (p *dtParse) decodeTime(text string) bool {
	var pb [4]string
	parts, ok := splitParts(text, ':', &pb)
	if !ok || len(parts) < 2 || len(parts) > 3 {
		return false
	}
	h, ok := atoiDigits(parts[0])
	if !ok {
		return false
	}
	var m int64
	var us int64
	if len(parts) == 2 && strings.Contains(parts[1], ".") {
		// mm:ss.fff is PostgreSQL's reading of a two-part time with a fraction
		mm, frac, ok := splitSecondsFrac(parts[1])
		if !ok {
			return false
		}
		m, us = h, mm+frac
		h = 0
		_ = m
		p.hour, p.min, p.usec = 0, m, us
		if m >= 60 || us >= 61*microsPerSecond {
			p.timeOverflow = true
		}
		p.haveTime = true
		return true
	}
	m, ok = atoiDigits(parts[1])
	if !ok {
		return false
	}
	if len(parts) == 3 {
		secs, frac, ok := splitSecondsFrac(parts[2])
		if !ok {
			return false
		}
		us = secs + frac
	}
	p.hour, p.min, p.usec, p.haveTime = h, m, us, true
	if h > 24 || m >= 60 || us >= 61*microsPerSecond || (h == 24 && (m != 0 || us != 0)) {
		p.timeOverflow = true
	}
	return true
}

// splitSecondsFrac parses "ss[.fffffff]" into microseconds (whole seconds
// part and rounded fraction).
func splitSecondsFrac(s string) (int64, int64, bool) {
	whole, frac, hasFrac := strings.Cut(s, ".")
	w, ok := atoiDigits(whole)
	if !ok {
		if !(whole == "" && hasFrac) {
			return 0, 0, false
		}
	}
	if !hasFrac {
		return w * microsPerSecond, 0, true
	}
	f, ok := fracMicros(frac)
	if !ok {
		return 0, 0, false
	}
	return w * microsPerSecond, f, true
}

// fracMicros converts the digits after a decimal point to microseconds
// the way PostgreSQL does: strtod of "0.<digits>", times 1e6, rint.
// (So .5853745 becomes 585374: the double is just below the tie.)
func fracMicros(frac string) (int64, bool) {
	if frac == "" {
		return 0, true
	}
	for i := 0; i < len(frac); i++ {
		if !isDigit(frac[i]) {
			return 0, false
		}
	}
	if len(frac) <= 6 {
		var v int64
		for i := 0; i < len(frac); i++ {
			v = v*10 + int64(frac[i]-'0')
		}
		for i := len(frac); i < 6; i++ {
			v *= 10
		}
		return v, true
	}
	f, err := strconv.ParseFloat("0."+frac, 64)
	if err != nil {
		return 0, false
	}
	return int64(math.RoundToEven(f * 1e6)), true
}

// decodeNumber places an undelimited number: a day or year next to a
// month name, YYYYMMDD / YYMMDD, or hhmmss after a date.
func (p *dtParse) decodeNumber(text string) bool {
	whole, frac, hasFrac := strings.Cut(text, ".")
	if whole == "" && !hasFrac {
		return false
	}
	if hasFrac && strings.Contains(frac, ".") {
		return false
	}
	switch {
	case p.timeOnly && !p.haveTime && !p.haveMon && (len(whole) == 6 || len(whole) == 4):
		return p.setClockDigits(whole, frac, hasFrac)
	case !p.haveDate && !p.haveMon && !hasFrac && (len(whole) == 8 || len(whole) == 6):
		// YYYYMMDD or YYMMDD
		yl := len(whole) - 4
		p.haveDate = true
		return p.setYear(whole[:yl]) && p.setMonth(whole[yl:yl+2]) && p.setDay(whole[yl+2:])
	case p.haveDate && !p.haveTime && (len(whole) == 6 || len(whole) == 4) && p.haveYear && p.haveMon && p.haveDay:
		// hhmmss[.fff] or hhmm after a complete date
		return p.setClockDigits(whole, frac, hasFrac)
	case hasFrac:
		return false
	case !p.haveYear && len(whole) > 2:
		p.haveDate = true
		return p.setYear(whole)
	case p.haveMon && !p.haveDay && len(whole) <= 2:
		p.haveDate = true
		return p.setDay(whole)
	case p.haveMon && !p.haveYear:
		p.haveDate = true
		return p.setYear(whole)
	case !p.haveMon && !p.haveDay && len(whole) <= 2:
		// "02 Jan 2024": day before the month name
		p.haveDate = true
		return p.setDay(whole)
	case p.haveMon && p.haveDay && !p.haveYear:
		return p.setYear(whole)
	case !p.haveYear && p.haveDay && !p.haveMon:
		return p.setYear(whole)
	}
	return false
}

// setClockDigits sets the time from undelimited hhmm or hhmmss[.fff].
func (p *dtParse) setClockDigits(whole, frac string, hasFrac bool) bool {
	h, _ := atoiDigits(whole[:2])
	m, _ := atoiDigits(whole[2:4])
	var us int64
	if len(whole) == 6 {
		sec, _ := atoiDigits(whole[4:6])
		us = sec * microsPerSecond
	}
	if hasFrac {
		f, ok := fracMicros(frac)
		if !ok {
			return false
		}
		us += f
	}
	p.hour, p.min, p.usec, p.haveTime = h, m, us, true
	// PostgreSQL range-checks a run-together hhmmss only for time input;
	// in a timestamp 24:54:25 simply rolls into the next day.
	if p.timeOnly && (h > 24 || m >= 60 || us >= 61*microsPerSecond || (h == 24 && (m != 0 || us != 0))) {
		p.timeOverflow = true
	}
	return true
}

// resolveDate turns the decoded fields into days since 1970, applying BC,
// two-digit-year expansion and range checks.
func (p *dtParse) resolveDate(s string) (int64, error) {
	if !p.haveYear || !p.haveMon || !p.haveDay {
		return 0, dtBadFormat("date", s)
	}
	y := p.year
	if p.bc {
		if y == 0 {
			return 0, dtFieldOverflow(s)
		}
		y = 1 - y
	} else if p.yearDigits <= 2 {
		if y < 70 {
			y += 2000
		} else {
			y += 1900
		}
	} else if y == 0 {
		return 0, dtFieldOverflow(s)
	}
	if p.doy > 0 {
		// PostgreSQL adds the day count to January 1st without checking
		// the year's length: 0091-366 is 0092-01-01.
		days := daysFromCivil(y, 1, 1) + int64(p.doy) - 1
		if y > 6000000 {
			return 0, sqlerr.Errorf(sqlerr.DatetimeFieldOverflow, "date out of range: %s", pgQuote(s))
		}
		return days, nil
	}
	if p.mon < 1 || p.mon > 12 || p.day < 1 || p.day > daysInMonth(y, p.mon) {
		return 0, dtFieldOverflow(s)
	}
	if y > 6000000 {
		return 0, sqlerr.Errorf(sqlerr.DatetimeFieldOverflow, "date out of range: %s", pgQuote(s))
	}
	return daysFromCivil(y, p.mon, p.day), nil
}

func (p *dtParse) dynAbbrevName() string {
	for k, v := range dynamicAbbrevs {
		if v == p.dynAbbrev {
			return k
		}
	}
	return ""
}

func (p *dtParse) clockMicros() int64 {
	return p.hour*microsPerHour + p.min*microsPerMinute + p.usec
}

func (o *FormatOptions) today() int64 {
	now := o.now()
	us := now.UnixMicro()
	us += zoneOffset(us, o.location()) * microsPerSecond
	return floorDiv(us, microsPerDay)
}

func parseDate(s string, opt *FormatOptions) (Datum, error) {
	p, err := decodeDateTime(s, "date")
	if err != nil {
		return NullDatum, err
	}
	switch p.special {
	case "infinity", "+infinity":
		return DDate(PosInfinity), nil
	case "-infinity":
		return DDate(NegInfinity), nil
	case "epoch":
		return DDate(0), nil
	case "now", "today":
		return DDate(opt.today()), nil
	case "tomorrow":
		return DDate(opt.today() + 1), nil
	case "yesterday":
		return DDate(opt.today() - 1), nil
	}
	days, err := p.resolveDate(s)
	if err != nil {
		if e := sqlerr.From(err); e != nil && e.Code == sqlerr.InvalidDatetimeFormat {
			return NullDatum, dtBadFormat("date", s)
		}
		return NullDatum, err
	}
	if days < MinDate || days > MaxDate {
		return NullDatum, sqlerr.Errorf(sqlerr.DatetimeFieldOverflow, "date out of range: %s", pgQuote(s))
	}
	return DDate(days), nil
}

func parseTime(s string) (int64, error) {
	p, err := decodeDateTime(s, "time")
	if err != nil {
		return 0, err
	}
	if p.special != "" {
		return 0, dtBadFormat("time", s)
	}
	if !p.haveTime || p.loc != nil && !p.haveDate {
		return 0, dtBadFormat("time", s)
	}
	if p.haveDate {
		if _, err := p.resolveDate(s); err != nil {
			return 0, err
		}
	}
	us := p.clockMicros()
	if us > maxTimeOfDay {
		return 0, dtFieldOverflow(s)
	}
	return us, nil
}

func parseTimestamp(s string, withTZ bool, opt *FormatOptions) (int64, error) {
	typ := "timestamp"
	if withTZ {
		typ = "timestamp with time zone"
	}
	p, err := decodeDateTime(s, typ)
	if err != nil {
		return 0, err
	}
	loc := opt.location()
	switch p.special {
	case "infinity", "+infinity":
		return PosInfinity, nil
	case "-infinity":
		return NegInfinity, nil
	case "epoch":
		return 0, nil
	case "now":
		us := opt.now().UnixMicro()
		if !withTZ {
			us += zoneOffset(us, loc) * microsPerSecond
		}
		return us, nil
	case "today", "tomorrow", "yesterday":
		days := opt.today()
		if p.special == "tomorrow" {
			days++
		} else if p.special == "yesterday" {
			days--
		}
		local := days*microsPerDay + p.clockMicros()
		if withTZ {
			return localToUTC(local, loc), nil
		}
		return local, nil
	}
	if !p.haveDate {
		return 0, dtBadFormat(typ, s)
	}
	days, err := p.resolveDate(s)
	if err != nil {
		if e := sqlerr.From(err); e != nil && e.Code == sqlerr.InvalidDatetimeFormat {
			return 0, dtBadFormat(typ, s)
		}
		return 0, err
	}
	if days < MinDate-1 || days > daysFromCivil(294247, 1, 1) {
		return 0, sqlerr.Errorf(sqlerr.DatetimeFieldOverflow, "timestamp out of range: %s", pgQuote(s))
	}
	local := days*microsPerDay + p.clockMicros()
	us := local
	if withTZ {
		switch {
		case p.loc != nil:
			us = localToUTC(local, p.loc)
		case p.haveTZ:
			us = local - p.tz*microsPerSecond
			if p.dynAbbrev != "" {
				if zl, ok := lookupZoneName(p.dynAbbrev); ok {
					// Use the zone's offset when it was calling itself by
					// this abbreviation at that time.
					t := time.Unix(floorDiv(local-p.tz*microsPerSecond, microsPerSecond), 0).In(zl)
					if name, off := t.Zone(); strings.EqualFold(name, p.dynAbbrevName()) {
						us = local - int64(off)*microsPerSecond
					}
				}
			}
		default:
			us = localToUTC(local, loc)
		}
	}
	if us < MinTimestamp || us >= EndTimestamp {
		return 0, sqlerr.Errorf(sqlerr.DatetimeFieldOverflow, "timestamp out of range: %s", pgQuote(s))
	}
	return us, nil
}
