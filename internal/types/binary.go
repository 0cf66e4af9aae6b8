package types

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// PostgreSQL binary ("send"/"recv") formats. All integers are big-endian.
//
//	bool              1 byte, 0 or 1
//	int2/int4/int8    2/4/8 bytes
//	float4/float8     IEEE 754 bits, 4/8 bytes
//	numeric           int16 ndigits, int16 weight, uint16 sign, int16 dscale,
//	                  then ndigits int16 base-10000 digits; the value is
//	                  sum(digit[i] * 10000^(weight-i)); sign 0x0000 positive,
//	                  0x4000 negative, 0xC000 NaN, 0xD000 +Inf, 0xF000 -Inf
//	text/varchar      the UTF-8 bytes
//	bytea             the raw bytes
//	date              int32 days since 2000-01-01 (INT32_MIN/MAX = ±infinity)
//	time              int64 microseconds since midnight
//	timestamp[tz]     int64 microseconds since 2000-01-01 00:00 UTC
//	                  (INT64_MIN/MAX = ±infinity)
//	interval          int64 microseconds, int32 days, int32 months
//	jsonb             version byte 1, then the JSON text

const (
	numericPos  = 0x0000
	numericNeg  = 0x4000
	numericNaN  = 0xC000
	numericPInf = 0xD000
	numericNInf = 0xF000
)

// AppendBinary appends the PostgreSQL binary representation of d (which
// must not be NULL) to buf.
func AppendBinary(buf []byte, d Datum, t Type) []byte {
	switch d.k {
	case KindBool:
		return append(buf, byte(d.i))
	case KindInt16:
		return binary.BigEndian.AppendUint16(buf, uint16(d.i))
	case KindInt32:
		return binary.BigEndian.AppendUint32(buf, uint32(d.i))
	case KindInt64:
		return binary.BigEndian.AppendUint64(buf, uint64(d.i))
	case KindFloat32:
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(d.Float())))
	case KindFloat64:
		return binary.BigEndian.AppendUint64(buf, uint64(d.i))
	case KindNumeric:
		return appendNumericBinary(buf, d.d)
	case KindVarchar, KindUnknown, KindBytea, KindUUID:
		return append(buf, d.s...)
	case KindJsonb:
		buf = append(buf, 1)
		return append(buf, d.s...)
	case KindDate:
		switch d.i {
		case PosInfinity:
			return binary.BigEndian.AppendUint32(buf, uint32(math.MaxInt32))
		case NegInfinity:
			return binary.BigEndian.AppendUint32(buf, 1<<31)
		}
		return binary.BigEndian.AppendUint32(buf, uint32(int32(d.i-pgEpochDays)))
	case KindTime:
		return binary.BigEndian.AppendUint64(buf, uint64(d.i))
	case KindTimestamp, KindTimestamptz:
		switch d.i {
		case PosInfinity, NegInfinity:
			return binary.BigEndian.AppendUint64(buf, uint64(d.i))
		}
		return binary.BigEndian.AppendUint64(buf, uint64(d.i-pgEpochMicros))
	case KindInterval:
		iv := d.Interval()
		buf = binary.BigEndian.AppendUint64(buf, uint64(iv.Micros))
		buf = binary.BigEndian.AppendUint32(buf, uint32(iv.Days))
		return binary.BigEndian.AppendUint32(buf, uint32(iv.Months))
	case KindArray:
		return appendArrayBinary(buf, d, t)
	}
	return buf
}

func binaryError(t Type, format string, args ...any) *sqlerr.Error {
	e := sqlerr.Errorf(sqlerr.InvalidBinaryRepresentation, format, args...)
	return e
}

func wantLen(b []byte, n int, t Type) error {
	if len(b) != n {
		return binaryError(t, "incorrect binary data format: %d bytes for type %s, want %d", len(b), t.Name(), n)
	}
	return nil
}

