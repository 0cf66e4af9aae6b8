package types

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/cockroachdb/apd/v3"
)

// Memcomparable key encoding: for datums a, b of one type,
//
//	bytes.Compare(AppendKey(nil, a, t, desc, nf), AppendKey(nil, b, t, desc, nf))
//
// has the sign of Compare(a, b) (negated when desc), with NULL placed first
// or last as nf says. Concatenating encoded columns gives a key that sorts
// like the row under ORDER BY with those column orders.
//
// Layout of one column:
//
//	+--------+--------------------------+
//	| marker | payload (absent for NULL)|
//	+--------+--------------------------+
//	marker: 0x00 NULL when nulls first, 0x01 value, 0x02 NULL when nulls last
//
// The payload is inverted bytewise for DESC; the marker never is, so
// "nulls first" means first in byte order in both directions.
//
// Payloads by kind:
//
//	bool                1 byte 0/1
//	int16/32/64         2/4/8 bytes big-endian, sign bit flipped
//	date, time,
//	timestamp[tz]       8 bytes big-endian, sign bit flipped (±infinity are
//	                    the int64 extremes, so they sort at the ends)
//	float32/64          4/8 bytes: IEEE bits, sign bit flipped for positive,
//	                    all bits flipped for negative; -0 is written as +0 and
//	                    every NaN as the one canonical NaN (greatest)
//	numeric             class byte: 0x01 -Inf, 0x02 negative, 0x03 zero,
//	                    0x04 positive, 0x05 +Inf, 0x06 NaN; finite non-zero
//	                    values then carry the decimal exponent E (value =
//	                    0.d1d2d3... * 10^E, d1 != 0) as 4 bytes big-endian
//	                    sign-flipped, then the digits two per byte as
//	                    (pair+1) in 1..100, then 0x00; all of it after the
//	                    class byte is inverted for negative values
//	varchar/bytea/jsonb bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x01
//	interval            16 bytes: PostgreSQL's 128-bit comparison span
//	                    (IntervalCompareKey), sign bit flipped
//
// Decoding is exact except where SQL equality is coarser than the value:
// a numeric decodes without trailing fractional zeros (1.50 -> 1.5), a
// float -0 decodes as 0, and an interval decodes to its span as days and
// microseconds ('1 mon' -> '30 days'). State tables keep the full row in
// the value for that reason.

// SortOrder is one key column's direction and NULL placement.
type SortOrder struct {
	Desc       bool
	NullsFirst bool
}

// Ascending is ORDER BY ... ASC (NULLS LAST), PostgreSQL's default.
var Ascending = SortOrder{}

// DefaultOrder returns PostgreSQL's default NULL placement for the given
// direction: NULLS LAST for ASC, NULLS FIRST for DESC.
func DefaultOrder(desc bool) SortOrder { return SortOrder{Desc: desc, NullsFirst: desc} }

const (
	keyNullFirst = 0x00
	keyValue     = 0x01
	keyNullLast  = 0x02
)

// ErrKeyCorrupt is returned (wrapped) when DecodeKey meets bytes that no
// encoder produces.
var ErrKeyCorrupt = errors.New("corrupt key encoding")

// AppendKey appends the memcomparable encoding of d (of type t) to buf.
func AppendKey(buf []byte, d Datum, t Type, desc bool, nullsFirst bool) []byte {
	if d.k == KindNull {
		if nullsFirst {
			return append(buf, keyNullFirst)
		}
		return append(buf, keyNullLast)
	}
	if d.k != t.Kind {
		d = coerceNumberKind(d, t.Kind)
	}
	buf = append(buf, keyValue)
	start := len(buf)
	buf = appendKeyPayload(buf, d)
	if desc {
		for i := start; i < len(buf); i++ {
			buf[i] = ^buf[i]
		}
	}
	return buf
}

