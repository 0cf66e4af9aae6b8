package types

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/apd/v3"
)

// Value row encoding, used for state-table values. Compact, schema-driven
// (the reader supplies the column types), and strict enough that
// truncation, trailing garbage or a column-count mismatch is reported.
//
//	+---------+----------------+--------------------+---------------------+
//	| version | ncols (uvarint)| NULL bitmap        | payloads of the     |
//	| 0x01    |                | ceil(ncols/8) bytes| non-NULL columns    |
//	+---------+----------------+--------------------+---------------------+
//	bitmap bit i (byte i/8, bit i%8) set = column i is NULL
//
// Payloads:
//
//	bool                          1 byte
//	int16/32/64, date, time,
//	timestamp[tz]                 zigzag varint
//	float32 / float64             4 / 8 bytes little-endian IEEE bits
//	numeric                       flags byte (bits 0-1 form: 0 finite,
//	                              1 infinite, 2 NaN; bit 2 negative; bit 3
//	                              big coefficient), then for finite values a
//	                              zigzag varint exponent and the coefficient
//	                              as uvarint, or if big as uvarint length +
//	                              big-endian magnitude bytes
//	varchar/bytea/jsonb/unknown   uvarint length + bytes
//	interval                      zigzag varints months, days, micros
//
// A row with fewer encoded columns than the reader's types decodes with
// the missing trailing columns NULL (rows written before ADD COLUMN); more
// encoded columns than types is an error.

const valueRowVersion = 0x01

// ErrValueCorrupt is returned (wrapped) by DecodeValueRow for bytes that
// AppendValueRow cannot have produced for the given types.
var ErrValueCorrupt = errors.New("corrupt value row")

// AppendValueRow appends the encoding of row (whose columns have the
// given types) to buf.
func AppendValueRow(buf []byte, row Row, types []Type) []byte {
	n := len(row)
	buf = append(buf, valueRowVersion)
	buf = binary.AppendUvarint(buf, uint64(n))
	bm := len(buf)
	for i := 0; i < (n+7)/8; i++ {
		buf = append(buf, 0)
	}
	for i, d := range row {
		if d.k == KindNull {
			buf[bm+i/8] |= 1 << (i % 8)
			continue
		}
		if i < len(types) && d.k != types[i].Kind {
			d = coerceNumberKind(d, types[i].Kind)
		}
		buf = appendValueDatum(buf, d)
	}
	return buf
}

// coerceNumberKind converts a number datum to the number kind k, so that
// an int32 value in a bigint column (a literal, say) is encoded as the
// column's type and decodes again. Out-of-range values saturate rather
// than wrap; other mismatches are returned unchanged.
func coerceNumberKind(d Datum, k Kind) Datum {
	if !isNumberKind(d.k) || !isNumberKind(k) {
		return d
	}
	switch k {
	case KindInt16, KindInt32, KindInt64:
		var v int64
		switch {
		case d.k == KindNumeric || isFloatKind(d.k):
			f := ToFloat(d)
			v = int64(math.RoundToEven(max(-9.2e18, min(9.2e18, f))))
		default:
			v = d.i
		}
		switch k {
		case KindInt16:
			return DInt16(int16(max(math.MinInt16, min(math.MaxInt16, v))))
		case KindInt32:
			return DInt32(int32(max(math.MinInt32, min(math.MaxInt32, v))))
		}
		return DInt64(v)
	case KindFloat32:
		return DFloat32(float32(ToFloat(d)))
	case KindFloat64:
		return DFloat64(ToFloat(d))
	case KindNumeric:
		return DNumeric(ToDecimal(d))
	}
	return d
}

func appendValueDatum(buf []byte, d Datum) []byte {
	switch d.k {
	case KindBool:
		return append(buf, byte(d.i))
	case KindInt16, KindInt32, KindInt64, KindDate, KindTime, KindTimestamp, KindTimestamptz:
		return binary.AppendVarint(buf, d.i)
	case KindFloat32:
		return binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(d.Float())))
	case KindFloat64:
		return binary.LittleEndian.AppendUint64(buf, uint64(d.i))
	case KindNumeric:
		return appendValueNumeric(buf, d.d)
	case KindVarchar, KindUnknown, KindJsonb, KindBytea, KindUUID, KindArray:
		buf = binary.AppendUvarint(buf, uint64(len(d.s)))
		return append(buf, d.s...)
	case KindInterval:
		iv := d.Interval()
		buf = binary.AppendVarint(buf, int64(iv.Months))
		buf = binary.AppendVarint(buf, int64(iv.Days))
		return binary.AppendVarint(buf, iv.Micros)
	}
	return buf
}

