package types

import (
	"fmt"
	"strings"
)

// Kind is the physical representation of a value.
type Kind uint8

const (
	KindNull Kind = iota // the type of an untyped NULL literal
	KindBool
	KindInt16
	KindInt32
	KindInt64
	KindFloat32
	KindFloat64
	KindNumeric
	KindVarchar // text and varchar share a representation
	KindBytea
	KindDate
	KindTime
	KindTimestamp
	KindTimestamptz
	KindInterval
	KindJsonb
	KindUnknown // an untyped string literal before coercion
	// KindVoid is the result type of functions that return nothing
	// (pg_sleep). Its only value is NULL, and no column stores it.
	KindVoid
	// KindUUID is uuid: 16 bytes, ordered as bytes (as PostgreSQL does).
	KindUUID
	// KindArray is a one-dimensional array with lower bound 1 (see
	// array.go); Type.Elem names the element kind.
	KindArray
	numKinds
)

// PostgreSQL type OIDs (pg_type.oid) for the supported types.
const (
	OIDBool        uint32 = 16
	OIDBytea       uint32 = 17
	OIDInt8        uint32 = 20
	OIDInt2        uint32 = 21
	OIDInt4        uint32 = 23
	OIDText        uint32 = 25
	OIDOid         uint32 = 26
	OIDFloat4      uint32 = 700
	OIDFloat8      uint32 = 701
	OIDUnknown     uint32 = 705
	OIDVarchar     uint32 = 1043
	OIDDate        uint32 = 1082
	OIDTime        uint32 = 1083
	OIDTimestamp   uint32 = 1114
	OIDTimestamptz uint32 = 1184
	OIDInterval    uint32 = 1186
	OIDNumeric     uint32 = 1700
	OIDJsonb       uint32 = 3802
	OIDVoid        uint32 = 2278
	OIDUUID        uint32 = 2950
	OIDOIDVector   uint32 = 30
	OIDInt2Vector  uint32 = 22
	OIDNameArray   uint32 = 1003
	OIDRecord      uint32 = 2249
)

// Type is a SQL type: a Kind plus a type modifier. The zero Type is the type
// of an untyped NULL.
type Type struct {
	Kind Kind
	// Text distinguishes text (true) from varchar (false) for KindVarchar;
	// they behave the same but report different OIDs and names.
	Text bool
	// Mod is the PostgreSQL typmod: -1 when absent. varchar(n): n; numeric(p,s):
	// p<<16 | s; time/timestamp(p): p.
	Mod int32
	// Elem is the element kind of an array (Kind == KindArray); Text and
	// Mod then describe the element, as PostgreSQL keeps an array column's
	// typmod as its element's (varchar(10)[]). Zero for other kinds.
	Elem Kind
}

// Common types, with no modifier.
var (
	Null        = Type{Kind: KindNull, Mod: -1}
	Bool        = Type{Kind: KindBool, Mod: -1}
	Int16       = Type{Kind: KindInt16, Mod: -1}
	Int32       = Type{Kind: KindInt32, Mod: -1}
	Int64       = Type{Kind: KindInt64, Mod: -1}
	Float32     = Type{Kind: KindFloat32, Mod: -1}
	Float64     = Type{Kind: KindFloat64, Mod: -1}
	Numeric     = Type{Kind: KindNumeric, Mod: -1}
	Varchar     = Type{Kind: KindVarchar, Mod: -1}
	Text        = Type{Kind: KindVarchar, Text: true, Mod: -1}
	Bytea       = Type{Kind: KindBytea, Mod: -1}
	Date        = Type{Kind: KindDate, Mod: -1}
	Time        = Type{Kind: KindTime, Mod: -1}
	Timestamp   = Type{Kind: KindTimestamp, Mod: -1}
	Timestamptz = Type{Kind: KindTimestamptz, Mod: -1}
	Interval    = Type{Kind: KindInterval, Mod: -1}
	Jsonb       = Type{Kind: KindJsonb, Mod: -1}
	Unknown     = Type{Kind: KindUnknown, Mod: -1}
	Void        = Type{Kind: KindVoid, Mod: -1}
	UUID        = Type{Kind: KindUUID, Mod: -1}
	// OIDVector is PostgreSQL's oidvector, the type of pg_proc.proargtypes;
	// only system catalogs have it. Runnel has no arrays: its values are
	// text in PostgreSQL's output form ("23 25"), and it behaves as text
	// except that unnest() at the top of a select list returns its
	// elements. Any coercion drops the marker modifier (the result is text).
	OIDVector = Type{Kind: KindVarchar, Text: true, Mod: modOIDVector}
	// Int2Vector is PostgreSQL's int2vector, the type of pg_index.indkey
	// (column numbers, "1 3"); like OIDVector, text with a marker.
	Int2Vector = Type{Kind: KindVarchar, Text: true, Mod: modInt2Vector}
	// NameArray is name[], the result of current_schemas(bool), in
	// PostgreSQL's array output form ("{pg_catalog,public}").
	NameArray = Type{Kind: KindVarchar, Text: true, Mod: modNameArray}
	// ExpandArrayRecord is the record (x, n) that
	// information_schema._pg_expandarray returns, in PostgreSQL's record
	// output form ("(3,1)"); (r).x and (r).n select its fields.
	ExpandArrayRecord = Type{Kind: KindVarchar, Text: true, Mod: modExpandArrayRecord}
)

