package batch

import (
	"encoding/binary"
	"math"

	"github.com/runneldb/runnel/internal/types"
)

// appendKey appends an injective encoding of d to b, such that two datums
// PostgreSQL's equality considers equal encode identically: numerics are
// reduced (1.0 and 1.00 are one key), floats fold -0 into 0 and every NaN
// into one NaN. Integers of different widths share a tag so that keys of
// mixed integer kinds still meet. NULL has its own tag; callers that need
// SQL semantics (NULL never equal) check for NULL themselves.
func appendKey(b []byte, d types.Datum) []byte {
	switch d.Kind() {
	case types.KindNull:
		return append(b, 0)
	case types.KindBool, types.KindInt16, types.KindInt32, types.KindInt64:
		b = append(b, 1)
		return binary.BigEndian.AppendUint64(b, uint64(d.Int()))
	case types.KindFloat32, types.KindFloat64:
		f := d.Float()
		switch {
		case math.IsNaN(f):
			f = math.NaN()
		case f == 0:
			f = 0
		}
		b = append(b, 2)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case types.KindNumeric:
		var r = *d.Decimal()
		r.Reduce(&r)
		s := r.String()
		b = append(b, 3)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	case types.KindInterval:
		iv := d.Interval()
		// PostgreSQL's interval equality compares the 30-day-month
		// normalised span, so '1 month' = '30 days'.
		total := (int64(iv.Months)*30+int64(iv.Days))*86400e6 + iv.Micros
		b = append(b, 4)
		return binary.BigEndian.AppendUint64(b, uint64(total))
	case types.KindVarchar, types.KindUnknown, types.KindBytea, types.KindJsonb, types.KindUUID:
		s := d.Str()
		b = append(b, 5, byte(d.Kind()))
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	case types.KindArray:
		// Element by element, so that equal arrays (1.0 and 1.00
		// elements) meet; NULL elements are equal, as array_eq has them.
		elems := d.ArrayElems()
		b = append(b, 7)
		b = binary.AppendUvarint(b, uint64(len(elems)))
		for _, e := range elems {
			b = appendKey(b, e)
		}
		return b
	default:
		b = append(b, 6, byte(d.Kind()))
		return binary.BigEndian.AppendUint64(b, uint64(d.Int()))
	}
}

// rowKey encodes a tuple of datums.
func rowKey(buf []byte, ds []types.Datum) []byte {
	buf = buf[:0]
	for _, d := range ds {
		buf = appendKey(buf, d)
	}
	return buf
}

func hasNull(ds []types.Datum) bool {
	for _, d := range ds {
		if d.IsNull() {
			return true
		}
	}
	return false
}
