package types

import (
	"bytes"
	"cmp"
	"fmt"
	"math"

	"github.com/cockroachdb/apd/v3"
)

// Datum is one SQL value. The zero Datum is NULL.
//
// Representation by kind:
//
//	Bool                    i: 0 or 1
//	Int16, Int32, Int64     i
//	Float32, Float64        i: math.Float64bits of the value (a float32 is widened exactly)
//	Numeric                 d (never nil for a non-NULL numeric)
//	Varchar, Unknown        s
//	Bytea                   s: the raw bytes
//	UUID                    s: the 16 bytes
//	Jsonb                   s: canonical jsonb text (keys sorted as PostgreSQL sorts them)
//	Date                    i: days since 1970-01-01 (math.MinInt64/MaxInt64: -infinity/infinity)
//	Time                    i: microseconds since midnight
//	Timestamp, Timestamptz  i: microseconds since 1970-01-01 00:00:00 UTC (±infinity as for Date)
//	Interval                i: microseconds; j: months<<32 | uint32(days)
//
// A Datum is immutable once built; a *apd.Decimal it holds must not be mutated.
type Datum struct {
	k Kind
	i int64
	j int64
	s string
	d *apd.Decimal
}

// NullDatum is the SQL NULL.
var NullDatum = Datum{}

func DBool(b bool) Datum {
	if b {
		return Datum{k: KindBool, i: 1}
	}
	return Datum{k: KindBool}
}
func DInt16(v int16) Datum     { return Datum{k: KindInt16, i: int64(v)} }
func DInt32(v int32) Datum     { return Datum{k: KindInt32, i: int64(v)} }
func DInt64(v int64) Datum     { return Datum{k: KindInt64, i: v} }
func DFloat32(v float32) Datum { return Datum{k: KindFloat32, i: int64(math.Float64bits(float64(v)))} }
func DFloat64(v float64) Datum { return Datum{k: KindFloat64, i: int64(math.Float64bits(v))} }

// DNumeric wraps d, which the caller must not mutate afterwards.
func DNumeric(d *apd.Decimal) Datum { return Datum{k: KindNumeric, d: d} }
func DVarchar(s string) Datum       { return Datum{k: KindVarchar, s: s} }
func DUnknown(s string) Datum       { return Datum{k: KindUnknown, s: s} }
func DBytea(b []byte) Datum         { return Datum{k: KindBytea, s: string(b)} }
func DByteaString(b string) Datum   { return Datum{k: KindBytea, s: b} }

// DUUID wraps a uuid's 16 bytes.
func DUUID(b [16]byte) Datum { return Datum{k: KindUUID, s: string(b[:])} }

// DJsonb wraps already-canonical jsonb text (see ParseJsonb).
func DJsonb(canonical string) Datum { return Datum{k: KindJsonb, s: canonical} }
func DDate(days int64) Datum        { return Datum{k: KindDate, i: days} }
func DTime(micros int64) Datum      { return Datum{k: KindTime, i: micros} }
func DTimestamp(micros int64) Datum { return Datum{k: KindTimestamp, i: micros} }
func DTimestamptz(micros int64) Datum {
	return Datum{k: KindTimestamptz, i: micros}
}
func DInterval(iv IntervalValue) Datum {
	return Datum{k: KindInterval, i: iv.Micros, j: int64(iv.Months)<<32 | int64(uint32(iv.Days))}
}

// IntervalValue is PostgreSQL's interval: months, days and microseconds are
// kept apart because their lengths vary (a month is not always 30 days).
type IntervalValue struct {
	Months int32
	Days   int32
	Micros int64
}

// Kind returns the physical kind; KindNull for NULL.
func (d Datum) Kind() Kind   { return d.k }
func (d Datum) IsNull() bool { return d.k == KindNull }

func (d Datum) Bool() bool            { return d.i != 0 }
func (d Datum) Int() int64            { return d.i }
func (d Datum) Float() float64        { return math.Float64frombits(uint64(d.i)) }
func (d Datum) Decimal() *apd.Decimal { return d.d }
func (d Datum) Str() string           { return d.s }
func (d Datum) Bytes() []byte         { return []byte(d.s) }
func (d Datum) Interval() IntervalValue {
	return IntervalValue{Months: int32(d.j >> 32), Days: int32(uint32(d.j)), Micros: d.i}
}