// modOIDVector and modInt2Vector mark OIDVector and Int2Vector; no text
// type has a modifier otherwise.
const (
	modOIDVector         = -30
	modInt2Vector        = -22
	modNameArray         = -1003
	modExpandArrayRecord = -2249
)

// CatalogArray describes the array-like types of the system catalogs
// (Runnel has no arrays): their element type and lower bound (0 for the
// vectors, 1 for name[]). ok is false for any other type.
func (t Type) CatalogArray() (elem Type, lower int, ok bool) {
	switch t {
	case OIDVector:
		return Int32, 0, true
	case Int2Vector:
		return Int16, 0, true
	case NameArray:
		return Text, 1, true
	}
	return Type{}, 0, false
}

// CatalogArrayElems splits a catalog array's text (see CatalogArray) into
// its elements.
func CatalogArrayElems(s string, t Type) []string {
	if t != NameArray {
		return strings.Fields(s)
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	if s == "" {
		return nil
	}
	var out []string
	for _, e := range strings.Split(s, ",") {
		if len(e) >= 2 && e[0] == '"' {
			e = strings.ReplaceAll(e[1:len(e)-1], `\"`, `"`)
		}
		out = append(out, e)
	}
	return out
}

// OID returns the PostgreSQL type OID.
func (t Type) OID() uint32 {
	switch t.Kind {
	case KindBool:
		return OIDBool
	case KindInt16:
		return OIDInt2
	case KindInt32:
		return OIDInt4
	case KindInt64:
		return OIDInt8
	case KindFloat32:
		return OIDFloat4
	case KindFloat64:
		return OIDFloat8
	case KindNumeric:
		return OIDNumeric
	case KindVarchar:
		if t == OIDVector {
			return OIDOIDVector
		}
		if t == Int2Vector {
			return OIDInt2Vector
		}
		if t == NameArray {
			return OIDNameArray
		}
		if t == ExpandArrayRecord {
			return OIDRecord
		}
		if t.Text {
			return OIDText
		}
		return OIDVarchar
	case KindBytea:
		return OIDBytea
	case KindDate:
		return OIDDate
	case KindTime:
		return OIDTime
	case KindTimestamp:
		return OIDTimestamp
	case KindTimestamptz:
		return OIDTimestamptz
	case KindInterval:
		return OIDInterval
	case KindJsonb:
		return OIDJsonb
	case KindUnknown:
		return OIDUnknown
	case KindVoid:
		return OIDVoid
	case KindUUID:
		return OIDUUID
	case KindArray:
		return t.ElemType().ArrayOID()
	}
	// An untyped NULL is reported as text, as PostgreSQL does for SELECT NULL.
	return OIDText
}

// FromOID returns the Type for a PostgreSQL type OID.
func FromOID(oid uint32) (Type, bool) {
	switch oid {
	case OIDBool:
		return Bool, true
	case OIDInt2:
		return Int16, true
	case OIDInt4, OIDOid:
		return Int32, true
	case OIDInt8:
		return Int64, true
	case OIDFloat4:
		return Float32, true
	case OIDFloat8:
		return Float64, true
	case OIDNumeric:
		return Numeric, true
	case OIDVarchar:
		return Varchar, true
	case OIDText:
		return Text, true
	case OIDOIDVector:
		return OIDVector, true
	case OIDInt2Vector:
		return Int2Vector, true
	case OIDBytea:
		return Bytea, true
	case OIDDate:
		return Date, true
	case OIDTime:
		return Time, true
	case OIDTimestamp:
		return Timestamp, true
	case OIDTimestamptz:
		return Timestamptz, true
	case OIDInterval:
		return Interval, true
	case OIDJsonb:
		return Jsonb, true
	case OIDUnknown:
		return Unknown, true
	case OIDUUID:
		return UUID, true
	}
	if e, ok := arrayElemByOID[oid]; ok {
		return ArrayOf(e), true
	}
	return Type{}, false
}

// Name is the type's name as PostgreSQL's format_type prints it
// ("integer", "character varying(10)", "numeric(10,2)").
func (t Type) Name() string {
	switch t.Kind {
	case KindNull:
		return "unknown"
	case KindBool:
		return "boolean"
	case KindInt16:
		return "smallint"
	case KindInt32:
		return "integer"
	case KindInt64:
		return "bigint"
	case KindFloat32:
		return "real"
	case KindFloat64:
		return "double precision"
	case KindNumeric:
		if p, s, ok := NumericPrecisionScale(t.Mod); ok {
			return fmt.Sprintf("numeric(%d,%d)", p, s)
		}
		return "numeric"
	case KindVarchar:
		if t == OIDVector {
			return "oidvector"
		}
		if t == Int2Vector {
			return "int2vector"
		}
		if t == NameArray {
			return "name[]"
		}
		if t == ExpandArrayRecord {
			return "record"
		}
		if t.Text {
			return "text"
		}
		if t.Mod >= 0 {
			return fmt.Sprintf("character varying(%d)", t.Mod)
		}
		return "character varying"
	case KindBytea:
		return "bytea"
	case KindDate:
		return "date"
	case KindTime:
		if t.Mod >= 0 {
			return fmt.Sprintf("time(%d) without time zone", t.Mod)
		}
		return "time without time zone"
	case KindTimestamp:
		if t.Mod >= 0 {
			return fmt.Sprintf("timestamp(%d) without time zone", t.Mod)
		}
		return "timestamp without time zone"
	case KindTimestamptz:
		if t.Mod >= 0 {
			return fmt.Sprintf("timestamp(%d) with time zone", t.Mod)
		}
		return "timestamp with time zone"
	case KindInterval:
		return "interval"
	case KindJsonb:
		return "jsonb"
	case KindUnknown:
		return "unknown"
	case KindVoid:
		return "void"
	case KindUUID:
		return "uuid"
	case KindArray:
		return t.ElemType().Name() + "[]"
	}
	return fmt.Sprintf("kind(%d)", t.Kind)
}

func (t Type) String() string { return t.Name() }

// Equal reports whether two types are the same, modifiers included.
func (t Type) Equal(o Type) bool { return t == o }

// IsNumeric reports whether the type is one of the number types.
func (t Type) IsNumeric() bool {
	switch t.Kind {
	case KindInt16, KindInt32, KindInt64, KindFloat32, KindFloat64, KindNumeric:
		return true
	}
	return false
}

// IsInteger reports whether the type is smallint, integer or bigint.
func (t Type) IsInteger() bool {
	return t.Kind == KindInt16 || t.Kind == KindInt32 || t.Kind == KindInt64
}

// TypLen is pg_type.typlen: the fixed width in bytes, or -1 for varlena.
func (t Type) TypLen() int16 {
	switch t.Kind {
	case KindBool:
		return 1
	case KindInt16:
		return 2
	case KindInt32, KindFloat32, KindDate, KindVoid:
		return 4
	case KindInt64, KindFloat64, KindTime, KindTimestamp, KindTimestamptz:
		return 8
	case KindInterval, KindUUID:
		return 16
	case KindUnknown:
		return -2
	}
	return -1
}
