package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// intervalInvalid reports whether the template pattern at the start of up
// (upper-cased) names a calendar field that to_char(interval) refuses
// (22007), as PostgreSQL's INVALID_FOR_INTERVAL patterns do (names of
// months and days, day of week, time zones); Runnel also refuses the
// calendar counts (DDD, J, WW, IW, IYYY, Q, CC, Y,YYY) that PostgreSQL
// derives from an interval's fields in ways no user relies on.
func intervalInvalid(up string) bool {
	if strings.HasPrefix(up, "DD") && !strings.HasPrefix(up, "DDD") {
		return false
	}
	for _, p := range []string{"MON", "DAY", "DY", "D", "TZ", "OF", "J", "WW", "IW", "IYYY", "Q", "CC", "Y,YYY"} {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return false
}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
var dayNames = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// toChar formats a broken-down time with PostgreSQL's to_char template
// patterns (the common subset: year, month, day, week, clock, fraction,
// meridiem and zone fields, the FM modifier and "quoted" literals).
func toChar(c civil, f string, infinite bool) (types.Datum, error) {
	if infinite {
		return types.NullDatum, nil
	}
	var b strings.Builder
	year := c.year
	if year <= 0 && !c.interval {
		year = -(year - 1)
	}
	dow := int(floorMod(c.days+4, 7))
	h12 := c.hour % 12
	if h12 == 0 {
		h12 = 12
	}
	num := func(v int64, width int, fm bool) {
		if fm {
			width = 0
		} else if v < 0 {
			width++ // the sign takes a place of its own, as printf's %0*d
		}
		b.WriteString(fmt.Sprintf("%0*d", width, v))
	}
	name := func(n string, style int, width int, fm bool) {
		switch style {
		case 0:
			n = strings.ToUpper(n)
		case 2:
			n = strings.ToLower(n)
		}
		b.WriteString(n)
		if !fm {
			for i := len(n); i < width; i++ {
				b.WriteByte(' ')
			}
		}
	}
	// style of a name pattern from its capitalisation: 0 upper, 1 capitalised, 2 lower
	style := func(p string) int {
		switch {
		case p[1] >= 'a' && p[1] <= 'z' && p[0] >= 'A' && p[0] <= 'Z':
			return 1
		case p[0] >= 'a' && p[0] <= 'z':
			return 2
		}
		return 0
	}
	for i := 0; i < len(f); {
		fm := false
		if strings.HasPrefix(strings.ToUpper(f[i:]), "FM") {
			fm = true
			i += 2
		}
		rest := f[i:]
		up := strings.ToUpper(rest)
		match := func(p string) bool { return strings.HasPrefix(up, p) }
		if c.interval && intervalInvalid(up) {
			return types.NullDatum, sqlError(sqlerr.InvalidDatetimeFormat, "invalid format specification for an interval value").(*sqlerr.Error).
				WithHint("Intervals are not tied to specific calendar dates.")
		}
		switch {
		case rest == "":
		case rest[0] == '"':
			j := strings.IndexByte(rest[1:], '"')
			if j < 0 {
				b.WriteString(rest[1:])
				i = len(f)
			} else {
				b.WriteString(rest[1 : 1+j])
				i += j + 2
			}
			continue
		case match("HH24"):
			num(int64(c.hour), 2, fm)
			i += 4
		case match("HH12"):
			num(int64(h12), 2, fm)
			i += 4
		case match("HH"):
			num(int64(h12), 2, fm)
			i += 2
		case match("MI"):
			num(int64(c.min), 2, fm)
			i += 2
		case match("SSSS"):
			num(int64(c.hour*3600+c.min*60+c.sec), 1, fm)
			i += 4
		case match("SS"):
			num(int64(c.sec), 2, fm)
			i += 2
		case match("MS"):
			num(c.usec/1000, 3, fm)
			i += 2
		case match("US"):
			num(c.usec, 6, fm)
			i += 2
		case match("AM"), match("PM"):
			m := "AM"
			if c.hour >= 12 {
				m = "PM"
			}
			if rest[0] >= 'a' {
				m = strings.ToLower(m)
			}
			b.WriteString(m)
			i += 2
		case match("A.M."), match("P.M."):
			m := "A.M."
			if c.hour >= 12 {
				m = "P.M."
			}
			if rest[0] >= 'a' {
				m = strings.ToLower(m)
			}
			b.WriteString(m)
			i += 4
		case match("YYYY"):
			num(year, 4, fm)
			i += 4
		case match("Y,YYY"):
			s := strconv.FormatInt(year, 10)
			if len(s) > 3 {
				s = s[:len(s)-3] + "," + s[len(s)-3:]
			}
			b.WriteString(s)
			i += 5
		case match("YYY"):
			num(year%1000, 3, fm)
			i += 3
		case match("YY"):
			num(year%100, 2, fm)
			i += 2
		case match("Y"):
			num(year%10, 1, fm)
			i++
		case match("IYYY"):
			y, _ := isoWeek(c)
			num(y, 4, fm)
			i += 4
		case match("IW"):
			_, w := isoWeek(c)
			num(int64(w), 2, fm)
			i += 2
		case match("MONTH"):
			name(monthNames[c.month-1], style(rest), 9, fm)
			i += 5
		case match("MON"):
			name(monthNames[c.month-1][:3], style(rest), 3, fm)
			i += 3
		case match("MM"):
			num(int64(c.month), 2, fm)
			i += 2
		case match("DAY"):
			name(dayNames[dow], style(rest), 9, fm)
			i += 3
		case match("DY"):
			name(dayNames[dow][:3], style(rest), 3, fm)
			i += 2
		case match("DDD"):
			num(c.days-daysFromCivil(c.year, 1, 1)+1, 3, fm)
			i += 3
		case match("DD"):
			if c.interval && c.day < 0 && !fm {
				// PostgreSQL pads a negative day count to 2 places, sign included.
				b.WriteString(fmt.Sprintf("%02d", c.day))
				i += 2
				continue
			}
			num(int64(c.day), 2, fm)
			i += 2
		case match("D"):
			num(int64(dow+1), 1, fm)
			i++
		case match("WW"):
			num((c.days-daysFromCivil(c.year, 1, 1))/7+1, 2, fm)
			i += 2
		case match("Q"):
			num(int64((c.month-1)/3+1), 1, fm)
			i++
		case match("CC"):
			cc := (c.year + 99) / 100
			if c.year <= 0 {
				cc = -((99 - (c.year - 1)) / 100)
			}
			num(cc, 2, fm)
			i += 2
		case match("J"):
			num(c.days+2440588, 1, fm)
			i++
		case match("TZ"):
			z := c.zone
			if rest[0] >= 'a' {
				z = strings.ToLower(z)
			}
			b.WriteString(z)
			i += 2
		case match("OF"):
			off := c.offset
			sign := "+"
			if off < 0 {
				sign, off = "-", -off
			}
			b.WriteString(sign)
			num(off/3600, 2, false)
			if off%3600 != 0 {
				b.WriteByte(':')
				num(off/60%60, 2, false)
			}
			i += 2
		default:
			if rest[0] == '\\' && len(rest) > 1 {
				b.WriteByte(rest[1])
				i += 2
				continue
			}
			b.WriteByte(rest[0])
			i++
		}
	}
	_ = time.UTC
	return types.DVarchar(b.String()), nil
}
