package types

// The proleptic Gregorian calendar arithmetic behind dates and timestamps,
// exported for the functions in internal/expr (date_trunc, make_date,
// interval arithmetic) so that there is one implementation.

// DaysFromCivil returns the days since 1970-01-01 of year y, month m
// (1–12), day d.
func DaysFromCivil(y int64, m, d int) int64 { return daysFromCivil(y, m, d) }

// CivilFromDays is the inverse of DaysFromCivil.
func CivilFromDays(days int64) (y int64, m, d int) { return civilFromDays(days) }

// IsLeapYear reports whether y is a Gregorian leap year.
func IsLeapYear(y int64) bool { return isLeap(y) }

// DaysInMonth returns the number of days of month m (1–12) of year y.
func DaysInMonth(y int64, m int) int { return daysInMonth(y, m) }