func appendKeyPayload(buf []byte, d Datum) []byte {
	switch d.k {
	case KindBool:
		return append(buf, byte(d.i))
	case KindInt16:
		return binary.BigEndian.AppendUint16(buf, uint16(d.i)^0x8000)
	case KindInt32:
		return binary.BigEndian.AppendUint32(buf, uint32(d.i)^0x80000000)
	case KindInt64, KindDate, KindTime, KindTimestamp, KindTimestamptz:
		return binary.BigEndian.AppendUint64(buf, uint64(d.i)^(1<<63))
	case KindFloat32:
		f := float32(d.Float())
		var bits uint32
		switch {
		case f != f:
			bits = 0xFFFFFFFF // canonical NaN, above +Inf's encoding
		case f == 0:
			bits = 0x80000000
		default:
			bits = math.Float32bits(f)
			if bits&0x80000000 != 0 {
				bits = ^bits
			} else {
				bits |= 0x80000000
			}
		}
		return binary.BigEndian.AppendUint32(buf, bits)
	case KindFloat64:
		f := d.Float()
		var bits uint64
		switch {
		case f != f:
			bits = math.MaxUint64
		case f == 0:
			bits = 1 << 63
		default:
			bits = math.Float64bits(f)
			if bits&(1<<63) != 0 {
				bits = ^bits
			} else {
				bits |= 1 << 63
			}
		}
		return binary.BigEndian.AppendUint64(buf, bits)
	case KindNumeric:
		return appendNumericKey(buf, d.d)
	case KindVarchar, KindUnknown, KindJsonb, KindBytea, KindUUID:
		s := d.s
		for i := 0; i < len(s); i++ {
			if s[i] == 0 {
				buf = append(buf, 0x00, 0xFF)
			} else {
				buf = append(buf, s[i])
			}
		}
		return append(buf, 0x00, 0x01)
	case KindInterval:
		hi, lo := IntervalCompareKey(d.Interval())
		buf = binary.BigEndian.AppendUint64(buf, uint64(hi)^(1<<63))
		return binary.BigEndian.AppendUint64(buf, lo)
	case KindArray:
		return appendArrayKey(buf, d)
	}
	return buf
}

const (
	numKeyNegInf = 0x01
	numKeyNeg    = 0x02
	numKeyZero   = 0x03
	numKeyPos    = 0x04
	numKeyPosInf = 0x05
	numKeyNaN    = 0x06
)

func appendNumericKey(buf []byte, d *apd.Decimal) []byte {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return append(buf, numKeyNaN)
	case apd.Infinite:
		if d.Negative {
			return append(buf, numKeyNegInf)
		}
		return append(buf, numKeyPosInf)
	}
	var scratch [48]byte
	digits := d.Coeff.Append(scratch[:0], 10)
	if len(digits) == 1 && digits[0] == '0' {
		return append(buf, numKeyZero)
	}
	neg := d.Negative
	if neg {
		buf = append(buf, numKeyNeg)
	} else {
		buf = append(buf, numKeyPos)
	}
	start := len(buf)
	// value = 0.digits * 10^E with E = exponent + number of coefficient digits
	e := int64(d.Exponent) + int64(len(digits))
	// strip trailing zeros: they change the exponent, not the value
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if e > math.MaxInt32 {
		e = math.MaxInt32
	} else if e < math.MinInt32 {
		e = math.MinInt32
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(int32(e))^0x80000000)
	for i := 0; i < len(digits); i += 2 {
		pair := int(digits[i]-'0') * 10
		if i+1 < len(digits) {
			pair += int(digits[i+1] - '0')
		}
		buf = append(buf, byte(pair+1))
	}
	buf = append(buf, 0x00)
	if neg {
		for i := start; i < len(buf); i++ {
			buf[i] = ^buf[i]
		}
	}
	return buf
}

func keyCorrupt(t Type, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrKeyCorrupt, t.Name(), fmt.Sprintf(format, args...))
}

