package expr

import (
	"math"
	"time"

	"github.com/runneldb/runnel/internal/types"
)

const (
	usPerSec  = int64(1_000_000)
	usPerMin  = 60 * usPerSec
	usPerHour = 60 * usPerMin
	usPerDay  = 24 * usPerHour
)

// Ranges shared with the types package (see types.EndTimestamp for why
// the timestamp range ends before PostgreSQL's).
var (
	minTimestamp = types.MinTimestamp
	maxTimestamp = types.EndTimestamp - 1
	minDate      = types.MinDate
	maxDate      = types.MaxDate
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && ((m < 0) != (b < 0)) {
		m += b
	}
	return m
}

func isInfTS(v int64) bool { return v == math.MinInt64 || v == math.MaxInt64 }

// Calendar arithmetic lives in types (one implementation for I/O and
// functions).
func daysFromCivil(y int64, m, d int) int64     { return types.DaysFromCivil(y, m, d) }
func civilFromDays(z int64) (y int64, m, d int) { return types.CivilFromDays(z) }
func isLeap(y int64) bool                       { return types.IsLeapYear(y) }
func daysInMonth(y int64, m int) int            { return types.DaysInMonth(y, m) }

func dateToTimestamp(days int64) (int64, error) {
	if isInfTS(days) {
		return days, nil
	}
	v, ok := mul64(days, usPerDay)
	if !ok || v < minTimestamp || v > maxTimestamp {
		return 0, errDateOutOfRangeForTS
	}
	return v, nil
}

// utcToLocal converts an absolute instant to wall-clock microseconds in loc.
func utcToLocal(v int64, loc *time.Location) int64 {
	if loc == time.UTC || loc == nil {
		return v
	}
	sec := floorDiv(v, usPerSec)
	_, off := time.Unix(sec, 0).In(loc).Zone()
	return v + int64(off)*usPerSec
}

// localToUTC interprets wall-clock microseconds in loc. For a wall time in
// a DST gap or overlap it uses the offset in effect just before the
// transition, as PostgreSQL does.
func localToUTC(local int64, loc *time.Location) int64 {
	if loc == time.UTC || loc == nil {
		return local
	}
	sec := floorDiv(local, usPerSec)
	// First guess: the offset at the wall time read as UTC.
	_, off1 := time.Unix(sec, 0).In(loc).Zone()
	guess := sec - int64(off1)
	_, off2 := time.Unix(guess, 0).In(loc).Zone()
	if off2 != off1 {
		// Near a transition: prefer the offset that maps back to the wall
		// time; in a gap, use the earlier (pre-transition) offset.
		g2 := sec - int64(off2)
		_, off3 := time.Unix(g2, 0).In(loc).Zone()
		if off3 == off2 {
			return local - int64(off2)*usPerSec
		}
		if off1 < off2 {
			return local - int64(off1)*usPerSec
		}
		return local - int64(off2)*usPerSec
	}
	return local - int64(off1)*usPerSec
}