func appendValueNumeric(buf []byte, d *apd.Decimal) []byte {
	var flags byte
	switch d.Form {
	case apd.Infinite:
		flags = 1
	case apd.NaN, apd.NaNSignaling:
		flags = 2
	}
	if d.Negative {
		flags |= 4
	}
	if flags&3 != 0 {
		return append(buf, flags)
	}
	if d.Coeff.IsUint64() {
		buf = append(buf, flags)
		buf = binary.AppendVarint(buf, int64(d.Exponent))
		return binary.AppendUvarint(buf, d.Coeff.Uint64())
	}
	flags |= 8
	buf = append(buf, flags)
	buf = binary.AppendVarint(buf, int64(d.Exponent))
	mag := d.Coeff.Bytes()
	buf = binary.AppendUvarint(buf, uint64(len(mag)))
	return append(buf, mag...)
}

// valueReader walks an encoded row; the first error sticks.
type valueReader struct {
	b   []byte
	off int
	err error
}

func (r *valueReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrValueCorrupt}, args...)...)
	}
}

func (r *valueReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad uvarint at offset %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *valueReader) varint() int64 {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad varint at offset %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *valueReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)-r.off) {
		r.fail("truncated: need %d bytes at offset %d, have %d", n, r.off, len(r.b)-r.off)
		return nil
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p
}

// DecodeValueRow decodes a row encoded by AppendValueRow into dst (reused
// when it has capacity) and returns it. Strings are copied out of b, so b
// may be reused afterwards.
func DecodeValueRow(b []byte, types []Type, dst Row) (Row, error) {
	return DecodeValueColumns(b, types, nil, dst)
}

// DecodeValueColumns is DecodeValueRow decoding only the columns i with
// want[i] (nil: all): the others are skipped without materializing their
// values (no string copy) and are NULL in the row. The whole encoding is
// still checked, as by DecodeValueRow. A scan that needs two columns of
// a wide row (PromQL reading a time and a field) pays for two.
func DecodeValueColumns(b []byte, types []Type, want []bool, dst Row) (Row, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrValueCorrupt)
	}
	if b[0] != valueRowVersion {
		return nil, fmt.Errorf("%w: unknown version %#x", ErrValueCorrupt, b[0])
	}
	r := valueReader{b: b, off: 1}
	n := r.uvarint()
	if r.err != nil {
		return nil, r.err
	}
	if n > uint64(len(types)) {
		return nil, fmt.Errorf("%w: %d columns encoded, schema has %d", ErrValueCorrupt, n, len(types))
	}
	bitmap := r.bytes((n + 7) / 8)
	if r.err != nil {
		return nil, r.err
	}
	if cap(dst) >= len(types) {
		dst = dst[:len(types)]
	} else {
		dst = make(Row, len(types))
	}
	for i := range types {
		if uint64(i) >= n || bitmap[i/8]&(1<<(i%8)) != 0 {
			dst[i] = NullDatum
			continue
		}
		if want != nil && (i >= len(want) || !want[i]) {
			dst[i] = NullDatum
			r.skip(types[i])
		} else {
			dst[i] = r.datum(types[i])
		}
		if r.err != nil {
			return nil, fmt.Errorf("column %d (%s): %w", i, types[i].Name(), r.err)
		}
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrValueCorrupt, len(b)-r.off)
	}
	return dst, nil
}