// DecodeKey decodes one column encoded by AppendKey with the same type and
// order, returning the datum and the remaining bytes.
func DecodeKey(b []byte, t Type, desc, nullsFirst bool) (Datum, []byte, error) {
	if len(b) == 0 {
		return NullDatum, nil, keyCorrupt(t, "empty input")
	}
	switch b[0] {
	case keyNullFirst, keyNullLast:
		if (b[0] == keyNullFirst) != nullsFirst {
			return NullDatum, nil, keyCorrupt(t, "NULL marker %#x does not match nulls-first=%v", b[0], nullsFirst)
		}
		return NullDatum, b[1:], nil
	case keyValue:
	default:
		return NullDatum, nil, keyCorrupt(t, "bad marker %#x", b[0])
	}
	b = b[1:]
	fixed := func(n int) ([]byte, []byte, error) {
		if len(b) < n {
			return nil, nil, keyCorrupt(t, "truncated: %d bytes, want %d", len(b), n)
		}
		var tmp [16]byte
		p := tmp[:n]
		copy(p, b[:n])
		if desc {
			for i := range p {
				p[i] = ^p[i]
			}
		}
		return p, b[n:], nil
	}
	switch t.Kind {
	case KindBool:
		p, rest, err := fixed(1)
		if err != nil {
			return NullDatum, nil, err
		}
		if p[0] > 1 {
			return NullDatum, nil, keyCorrupt(t, "bool byte %#x", p[0])
		}
		return DBool(p[0] == 1), rest, nil
	case KindInt16:
		p, rest, err := fixed(2)
		if err != nil {
			return NullDatum, nil, err
		}
		return DInt16(int16(binary.BigEndian.Uint16(p) ^ 0x8000)), rest, nil
	case KindInt32:
		p, rest, err := fixed(4)
		if err != nil {
			return NullDatum, nil, err
		}
		return DInt32(int32(binary.BigEndian.Uint32(p) ^ 0x80000000)), rest, nil
	case KindInt64, KindDate, KindTime, KindTimestamp, KindTimestamptz:
		p, rest, err := fixed(8)
		if err != nil {
			return NullDatum, nil, err
		}
		return Datum{k: t.Kind, i: int64(binary.BigEndian.Uint64(p) ^ (1 << 63))}, rest, nil
	case KindFloat32:
		p, rest, err := fixed(4)
		if err != nil {
			return NullDatum, nil, err
		}
		bits := binary.BigEndian.Uint32(p)
		if bits == 0xFFFFFFFF {
			return DFloat32(float32(math.NaN())), rest, nil
		}
		if bits&0x80000000 != 0 {
			bits &^= 0x80000000
		} else {
			bits = ^bits
		}
		return DFloat32(math.Float32frombits(bits)), rest, nil
	case KindFloat64:
		p, rest, err := fixed(8)
		if err != nil {
			return NullDatum, nil, err
		}
		bits := binary.BigEndian.Uint64(p)
		if bits == math.MaxUint64 {
			return DFloat64(math.NaN()), rest, nil
		}
		if bits&(1<<63) != 0 {
			bits &^= 1 << 63
		} else {
			bits = ^bits
		}
		return DFloat64(math.Float64frombits(bits)), rest, nil
	case KindInterval:
		p, rest, err := fixed(16)
		if err != nil {
			return NullDatum, nil, err
		}
		hi := int64(binary.BigEndian.Uint64(p) ^ (1 << 63))
		lo := binary.BigEndian.Uint64(p[8:])
		iv, ok := intervalFromSpan(hi, lo)
		if !ok {
			return NullDatum, nil, keyCorrupt(t, "interval span out of range")
		}
		return DInterval(iv), rest, nil
	case KindVarchar, KindUnknown, KindJsonb, KindBytea, KindUUID:
		var out []byte
		var flip byte
		if desc {
			flip = 0xFF
		}
		for i := 0; ; i++ {
			if i >= len(b) {
				return NullDatum, nil, keyCorrupt(t, "unterminated string")
			}
			c := b[i] ^ flip
			if c != 0 {
				out = append(out, c)
				continue
			}
			if i+1 >= len(b) {
				return NullDatum, nil, keyCorrupt(t, "truncated string escape")
			}
			switch b[i+1] ^ flip {
			case 0xFF:
				out = append(out, 0)
				i++
			case 0x01:
				s := string(out)
				rest := b[i+2:]
				switch t.Kind {
				case KindBytea:
					return DByteaString(s), rest, nil
				case KindUUID:
					if len(s) != 16 {
						return NullDatum, nil, keyCorrupt(t, "uuid of length %d", len(s))
					}
					return Datum{k: KindUUID, s: s}, rest, nil
				case KindJsonb:
					return DJsonb(s), rest, nil
				case KindUnknown:
					return DUnknown(s), rest, nil
				}
				return DVarchar(s), rest, nil
			default:
				return NullDatum, nil, keyCorrupt(t, "bad string escape %#x", b[i+1]^flip)
			}
		}
	case KindNumeric:
		return decodeNumericKey(b, t, desc)
	case KindArray:
		return decodeArrayKey(b, t, desc)
	}
	return NullDatum, nil, keyCorrupt(t, "kind %d has no key encoding", t.Kind)
}