// ParseBinary decodes the PostgreSQL binary representation of a value of
// type t, applying t's modifier as ParseText does. Errors carry 22P03
// invalid_binary_representation (or the range/length errors of the type).
func ParseBinary(b []byte, t Type) (Datum, error) {
	switch t.Kind {
	case KindArray:
		d, err := parseArrayBinary(b, t)
		if err != nil {
			return NullDatum, err
		}
		return ApplyTypmod(d, t, false)
	case KindBool:
		if err := wantLen(b, 1, t); err != nil {
			return NullDatum, err
		}
		return DBool(b[0] != 0), nil
	case KindInt16:
		if err := wantLen(b, 2, t); err != nil {
			return NullDatum, err
		}
		return DInt16(int16(binary.BigEndian.Uint16(b))), nil
	case KindInt32:
		if err := wantLen(b, 4, t); err != nil {
			return NullDatum, err
		}
		return DInt32(int32(binary.BigEndian.Uint32(b))), nil
	case KindInt64:
		if err := wantLen(b, 8, t); err != nil {
			return NullDatum, err
		}
		return DInt64(int64(binary.BigEndian.Uint64(b))), nil
	case KindFloat32:
		if err := wantLen(b, 4, t); err != nil {
			return NullDatum, err
		}
		return DFloat32(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case KindFloat64:
		if err := wantLen(b, 8, t); err != nil {
			return NullDatum, err
		}
		return DFloat64(math.Float64frombits(binary.BigEndian.Uint64(b))), nil
	case KindNumeric:
		dec, err := parseNumericBinary(b, t)
		if err != nil {
			return NullDatum, err
		}
		return ApplyTypmod(DNumeric(dec), t, false)
	case KindVarchar, KindUnknown:
		s := string(b)
		if !utf8.ValidString(s) {
			return NullDatum, checkEncoding(s)
		}
		if t.Kind == KindUnknown {
			return DUnknown(s), nil
		}
		return ApplyTypmod(DVarchar(s), t, false)
	case KindBytea:
		return DBytea(b), nil
	case KindUUID:
		if len(b) != 16 {
			return NullDatum, binaryError(t, "invalid length %d, want 16", len(b))
		}
		return DUUID([16]byte(b)), nil
	case KindJsonb:
		if len(b) == 0 || b[0] != 1 {
			return NullDatum, binaryError(t, "unsupported jsonb version number %d", firstByte(b))
		}
		if err := checkEncoding(string(b[1:])); err != nil {
			return NullDatum, err
		}
		j, err := ParseJsonb(string(b[1:]))
		if err != nil {
			return NullDatum, err
		}
		return DJsonb(j), nil
	case KindDate:
		if err := wantLen(b, 4, t); err != nil {
			return NullDatum, err
		}
		v := int32(binary.BigEndian.Uint32(b))
		switch v {
		case math.MaxInt32:
			return DDate(PosInfinity), nil
		case math.MinInt32:
			return DDate(NegInfinity), nil
		}
		days := int64(v) + pgEpochDays
		if days < MinDate || days > MaxDate {
			return NullDatum, sqlerr.New(sqlerr.DatetimeFieldOverflow, "date out of range")
		}
		return DDate(days), nil
	case KindTime:
		if err := wantLen(b, 8, t); err != nil {
			return NullDatum, err
		}
		v := int64(binary.BigEndian.Uint64(b))
		if v < 0 || v > maxTimeOfDay {
			return NullDatum, sqlerr.New(sqlerr.DatetimeFieldOverflow, "time out of range")
		}
		return ApplyTypmod(DTime(v), t, false)
	case KindTimestamp, KindTimestamptz:
		if err := wantLen(b, 8, t); err != nil {
			return NullDatum, err
		}
		v := int64(binary.BigEndian.Uint64(b))
		var us int64
		switch v {
		case math.MaxInt64, math.MinInt64:
			us = v
		default:
			if v > EndTimestamp-1-pgEpochMicros || v < MinTimestamp-pgEpochMicros {
				return NullDatum, sqlerr.New(sqlerr.DatetimeFieldOverflow, "timestamp out of range")
			}
			us = v + pgEpochMicros
		}
		d := Datum{k: t.Kind, i: us}
		return ApplyTypmod(d, t, false)
	case KindInterval:
		if err := wantLen(b, 16, t); err != nil {
			return NullDatum, err
		}
		return DInterval(IntervalValue{
			Micros: int64(binary.BigEndian.Uint64(b)),
			Days:   int32(binary.BigEndian.Uint32(b[8:])),
			Months: int32(binary.BigEndian.Uint32(b[12:])),
		}), nil
	}
	return NullDatum, sqlerr.Errorf(sqlerr.FeatureNotSupported, "binary input for type %s is not supported", t.Name())
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

// appendNumericBinary converts a decimal to PostgreSQL's base-10000 form.
// The decimal digits are grouped in fours aligned at the decimal point.
func appendNumericBinary(buf []byte, d *apd.Decimal) []byte {
	hdr := func(ndigits, weight int16, sign uint16, dscale int16) {
		buf = binary.BigEndian.AppendUint16(buf, uint16(ndigits))
		buf = binary.BigEndian.AppendUint16(buf, uint16(weight))
		buf = binary.BigEndian.AppendUint16(buf, sign)
		buf = binary.BigEndian.AppendUint16(buf, uint16(dscale))
	}
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		hdr(0, 0, numericNaN, 0)
		return buf
	case apd.Infinite:
		// PostgreSQL sends dscale 0x20 for infinities (it leaks header bits).
		if d.Negative {
			hdr(0, 0, numericNInf, 0x20)
		} else {
			hdr(0, 0, numericPInf, 0x20)
		}
		return buf
	}
	var scratch [48]byte
	digits := d.Coeff.Append(scratch[:0], 10)
	exp := int(d.Exponent)
	dscale := 0
	if exp < 0 {
		dscale = -exp
	}
	if len(digits) == 1 && digits[0] == '0' {
		hdr(0, 0, numericPos, int16(dscale))
		return buf
	}
	if exp > 0 {
		// multiply out: positional digits with exp trailing zeros
		for i := 0; i < exp; i++ {
			digits = append(digits, '0')
		}
		exp = 0
	}
	// value = digits * 10^exp, exp <= 0. Pad the fraction on the right and
	// the whole on the left to multiples of four digits; the last
	// fracGroups groups are after the decimal point.
	fracLen := -exp
	rightPad := (4 - fracLen%4) % 4
	n := len(digits) + rightPad
	leftPad := (4 - n%4) % 4
	groups := (n + leftPad) / 4
	fracGroups := (fracLen + rightPad) / 4
	weight := groups - fracGroups - 1
	var gscratch [16]int16
	gs := gscratch[:0]
	pos := -leftPad
	for g := 0; g < groups; g++ {
		v := 0
		for k := 0; k < 4; k++ {
			idx := pos + k
			c := 0
			if idx >= 0 && idx < len(digits) {
				c = int(digits[idx] - '0')
			}
			v = v*10 + c
		}
		gs = append(gs, int16(v))
		pos += 4
	}
	// strip leading and trailing zero groups
	for len(gs) > 0 && gs[0] == 0 {
		gs = gs[1:]
		weight--
	}
	for len(gs) > 0 && gs[len(gs)-1] == 0 {
		gs = gs[:len(gs)-1]
	}
	sign := uint16(numericPos)
	if d.Negative {
		sign = numericNeg
	}
	hdr(int16(len(gs)), int16(weight), sign, int16(dscale))
	for _, g := range gs {
		buf = binary.BigEndian.AppendUint16(buf, uint16(g))
	}
	return buf
}

func parseNumericBinary(b []byte, t Type) (*apd.Decimal, error) {
	if len(b) < 8 {
		return nil, binaryError(t, "insufficient data left in message")
	}
	ndigits := int(int16(binary.BigEndian.Uint16(b)))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(int16(binary.BigEndian.Uint16(b[6:])))
	if ndigits < 0 || len(b) != 8+2*ndigits {
		return nil, binaryError(t, "invalid length in external \"numeric\" value")
	}
	switch sign {
	case numericNaN:
		return &apd.Decimal{Form: apd.NaN}, nil
	case numericPInf:
		return &apd.Decimal{Form: apd.Infinite}, nil
	case numericNInf:
		return &apd.Decimal{Form: apd.Infinite, Negative: true}, nil
	case numericPos, numericNeg:
	default:
		return nil, binaryError(t, "invalid sign in external \"numeric\" value")
	}
	if dscale < 0 || dscale > numericMaxDscale {
		return nil, binaryError(t, "invalid scale in external \"numeric\" value")
	}
	// Build the decimal digit string: groups give digits at positions
	// 10^(4*(weight-i)+3) .. 10^(4*(weight-i)).
	var scratch [64]byte
	digits := scratch[:0]
	for i := 0; i < ndigits; i++ {
		g := int(binary.BigEndian.Uint16(b[8+2*i:]))
		if g >= 10000 {
			return nil, binaryError(t, "invalid digit in external \"numeric\" value")
		}
		digits = append(digits, byte('0'+g/1000), byte('0'+g/100%10), byte('0'+g/10%10), byte('0'+g%10))
	}
	// value = digits * 10^(4*(weight+1) - 4*ndigits)
	exp := 4*(weight+1) - 4*ndigits
	// Adjust to the requested display scale: exponent must become -dscale.
	if exp < -dscale {
		// drop excess fractional digits (PostgreSQL rounds; values from a
		// well-behaved client never carry digits beyond dscale)
		drop := -dscale - exp
		if drop >= len(digits) {
			digits = digits[:0]
		} else {
			digits = digits[:len(digits)-drop]
		}
		exp = -dscale
	}
	for exp > -dscale {
		digits = append(digits, '0')
		exp--
		if len(digits) > numericMaxWeightDigits+numericMaxDscale+8 {
			return nil, numericOverflow()
		}
	}
	d := new(apd.Decimal)
	if len(digits) == 0 {
		digits = append(digits, '0')
	}
	if _, ok := d.Coeff.SetString(string(digits), 10); !ok {
		return nil, binaryError(t, "invalid digit in external \"numeric\" value")
	}
	d.Exponent = int32(exp)
	d.Negative = sign == numericNeg && d.Coeff.Sign() != 0
	return d, nil
}
