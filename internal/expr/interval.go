package expr

import (
	"math"

	"github.com/runneldb/runnel/internal/types"
)

func intervalAdd(a, b types.IntervalValue) (types.IntervalValue, error) {
	m := int64(a.Months) + int64(b.Months)
	d := int64(a.Days) + int64(b.Days)
	us, ok := add64(a.Micros, b.Micros)
	if !ok || m != int64(int32(m)) || d != int64(int32(d)) {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	return types.IntervalValue{Months: int32(m), Days: int32(d), Micros: us}, nil
}

func intervalNeg(a types.IntervalValue) (types.IntervalValue, error) {
	if a.Months == math.MinInt32 || a.Days == math.MinInt32 || a.Micros == math.MinInt64 {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	return types.IntervalValue{Months: -a.Months, Days: -a.Days, Micros: -a.Micros}, nil
}

func intervalSub(a, b types.IntervalValue) (types.IntervalValue, error) {
	m := int64(a.Months) - int64(b.Months)
	d := int64(a.Days) - int64(b.Days)
	us := a.Micros - b.Micros
	if (a.Micros >= 0 && b.Micros < 0 && us < 0) || (a.Micros < 0 && b.Micros > 0 && us >= 0) ||
		m != int64(int32(m)) || d != int64(int32(d)) {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	return types.IntervalValue{Months: int32(m), Days: int32(d), Micros: us}, nil
}

// tsRound is PostgreSQL's TSROUND: round to microsecond precision.
func tsRound(f float64) float64 { return math.RoundToEven(f*1e6) / 1e6 }

// intervalMulFloat is interval_mul: fractional months cascade into days
// (30 per month) and fractional days into seconds.
func intervalMulFloat(a types.IntervalValue, f float64) (types.IntervalValue, error) {
	if math.IsNaN(f) {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	rm := float64(a.Months) * f
	if math.IsNaN(rm) || rm > math.MaxInt32 || rm < math.MinInt32 {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	rd := float64(a.Days) * f
	if math.IsNaN(rd) || rd > math.MaxInt32 || rd < math.MinInt32 {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	months := int32(rm)
	days := int32(rd)
	monthRemDays := tsRound((float64(a.Months)*f - float64(months)) * 30)
	secRem := tsRound((float64(a.Days)*f - float64(days) + monthRemDays - float64(int64(monthRemDays))) * 86400)
	if math.Abs(secRem) >= 86400 {
		days += int32(secRem / 86400)
		secRem -= float64(int64(secRem/86400)) * 86400
	}
	days += int32(monthRemDays)
	rt := math.RoundToEven(float64(a.Micros)*f + secRem*1e6)
	if math.IsNaN(rt) || rt >= 9223372036854775808.0 || rt < -9223372036854775808.0 {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	return types.IntervalValue{Months: months, Days: days, Micros: int64(rt)}, nil
}

// intervalDivFloat is interval_div.
func intervalDivFloat(a types.IntervalValue, f float64) (types.IntervalValue, error) {
	if f == 0 {
		return types.IntervalValue{}, errDivisionByZero
	}
	if math.IsNaN(f) {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	rm, rd := float64(a.Months)/f, float64(a.Days)/f
	if math.IsNaN(rm) || rm > math.MaxInt32 || rm < math.MinInt32 || math.IsNaN(rd) || rd > math.MaxInt32 || rd < math.MinInt32 {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	months := int32(rm)
	days := int32(rd)
	monthRemDays := float64(a.Months)/f - float64(months)
	monthRemDays = tsRound(monthRemDays * 30)
	secRem := tsRound((float64(a.Days)/f - float64(days) + monthRemDays - float64(int64(monthRemDays))) * 86400)
	if math.Abs(secRem) >= 86400 {
		days += int32(secRem / 86400)
		secRem -= float64(int64(secRem/86400)) * 86400
	}
	days += int32(monthRemDays)
	rt := math.RoundToEven(float64(a.Micros)/f + secRem*1e6)
	if math.IsNaN(rt) || rt >= 9223372036854775808.0 || rt < -9223372036854775808.0 {
		return types.IntervalValue{}, errIntervalOutOfRange
	}
	return types.IntervalValue{Months: months, Days: days, Micros: int64(rt)}, nil
}
