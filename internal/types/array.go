package types

import (
	"encoding/binary"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Arrays. Runnel's arrays are PostgreSQL's one-dimensional arrays with
// lower bound 1: int[], text[], numeric(10,2)[], jsonb[] and so on. A
// multidimensional value ('{{1,2},{3,4}}', ARRAY[ARRAY[1]]) or a lower
// bound other than 1 ('[0:1]={1,2}') is refused with 0A000; the type names
// int[][] and int[3] mean int[], as in PostgreSQL (which does not enforce
// declared dimensions either).
//
// An array Datum keeps its elements encoded in its string field, so a
// Datum stays one small immutable struct (no slice field that every row
// would pay for) and copies stay free:
//
//	Datum{k: KindArray, i: element Kind, s: elements}
//	elements: uvarint count, then each element as AppendValue writes it
//	          (flag byte 0 NULL / 1 value, then the value payload)
//
// The element payloads are the value encoding (valuecodec.go), which is
// exact (numerics keep their scale), so an array keeps its elements as
// written. Equality, ordering and hashing go element by element with the
// element type's rules (array_eq / array_cmp): NULL elements are equal to
// each other and sort after every value, and a shorter array sorts before
// a longer one it is a prefix of.

// Array type OIDs (pg_type.typarray of each element type).
const (
	OIDBoolArray        uint32 = 1000
	OIDByteaArray       uint32 = 1001
	OIDInt2Array        uint32 = 1005
	OIDInt4Array        uint32 = 1007
	OIDTextArray        uint32 = 1009
	OIDVarcharArray     uint32 = 1015
	OIDInt8Array        uint32 = 1016
	OIDFloat4Array      uint32 = 1021
	OIDFloat8Array      uint32 = 1022
	OIDTimestampArray   uint32 = 1115
	OIDDateArray        uint32 = 1182
	OIDTimeArray        uint32 = 1183
	OIDTimestamptzArray uint32 = 1185
	OIDIntervalArray    uint32 = 1187
	OIDNumericArray     uint32 = 1231
	OIDUUIDArray        uint32 = 2951
	OIDJsonbArray       uint32 = 3807
)

var arrayElemByOID = map[uint32]Type{
	OIDBoolArray: Bool, OIDByteaArray: Bytea, OIDInt2Array: Int16, OIDInt4Array: Int32,
	OIDTextArray: Text, OIDVarcharArray: Varchar, OIDInt8Array: Int64, OIDFloat4Array: Float32,
	OIDFloat8Array: Float64, OIDTimestampArray: Timestamp, OIDDateArray: Date, OIDTimeArray: Time,
	OIDTimestamptzArray: Timestamptz, OIDIntervalArray: Interval, OIDNumericArray: Numeric,
	OIDUUIDArray: UUID, OIDJsonbArray: Jsonb,
}

// ArrayOID is the OID of the array type whose elements have type t
// (pg_type.typarray); 0 when t has no array type.
func (t Type) ArrayOID() uint32 {
	switch t.Kind {
	case KindBool:
		return OIDBoolArray
	case KindBytea:
		return OIDByteaArray
	case KindInt16:
		return OIDInt2Array
	case KindInt32:
		return OIDInt4Array
	case KindInt64:
		return OIDInt8Array
	case KindFloat32:
		return OIDFloat4Array
	case KindFloat64:
		return OIDFloat8Array
	case KindNumeric:
		return OIDNumericArray
	case KindVarchar:
		if t.Text {
			return OIDTextArray
		}
		return OIDVarcharArray
	case KindDate:
		return OIDDateArray
	case KindTime:
		return OIDTimeArray
	case KindTimestamp:
		return OIDTimestampArray
	case KindTimestamptz:
		return OIDTimestamptzArray
	case KindInterval:
		return OIDIntervalArray
	case KindUUID:
		return OIDUUIDArray
	case KindJsonb:
		return OIDJsonbArray
	}
	return 0
}

// CanBeArrayElem reports whether t may be an array's element type.
func (t Type) CanBeArrayElem() bool { return t.ArrayOID() != 0 && t.Elem == 0 }

// ArrayOf is the array type with elements of type elem (which must satisfy
// CanBeArrayElem). Catalog marker modifiers are dropped.
func ArrayOf(elem Type) Type {
	if elem.Kind == KindVarchar && elem.Mod < -1 {
		elem.Mod = -1
	}
	return Type{Kind: KindArray, Elem: elem.Kind, Text: elem.Text, Mod: elem.Mod}
}

// ElemType is the element type of an array type.
func (t Type) ElemType() Type { return Type{Kind: t.Elem, Text: t.Text, Mod: t.Mod} }

// IsArray reports whether t is an array type.
func (t Type) IsArray() bool { return t.Kind == KindArray }

// DArray builds an array of elements of kind elem. Number elements of
// another number kind are converted to elem (as a column's values are);
// every other non-NULL element must already have kind elem.
func DArray(elem Kind, elems []Datum) Datum {
	var buf []byte
	buf = binary.AppendUvarint(buf, uint64(len(elems)))
	for _, e := range elems {
		if e.k != KindNull && e.k != elem {
			e = coerceNumberKind(e, elem)
		}
		buf = AppendValue(buf, e)
	}
	return Datum{k: KindArray, i: int64(elem), s: string(buf)}
}

// ArrayElemKind is the element kind of an array datum.
func (d Datum) ArrayElemKind() Kind { return Kind(d.i) }

// ArrayElems decodes an array datum's elements. The encoding was made by
// DArray or checked by the value decoder, so it decodes; a corrupt one
// gives the elements read before the damage.
func (d Datum) ArrayElems() []Datum {
	elems, _ := decodeArrayElems(d.s, Type{Kind: Kind(d.i), Mod: -1})
	return elems
}

// ArrayLen is the number of elements of an array datum.
func (d Datum) ArrayLen() int {
	n, _ := binary.Uvarint([]byte(d.s[:min(len(d.s), binary.MaxVarintLen64)]))
	return int(n)
}

// decodeArrayElems decodes an array's element encoding; elements of an
// array whose element type is t.
func decodeArrayElems(s string, t Type) ([]Datum, error) {
	b := []byte(s)
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, ErrValueCorrupt
	}
	b = b[k:]
	out := make([]Datum, 0, n)
	for i := uint64(0); i < n; i++ {
		var e Datum
		var err error
		e, b, err = DecodeValue(b, t)
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	if len(b) != 0 {
		return out, ErrValueCorrupt
	}
	return out, nil
}

func compareArray(a, b Datum) int {
	ea, eb := a.ArrayElems(), b.ArrayElems()
	for i := 0; i < len(ea) && i < len(eb); i++ {
		if c := Compare(ea[i], eb[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(ea) < len(eb):
		return -1
	case len(ea) > len(eb):
		return 1
	}
	return 0
}

func arrayHash(d Datum) uint64 {
	h := uint64(hashStrSeed) + uint64(KindArray)
	for _, e := range d.ArrayElems() {
		h = combineHash(h, datumHash(e))
	}
	return h
}

// arrayElemType is the element type to format or encode d's elements
// with: t's element type when t is an array type, else d's element kind.
func arrayElemType(d Datum, t Type) Type {
	if t.Kind == KindArray {
		return t.ElemType()
	}
	return Type{Kind: Kind(d.i), Mod: -1}
}

// appendArrayText is array_out: {1,2,NULL}; an element is double-quoted
// (with " and \ backslash-escaped) when it is empty, is NULL in any case,
// or contains a brace, quote, comma, backslash or white space.
func appendArrayText(buf []byte, d Datum, t Type, opt *FormatOptions) []byte {
	et := arrayElemType(d, t)
	buf = append(buf, '{')
	var tmp []byte
	for i, e := range d.ArrayElems() {
		if i > 0 {
			buf = append(buf, ',')
		}
		if e.IsNull() {
			buf = append(buf, "NULL"...)
			continue
		}
		if e.k == KindBool {
			buf = AppendText(buf, e, et, opt)
			continue
		}
		tmp = AppendText(tmp[:0], e, et, opt)
		if !arrayElemNeedsQuotes(tmp) {
			buf = append(buf, tmp...)
			continue
		}
		buf = append(buf, '"')
		for _, c := range tmp {
			if c == '"' || c == '\\' {
				buf = append(buf, '\\')
			}
			buf = append(buf, c)
		}
		buf = append(buf, '"')
	}
	return append(buf, '}')
}

func arrayElemNeedsQuotes(s []byte) bool {
	if len(s) == 0 || strings.EqualFold(string(s), "NULL") {
		return true
	}
	for _, c := range s {
		switch c {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}

func malformedArray(s string) *sqlerr.Error {
	return sqlerr.Errorf(sqlerr.InvalidTextRepresentation, "malformed array literal: %s", pgQuote(s))
}

// parseArrayText is array_in for a one-dimensional array of et.
func parseArrayText(s string, t Type, opt *FormatOptions) (Datum, error) {
	et := t.ElemType()
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	skip()
	s = s[i:] // errors quote the literal from its first non-blank
	i = 0
	if i < len(s) && s[i] == '[' {
		return NullDatum, sqlerr.New(sqlerr.FeatureNotSupported, "array dimension decorations are not supported (arrays have lower bound 1)")
	}
	if i >= len(s) || s[i] != '{' {
		return NullDatum, malformedArray(s).WithDetail("Array value must start with \"{\" or dimension information.")
	}
	i++
	var elems []Datum
	skip()
	if i < len(s) && s[i] == '}' {
		i++
	} else {
		for {
			skip()
			if i >= len(s) {
				return NullDatum, malformedArray(s).WithDetail("Unexpected end of input.")
			}
			if s[i] == '{' {
				return NullDatum, sqlerr.New(sqlerr.FeatureNotSupported, "multidimensional arrays are not supported")
			}
			var sb strings.Builder
			quoted, sawQuote := false, false
			end := -1 // length of sb after the last escaped or quoted byte
			for ; i < len(s); i++ {
				c := s[i]
				if c == '\\' {
					if i+1 >= len(s) {
						return NullDatum, malformedArray(s).WithDetail("Unexpected end of input.")
					}
					i++
					sb.WriteByte(s[i])
					end = sb.Len()
					continue
				}
				if c == '"' {
					if !quoted && sb.Len() > 0 {
						return NullDatum, malformedArray(s).WithDetail("Unexpected array element.")
					}
					if quoted {
						end = sb.Len()
					}
					quoted = !quoted
					sawQuote = true
					continue
				}
				if quoted {
					sb.WriteByte(c)
					end = sb.Len()
					continue
				}
				if c == ',' || c == '}' {
					break
				}
				if c == '{' {
					return NullDatum, malformedArray(s).WithDetail("Unexpected \"{\" character.")
				}
				if sawQuote && !isSpace(c) {
					return NullDatum, malformedArray(s).WithDetail("Unexpected array element.")
				}
				sb.WriteByte(c)
			}
			if quoted || i >= len(s) {
				return NullDatum, malformedArray(s).WithDetail("Unexpected end of input.")
			}
			raw := sb.String()
			// Unquoted trailing white space is not part of the element.
			cut := len(raw)
			for cut > end && cut > 0 && isSpace(raw[cut-1]) {
				cut--
			}
			raw = raw[:cut]
			if !sawQuote && end < 0 && raw == "" {
				return NullDatum, malformedArray(s).WithDetail("Unexpected \"%c\" character.", s[i])
			}
			if !sawQuote && end < 0 && strings.EqualFold(raw, "NULL") {
				elems = append(elems, NullDatum)
			} else {
				e, err := ParseText(raw, et, opt)
				if err != nil {
					return NullDatum, err
				}
				elems = append(elems, e)
			}
			if len(elems) > MaxArrayElems {
				return NullDatum, ErrArrayTooLarge()
			}
			c := s[i]
			i++
			if c == '}' {
				break
			}
		}
	}
	skip()
	if i != len(s) {
		return NullDatum, malformedArray(s).WithDetail("Junk after closing right brace.")
	}
	return DArray(et.Kind, elems), nil
}

// MaxArrayElems bounds an array's length (PostgreSQL's MaxArraySize is
// about 134 million; Runnel keeps arrays in one value, so it stops far
// earlier, I9).
const MaxArrayElems = 1 << 20

// ErrArrayTooLarge is 54000 for an array longer than MaxArrayElems.
func ErrArrayTooLarge() *sqlerr.Error {
	return sqlerr.Errorf(sqlerr.ProgramLimitExceeded, "array size exceeds the maximum allowed (%d)", MaxArrayElems)
}

// appendArrayBinary is array_send: int32 ndim (0 when empty), int32 flags
// (1 when an element is NULL), uint32 element OID, per dimension int32
// length and int32 lower bound (1), then per element int32 length (-1 for
// NULL) and the element's binary form.
func appendArrayBinary(buf []byte, d Datum, t Type) []byte {
	et := arrayElemType(d, t)
	elems := d.ArrayElems()
	var ndim, flags uint32
	if len(elems) > 0 {
		ndim = 1
	}
	for _, e := range elems {
		if e.IsNull() {
			flags = 1
		}
	}
	buf = binary.BigEndian.AppendUint32(buf, ndim)
	buf = binary.BigEndian.AppendUint32(buf, flags)
	buf = binary.BigEndian.AppendUint32(buf, et.OID())
	if ndim == 0 {
		return buf
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(elems)))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	for _, e := range elems {
		if e.IsNull() {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		buf = AppendBinary(buf, e, et)
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	return buf
}

// parseArrayBinary is array_recv for a one-dimensional array of t's
// element type.
func parseArrayBinary(b []byte, t Type) (Datum, error) {
	et := t.ElemType()
	u32 := func() (uint32, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := binary.BigEndian.Uint32(b)
		b = b[4:]
		return v, true
	}
	short := func() (Datum, error) {
		return NullDatum, binaryError(t, "insufficient data left in message")
	}
	ndim, ok1 := u32()
	flags, ok2 := u32()
	oid, ok3 := u32()
	if !ok1 || !ok2 || !ok3 {
		return short()
	}
	if int32(ndim) < 0 || ndim > 6 {
		return NullDatum, binaryError(t, "invalid number of dimensions: %d", int32(ndim))
	}
	if flags > 1 {
		return NullDatum, binaryError(t, "invalid array flags")
	}
	if oid != et.OID() && !(et.Kind == KindVarchar && (oid == OIDText || oid == OIDVarchar)) {
		return NullDatum, sqlerr.Errorf(sqlerr.DatatypeMismatch, "binary data has array element type %d instead of expected %d", oid, et.OID())
	}
	if ndim == 0 {
		return DArray(et.Kind, nil), nil
	}
	if ndim > 1 {
		return NullDatum, sqlerr.New(sqlerr.FeatureNotSupported, "multidimensional arrays are not supported")
	}
	n, ok1 := u32()
	lb, ok2 := u32()
	if !ok1 || !ok2 {
		return short()
	}
	if int32(n) < 0 || n > MaxArrayElems {
		return NullDatum, ErrArrayTooLarge()
	}
	if lb != 1 {
		return NullDatum, sqlerr.New(sqlerr.FeatureNotSupported, "arrays with a lower bound other than 1 are not supported")
	}
	elems := make([]Datum, 0, min(n, 1024))
	for k := uint32(0); k < n; k++ {
		l, ok := u32()
		if !ok {
			return short()
		}
		if int32(l) == -1 {
			elems = append(elems, NullDatum)
			continue
		}
		if int32(l) < 0 || int(l) > len(b) {
			return short()
		}
		e, err := ParseBinary(b[:l], et)
		if err != nil {
			return NullDatum, err
		}
		b = b[l:]
		elems = append(elems, e)
	}
	if len(b) != 0 {
		return NullDatum, binaryError(t, "incorrect binary data format in array")
	}
	return DArray(et.Kind, elems), nil
}

// applyArrayTypmod applies an array type's element modifier to each element.
func applyArrayTypmod(d Datum, t Type, explicit bool) (Datum, error) {
	et := t.ElemType()
	elems := d.ArrayElems()
	for i, e := range elems {
		v, err := ApplyTypmod(e, et, explicit)
		if err != nil {
			return NullDatum, err
		}
		elems[i] = v
	}
	return DArray(et.Kind, elems), nil
}

// array key payload: each element as AppendKey writes it ascending with
// NULLs last (marker 0x01 or 0x02, never 0x00), then 0x00. A prefix sorts
// first and a NULL element after every value, as array_cmp orders.
func appendArrayKey(buf []byte, d Datum) []byte {
	et := Type{Kind: Kind(d.i), Mod: -1}
	for _, e := range d.ArrayElems() {
		buf = AppendKey(buf, e, et, false, false)
	}
	return append(buf, 0)
}

func decodeArrayKey(b []byte, t Type, desc bool) (Datum, []byte, error) {
	et := t.ElemType()
	p := b
	if desc {
		p = make([]byte, len(b))
		for i, c := range b {
			p[i] = ^c
		}
	}
	var elems []Datum
	rest := p
	for {
		if len(rest) == 0 {
			return NullDatum, nil, keyCorrupt(t, "unterminated array")
		}
		if rest[0] == 0 {
			rest = rest[1:]
			break
		}
		var e Datum
		var err error
		e, rest, err = DecodeKey(rest, et, false, false)
		if err != nil {
			return NullDatum, nil, err
		}
		elems = append(elems, e)
	}
	return DArray(et.Kind, elems), b[len(b)-len(rest):], nil
}

// checkArrayValue validates an array's element encoding read from state.
func checkArrayValue(s string, t Type) error {
	_, err := decodeArrayElems(s, t.ElemType())
	return err
}
