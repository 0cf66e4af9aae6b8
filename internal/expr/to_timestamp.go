package expr

import (
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// parseWithFormat implements the common subset of to_timestamp(text,
// text) / to_date(text, text): the numeric fields YYYY YYY YY Y MM DD DDD
// HH24 HH12 HH MI SS MS US, month and day names (Month Mon Day Dy in any
// case), AM/PM, FM (ignored) and literal text. As in PostgreSQL, a
// separator in the template matches any run of non-alphanumeric input and
// spaces are skipped; unset fields default to 0001-01-01 00:00:00.
func parseWithFormat(s, f string) (civil, error) {
	c := civil{year: 1, month: 1, day: 1}
	pm, has12 := false, false
	doy := 0
	si := 0
	skipSep := func() {
		for si < len(s) && !isAlnum(s[si]) {
			si++
		}
	}
	num := func(field string, maxDigits int) (int64, error) {
		skipSpaces := func() {
			for si < len(s) && s[si] == ' ' {
				si++
			}
		}
		skipSpaces()
		start := si
		if si < len(s) && (s[si] == '-' || s[si] == '+') {
			si++
		}
		for si < len(s) && si-start < maxDigits && s[si] >= '0' && s[si] <= '9' {
			si++
		}
		if si == start {
			tok := s[start:]
			if w := min(maxDigits, len(field)); len(tok) > w {
				tok = tok[:w]
			}
			return 0, sqlError(sqlerr.InvalidDatetimeFormat, "invalid value \"%s\" for \"%s\"", tok, field).(*sqlerr.Error).
				WithDetail("Value must be an integer.")
		}
		v, err := strconv.ParseInt(s[start:si], 10, 64)
		if err != nil {
			return 0, sqlError(sqlerr.InvalidDatetimeFormat, "invalid value \"%s\" for \"%s\"", s[start:si], field)
		}
		return v, nil
	}
	name := func(field string, names []string, abbrev bool) (int, error) {
		for si < len(s) && s[si] == ' ' {
			si++
		}
		rest := strings.ToLower(s[si:])
		for i, n := range names {
			cand := strings.ToLower(n)
			if abbrev {
				cand = cand[:3]
			}
			if strings.HasPrefix(rest, cand) {
				si += len(cand)
				return i, nil
			}
		}
		tok := s[si:]
		if len(tok) > 10 {
			tok = tok[:10]
		}
		return 0, sqlError(sqlerr.InvalidDatetimeFormat, "invalid value \"%s\" for \"%s\"", tok, field).(*sqlerr.Error).
			WithDetail("The given value did not match any of the allowed values for this field.")
	}
	for fi := 0; fi < len(f); {
		up := strings.ToUpper(f[fi:])
		has := func(p string) bool { return strings.HasPrefix(up, p) }
		var err error
		var v int64
		switch {
		case has("FM"):
			fi += 2
			continue
		case f[fi] == '"':
			j := strings.IndexByte(f[fi+1:], '"')
			lit := f[fi+1:]
			if j >= 0 {
				lit = f[fi+1 : fi+1+j]
				fi += j + 2
			} else {
				fi = len(f)
			}
			si = min(si+len(lit), len(s))
			continue
		case has("YYYY"):
			width := 8
			if fi+4 < len(f) && isAlnum(f[fi+4]) {
				width = 4 // YYYYMMDD: fixed width when another field follows directly
			}
			v, err = num("YYYY", width)
			c.year = v
			fi += 4
		case has("YYY"):
			v, err = num("YYY", 3)
			c.year = 2000 + v
			if v >= 100 {
				c.year = 1000 + v
			}
			fi += 3
		case has("YY"):
			v, err = num("YY", 2)
			c.year = 2000 + v
			if v >= 70 {
				c.year = 1900 + v
			}
			fi += 2
		case has("HH24"):
			v, err = num("HH24", 2)
			c.hour = int(v)
			fi += 4
		case has("HH12"), has("HH"):
			fld := "HH"
			if has("HH12") {
				fld = "HH12"
			}
			v, err = num(fld, 2)
			c.hour, has12 = int(v), true
			if err == nil && (v < 1 || v > 12) {
				return c, sqlError(sqlerr.InvalidDatetimeFormat, "hour \"%d\" is invalid for the 12-hour clock", v).(*sqlerr.Error).
					WithHint("Use the 24-hour clock, or give an hour between 1 and 12.")
			}
			fi += len(fld)
		case has("MI"):
			v, err = num("MI", 2)
			c.min = int(v)
			fi += 2
		case has("SS"):
			v, err = num("SS", 2)
			c.sec = int(v)
			fi += 2
		case has("MS"):
			start := si
			v, err = num("MS", 3)
			for d := si - start; d < 3 && err == nil; d++ {
				v *= 10
			}
			c.usec = v * 1000
			fi += 2
		case has("US"):
			start := si
			v, err = num("US", 6)
			for d := si - start; d < 6 && err == nil; d++ {
				v *= 10
			}
			c.usec = v
			fi += 2
		case has("AM"), has("PM"), has("A.M."), has("P.M."):
			w := 2
			if has("A.M.") || has("P.M.") {
				w = 4
			}
			tok := strings.ToUpper(s[min(si, len(s)):min(si+w, len(s))])
			switch strings.ReplaceAll(tok, ".", "") {
			case "AM":
				pm = false
			case "PM":
				pm = true
			default:
				return c, sqlError(sqlerr.InvalidDatetimeFormat, "invalid value \"%s\" for \"%s\"", tok, f[fi:fi+w])
			}
			si = min(si+w, len(s))
			fi += w
		case has("MONTH"), has("MON"):
			abbrev := !has("MONTH")
			var m int
			m, err = name(map[bool]string{true: "MON", false: "MONTH"}[abbrev], monthNames[:], abbrev)
			c.month = m + 1
			fi += map[bool]int{true: 3, false: 5}[abbrev]
		case has("MM"):
			v, err = num("MM", 2)
			c.month = int(v)
			fi += 2
		case has("DAY"), has("DY"):
			abbrev := has("DY")
			_, err = name(map[bool]string{true: "DY", false: "DAY"}[abbrev], dayNames[:], abbrev)
			fi += map[bool]int{true: 2, false: 3}[abbrev]
		case has("DDD"):
			v, err = num("DDD", 3)
			doy = int(v)
			fi += 3
		case has("DD"):
			v, err = num("DD", 2)
			c.day = int(v)
			fi += 2
		case has("Y"):
			v, err = num("Y", 1)
			c.year = 2000 + v
			fi++
		case f[fi] == ' ':
			fi++
			for si < len(s) && s[si] == ' ' {
				si++
			}
			continue
		case !isAlnum(f[fi]):
			fi++
			skipSep()
			continue
		default:
			fi++
			if si < len(s) {
				si++
			}
			continue
		}
		if err != nil {
			return c, err
		}
	}
	if has12 {
		if c.hour == 12 {
			c.hour = 0
		}
		if pm {
			c.hour += 12
		}
	}
	if doy > 0 {
		c.month, c.day = 1, 1
		y, m, d := civilFromDays(daysFromCivil(c.year, 1, 1) + int64(doy) - 1)
		c.year, c.month, c.day = y, m, d
	}
	if c.year <= 0 {
		c.year++ // no year 0: 1 BC is astronomical year 0
	}
	if c.month < 1 || c.month > 12 || c.day < 1 || c.day > daysInMonth(c.year, c.month) ||
		c.hour > 23 || c.min > 59 || c.sec > 59 {
		return c, sqlError(codeDatetimeFieldOverflow, "date/time field value out of range: \"%s\"", s)
	}
	return c, nil
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func init() {
	X := types.Text
	regFunc("to_timestamp", &overload{args: []types.Type{X, X}, ret: types.Timestamptz, fn: func(ctx *EvalContext, a []types.Datum) (types.Datum, error) {
		c, err := parseWithFormat(a[0].Str(), a[1].Str())
		if err != nil {
			return types.NullDatum, err
		}
		return types.DTimestamptz(localToUTC(fromCivil(c), ctxLoc(ctx))), nil
	}})
	regFunc("to_date", &overload{args: []types.Type{X, X}, ret: types.Date, fn2: func(a, b types.Datum) (types.Datum, error) {
		c, err := parseWithFormat(a.Str(), b.Str())
		if err != nil {
			return types.NullDatum, err
		}
		return types.DDate(daysFromCivil(c.year, c.month, c.day)), nil
	}})
}