// Compare orders two datums of the same kind; NULL sorts after every value
// (PostgreSQL's default NULLS LAST for ascending order). Numbers of
// different kinds compare by value. Comparing other mixed kinds is a caller
// bug and orders by kind.
func Compare(a, b Datum) int {
	if a.k == KindNull || b.k == KindNull {
		switch {
		case a.k == b.k:
			return 0
		case a.k == KindNull:
			return 1
		default:
			return -1
		}
	}
	if a.k != b.k {
		return compareMixed(a, b)
	}
	switch a.k {
	case KindBool, KindInt16, KindInt32, KindInt64, KindDate, KindTime, KindTimestamp, KindTimestamptz:
		return cmp.Compare(a.i, b.i)
	case KindFloat32, KindFloat64:
		return compareFloat(a.Float(), b.Float())
	case KindNumeric:
		return compareDecimal(a.d, b.d)
	case KindVarchar, KindUnknown, KindJsonb:
		return cmp.Compare(a.s, b.s)
	case KindBytea, KindUUID:
		return bytes.Compare([]byte(a.s), []byte(b.s))
	case KindInterval:
		return compareInterval(a.Interval(), b.Interval())
	case KindArray:
		return compareArray(a, b)
	}
	return 0
}

// compareFloat orders floats as PostgreSQL does: NaN equals NaN and sorts
// above every other value, including +Inf.
func compareFloat(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return cmp.Compare(x, y)
}

func compareMixed(a, b Datum) int {
	an, bn := isNumberKind(a.k), isNumberKind(b.k)
	if an && bn {
		if a.k == KindNumeric || b.k == KindNumeric {
			return compareDecimal(ToDecimal(a), ToDecimal(b))
		}
		if isFloatKind(a.k) || isFloatKind(b.k) {
			return compareFloat(ToFloat(a), ToFloat(b))
		}
		return cmp.Compare(a.i, b.i)
	}
	if (a.k == KindTimestamp || a.k == KindTimestamptz) && (b.k == KindTimestamp || b.k == KindTimestamptz) {
		return cmp.Compare(a.i, b.i)
	}
	return cmp.Compare(a.k, b.k)
}

func isNumberKind(k Kind) bool {
	switch k {
	case KindInt16, KindInt32, KindInt64, KindFloat32, KindFloat64, KindNumeric:
		return true
	}
	return false
}

func isFloatKind(k Kind) bool { return k == KindFloat32 || k == KindFloat64 }

// compareDecimal orders numerics as PostgreSQL does: NaN equals NaN and
// sorts above every other value, including Infinity (apd leaves NaN
// comparisons undefined).
func compareDecimal(x, y *apd.Decimal) int {
	xn := x.Form == apd.NaN || x.Form == apd.NaNSignaling
	yn := y.Form == apd.NaN || y.Form == apd.NaNSignaling
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return x.Cmp(y)
}

// ToFloat converts a number datum to float64 (NULL and non-numbers give 0).
func ToFloat(d Datum) float64 {
	switch d.k {
	case KindFloat32, KindFloat64:
		return d.Float()
	case KindNumeric:
		f, _ := d.d.Float64()
		return f
	case KindInt16, KindInt32, KindInt64:
		return float64(d.i)
	}
	return 0
}

// ToDecimal converts a number datum to a decimal (a new value; NULL gives 0).
func ToDecimal(d Datum) *apd.Decimal {
	switch d.k {
	case KindNumeric:
		return d.d
	case KindInt16, KindInt32, KindInt64:
		return apd.New(d.i, 0)
	case KindFloat32, KindFloat64:
		f := d.Float()
		switch {
		case math.IsNaN(f):
			return &apd.Decimal{Form: apd.NaN}
		case math.IsInf(f, 0):
			return &apd.Decimal{Form: apd.Infinite, Negative: f < 0}
		}
		var x apd.Decimal
		if _, err := x.SetFloat64(f); err != nil {
			return apd.New(0, 0)
		}
		return &x
	}
	return apd.New(0, 0)
}

// Equal reports whether two datums are the same value (NULL equals NULL
// here: this is identity for keys and state, not SQL's = operator).
func Equal(a, b Datum) bool { return Compare(a, b) == 0 }

// String renders the datum for debugging and error messages (not the wire
// format: see FormatText).
func (d Datum) String() string {
	switch d.k {
	case KindNull:
		return "NULL"
	case KindBool:
		if d.i != 0 {
			return "t"
		}
		return "f"
	case KindInt16, KindInt32, KindInt64:
		return fmt.Sprint(d.i)
	case KindFloat32, KindFloat64:
		return fmt.Sprint(d.Float())
	case KindNumeric:
		return d.d.String()
	case KindVarchar, KindUnknown, KindJsonb:
		return d.s
	case KindBytea:
		return fmt.Sprintf("\\x%x", d.s)
	case KindUUID:
		return string(appendUUID(nil, d.s))
	case KindInterval:
		iv := d.Interval()
		return fmt.Sprintf("%d mons %d days %d us", iv.Months, iv.Days, iv.Micros)
	case KindArray:
		return string(appendArrayText(nil, d, Type{}, nil))
	}
	return fmt.Sprintf("%v(%d)", d.k, d.i)
}