func decodeNumericKey(b []byte, t Type, desc bool) (Datum, []byte, error) {
	var flip byte
	if desc {
		flip = 0xFF
	}
	if len(b) == 0 {
		return NullDatum, nil, keyCorrupt(t, "truncated numeric")
	}
	class := b[0] ^ flip
	b = b[1:]
	switch class {
	case numKeyNaN:
		return DNumeric(&apd.Decimal{Form: apd.NaN}), b, nil
	case numKeyPosInf:
		return DNumeric(&apd.Decimal{Form: apd.Infinite}), b, nil
	case numKeyNegInf:
		return DNumeric(&apd.Decimal{Form: apd.Infinite, Negative: true}), b, nil
	case numKeyZero:
		return DNumeric(apd.New(0, 0)), b, nil
	case numKeyPos, numKeyNeg:
	default:
		return NullDatum, nil, keyCorrupt(t, "bad numeric class %#x", class)
	}
	if class == numKeyNeg {
		flip ^= 0xFF
	}
	if len(b) < 4 {
		return NullDatum, nil, keyCorrupt(t, "truncated numeric exponent")
	}
	var eb [4]byte
	for i := range eb {
		eb[i] = b[i] ^ flip
	}
	e := int64(int32(binary.BigEndian.Uint32(eb[:]) ^ 0x80000000))
	if e > maxNumericExponent || e < -maxNumericExponent {
		return NullDatum, nil, keyCorrupt(t, "numeric exponent %d out of range", e)
	}
	b = b[4:]
	var scratch [48]byte
	digits := scratch[:0]
	for i := 0; ; i++ {
		if i >= len(b) {
			return NullDatum, nil, keyCorrupt(t, "unterminated numeric digits")
		}
		c := b[i] ^ flip
		if c == 0 {
			b = b[i+1:]
			break
		}
		if c > 100 {
			return NullDatum, nil, keyCorrupt(t, "bad numeric digit byte %#x", c)
		}
		pair := c - 1
		digits = append(digits, '0'+pair/10, '0'+pair%10)
	}
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		return NullDatum, nil, keyCorrupt(t, "numeric without digits")
	}
	d := new(apd.Decimal)
	if _, ok := d.Coeff.SetString(string(digits), 10); !ok {
		return NullDatum, nil, keyCorrupt(t, "bad numeric digits")
	}
	exp := e - int64(len(digits))
	if exp > 0 {
		// keep the no-positive-exponent convention of parsed numerics
		var mult apd.BigInt
		mult.Exp(apd.NewBigInt(10), apd.NewBigInt(exp), nil)
		d.Coeff.Mul(&d.Coeff, &mult)
		exp = 0
	}
	if exp < math.MinInt32 {
		return NullDatum, nil, keyCorrupt(t, "numeric exponent out of range")
	}
	d.Exponent = int32(exp)
	d.Negative = class == numKeyNeg
	return DNumeric(d), b, nil
}

// intervalFromSpan rebuilds an interval from its 128-bit comparison span,
// as whole days plus microseconds.
func intervalFromSpan(hi int64, lo uint64) (IntervalValue, bool) {
	// Convert to sign and magnitude.
	neg := hi < 0
	uh, ul := uint64(hi), lo
	if neg {
		ul = ^ul + 1
		uh = ^uh
		if ul == 0 {
			uh++
		}
	}
	if uh >= uint64(microsPerDay) {
		return IntervalValue{}, false
	}
	q, r := bits.Div64(uh, ul, uint64(microsPerDay))
	if q > 1<<40 {
		return IntervalValue{}, false // far beyond any interval's span
	}
	days, us := int64(q), int64(r)
	if neg {
		days, us = -days, -us
	}
	// Prefer whole days; spans too long for an int32 day count move into
	// months (30 days each) and, beyond that, back into microseconds.
	var months int64
	if days < math.MinInt32 || days > math.MaxInt32 {
		months = days / 30
		months = max(math.MinInt32, min(math.MaxInt32, months))
		days -= months * 30
	}
	if days < math.MinInt32 || days > math.MaxInt32 {
		extra := days - max(math.MinInt32, min(math.MaxInt32, days))
		days -= extra
		v, o1 := mulInt64(extra, microsPerDay)
		s, o2 := addInt64(us, v)
		if o1 || o2 {
			return IntervalValue{}, false
		}
		us = s
	}
	return IntervalValue{Months: int32(months), Days: int32(days), Micros: us}, true
}

// EncodeKeyRow appends the key of row's columns cols (with types and
// orders indexed like cols) to buf.
func EncodeKeyRow(buf []byte, row Row, cols []int, types []Type, order []SortOrder) []byte {
	for i, c := range cols {
		var o SortOrder
		if i < len(order) {
			o = order[i]
		}
		buf = AppendKey(buf, row[c], types[i], o.Desc, o.NullsFirst)
	}
	return buf
}

// DecodeKeyRow decodes len(types) key columns into dst (reused if large
// enough) and returns the row and the remaining bytes.
func DecodeKeyRow(b []byte, types []Type, order []SortOrder, dst Row) (Row, []byte, error) {
	dst = dst[:0]
	for i, t := range types {
		var o SortOrder
		if i < len(order) {
			o = order[i]
		}
		d, rest, err := DecodeKey(b, t, o.Desc, o.NullsFirst)
		if err != nil {
			return nil, nil, fmt.Errorf("key column %d: %w", i, err)
		}
		dst = append(dst, d)
		b = rest
	}
	return dst, b, nil
}