func (r *valueReader) datum(t Type) Datum {
	switch t.Kind {
	case KindBool:
		p := r.bytes(1)
		if r.err != nil {
			return NullDatum
		}
		if p[0] > 1 {
			r.fail("bool byte %#x", p[0])
		}
		return DBool(p[0] == 1)
	case KindInt16:
		v := r.varint()
		if v != int64(int16(v)) {
			r.fail("smallint %d out of range", v)
		}
		return DInt16(int16(v))
	case KindInt32:
		v := r.varint()
		if v != int64(int32(v)) {
			r.fail("integer %d out of range", v)
		}
		return DInt32(int32(v))
	case KindInt64, KindDate, KindTime, KindTimestamp, KindTimestamptz:
		return Datum{k: t.Kind, i: r.varint()}
	case KindFloat32:
		p := r.bytes(4)
		if r.err != nil {
			return NullDatum
		}
		return DFloat32(math.Float32frombits(binary.LittleEndian.Uint32(p)))
	case KindFloat64:
		p := r.bytes(8)
		if r.err != nil {
			return NullDatum
		}
		return DFloat64(math.Float64frombits(binary.LittleEndian.Uint64(p)))
	case KindNumeric:
		return r.numeric()
	case KindVarchar, KindUnknown, KindJsonb, KindBytea, KindUUID:
		n := r.uvarint()
		p := r.bytes(n)
		if r.err != nil {
			return NullDatum
		}
		return Datum{k: t.Kind, s: string(p)}
	case KindArray:
		n := r.uvarint()
		p := r.bytes(n)
		if r.err != nil {
			return NullDatum
		}
		if !t.ElemType().CanBeArrayElem() {
			r.fail("array of %s", t.ElemType().Name())
			return NullDatum
		}
		if err := checkArrayValue(string(p), t); err != nil {
			r.fail("array elements: %v", err)
			return NullDatum
		}
		return Datum{k: KindArray, i: int64(t.Elem), s: string(p)}
	case KindInterval:
		m := r.varint()
		d := r.varint()
		us := r.varint()
		if m != int64(int32(m)) || d != int64(int32(d)) {
			r.fail("interval months/days out of range")
		}
		return DInterval(IntervalValue{Months: int32(m), Days: int32(d), Micros: us})
	}
	r.fail("kind %d has no value encoding", t.Kind)
	return NullDatum
}

// skip moves past one payload of type t, checking it as datum would
// where that costs no allocation (kinds whose check needs the value are
// decoded and dropped).
func (r *valueReader) skip(t Type) {
	switch t.Kind {
	case KindBool:
		if p := r.bytes(1); r.err == nil && p[0] > 1 {
			r.fail("bool byte %#x", p[0])
		}
	case KindInt64, KindDate, KindTime, KindTimestamp, KindTimestamptz:
		r.varint()
	case KindFloat32:
		r.bytes(4)
	case KindFloat64:
		r.bytes(8)
	case KindVarchar, KindUnknown, KindJsonb, KindBytea, KindUUID:
		r.bytes(r.uvarint())
	default:
		r.datum(t)
	}
}

func (r *valueReader) numeric() Datum {
	p := r.bytes(1)
	if r.err != nil {
		return NullDatum
	}
	flags := p[0]
	if flags&^0x0F != 0 || flags&3 == 3 {
		r.fail("numeric flags %#x", flags)
		return NullDatum
	}
	d := new(apd.Decimal)
	d.Negative = flags&4 != 0
	switch flags & 3 {
	case 1:
		d.Form = apd.Infinite
		return DNumeric(d)
	case 2:
		d.Form = apd.NaN
		d.Negative = false
		return DNumeric(d)
	}
	e := r.varint()
	if e > maxNumericExponent || e < -maxNumericExponent {
		r.fail("numeric exponent %d out of range", e)
		return NullDatum
	}
	d.Exponent = int32(e)
	if flags&8 == 0 {
		d.Coeff.SetUint64(r.uvarint())
	} else {
		n := r.uvarint()
		mag := r.bytes(n)
		if r.err != nil {
			return NullDatum
		}
		d.Coeff.SetBytes(mag)
	}
	return DNumeric(d)
}

// AppendValue appends one datum in the value encoding, preceded by a flag
// byte (0 NULL, 1 value). Unlike the key encoding it is exact: numerics
// keep their scale, -0 stays -0, intervals keep months/days/micros. Use it
// for aggregate and executor state that must give back the same value.
func AppendValue(buf []byte, d Datum) []byte {
	if d.k == KindNull {
		return append(buf, 0)
	}
	buf = append(buf, 1)
	return appendValueDatum(buf, d)
}

// DecodeValue decodes one datum written by AppendValue for type t and
// returns it with the remaining bytes.
func DecodeValue(b []byte, t Type) (Datum, []byte, error) {
	if len(b) == 0 {
		return NullDatum, nil, fmt.Errorf("%w: empty value", ErrValueCorrupt)
	}
	switch b[0] {
	case 0:
		return NullDatum, b[1:], nil
	case 1:
	default:
		return NullDatum, nil, fmt.Errorf("%w: bad value flag %#x", ErrValueCorrupt, b[0])
	}
	r := valueReader{b: b, off: 1}
	d := r.datum(t)
	if r.err != nil {
		return NullDatum, nil, fmt.Errorf("%s: %w", t.Name(), r.err)
	}
	return d, b[r.off:], nil
}
