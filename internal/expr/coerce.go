package expr

import (
	"github.com/runneldb/runnel/internal/types"
)

// CastContext is where a conversion happens, as in pg_cast.castcontext.
// A cast allowed in a weaker context is allowed in every stronger one.
type CastContext uint8

const (
	// CastImplicit: inserted silently, e.g. int4 -> int8 when calling a function.
	CastImplicit CastContext = iota
	// CastAssignment: INSERT/UPDATE target columns, e.g. int8 -> int4.
	CastAssignment
	// CastExplicit: CAST(x AS t) and x::t.
	CastExplicit
)

func (c CastContext) String() string {
	switch c {
	case CastImplicit:
		return "implicit"
	case CastAssignment:
		return "assignment"
	}
	return "explicit"
}

// Type categories (pg_type.typcategory).
const (
	catBool     = 'B'
	catNumeric  = 'N'
	catString   = 'S'
	catDatetime = 'D'
	catTimespan = 'T'
	catUser     = 'U'
	catUnknown  = 'X'
	catArray    = 'A'
)

// typeCategory returns PostgreSQL's type category for t.
func typeCategory(t types.Type) byte {
	switch t.Kind {
	case types.KindBool:
		return catBool
	case types.KindInt16, types.KindInt32, types.KindInt64, types.KindFloat32, types.KindFloat64, types.KindNumeric:
		return catNumeric
	case types.KindVarchar:
		return catString
	case types.KindDate, types.KindTime, types.KindTimestamp, types.KindTimestamptz:
		return catDatetime
	case types.KindInterval:
		return catTimespan
	case types.KindNull, types.KindUnknown:
		return catUnknown
	case types.KindArray:
		return catArray
	}
	return catUser
}

// isPreferred reports pg_type.typispreferred.
func isPreferred(t types.Type) bool {
	switch t.Kind {
	case types.KindBool, types.KindFloat64, types.KindTimestamptz, types.KindInterval:
		return true
	case types.KindVarchar:
		return t.Text
	}
	return false
}

// isUnknown reports whether t is the type of an untyped literal (a quoted
// string or a bare NULL) whose type is decided by its context.
func isUnknown(t types.Type) bool {
	return t.Kind == types.KindUnknown || t.Kind == types.KindNull
}

// sameBase reports whether two types are the same type ignoring typmods
// (text and varchar are distinct types, as in PostgreSQL).
func sameBase(a, b types.Type) bool {
	return a.Kind == b.Kind && a.Elem == b.Elem && (a.Kind != types.KindVarchar && a.Elem != types.KindVarchar || a.Text == b.Text)
}

// baseType drops the type modifier.
func baseType(t types.Type) types.Type {
	t.Mod = -1
	return t
}

// castContextOf returns the weakest context in which from can be cast to
// to, and false if there is no cast at all. It mirrors pg_cast plus
// PostgreSQL's automatic I/O conversion casts (anything -> string types in
// assignment context, string -> anything explicitly).
func castContextOf(from, to types.Type) (CastContext, bool) {
	if isUnknown(from) {
		return CastImplicit, true
	}
	if from.Kind == types.KindArray && to.Kind == types.KindArray {
		// array_coerce: as the element cast allows.
		return castContextOf(from.ElemType(), to.ElemType())
	}
	if from.Kind == to.Kind {
		// text <-> varchar are binary coercible both ways; same-kind length
		// coercion is implicit.
		return CastImplicit, true
	}
	if to.Kind == types.KindVarchar {
		// I/O conversion to a string type.
		return CastAssignment, true
	}
	if from.Kind == types.KindVarchar {
		if to.Kind == types.KindNull || to.Kind == types.KindUnknown {
			return 0, false
		}
		return CastExplicit, true
	}
	c, ok := castTable[castPair{from.Kind, to.Kind}]
	return c, ok
}

type castPair struct{ f, t types.Kind }

var castTable = func() map[castPair]CastContext {
	const (
		I = CastImplicit
		A = CastAssignment
		E = CastExplicit
	)
	m := map[castPair]CastContext{}
	add := func(f, t types.Kind, c CastContext) { m[castPair{f, t}] = c }
	K := struct{ i2, i4, i8, f4, f8, num, b, date, time, ts, tz, iv, js types.Kind }{
		types.KindInt16, types.KindInt32, types.KindInt64, types.KindFloat32, types.KindFloat64,
		types.KindNumeric, types.KindBool, types.KindDate, types.KindTime, types.KindTimestamp,
		types.KindTimestamptz, types.KindInterval, types.KindJsonb,
	}
	add(K.i2, K.i4, I)
	add(K.i2, K.i8, I)
	add(K.i2, K.f4, I)
	add(K.i2, K.f8, I)
	add(K.i2, K.num, I)
	add(K.i4, K.i2, A)
	add(K.i4, K.i8, I)
	add(K.i4, K.f4, I)
	add(K.i4, K.f8, I)
	add(K.i4, K.num, I)
	add(K.i4, K.b, E)
	add(K.i8, K.i2, A)
	add(K.i8, K.i4, A)
	add(K.i8, K.f4, I)
	add(K.i8, K.f8, I)
	add(K.i8, K.num, I)
	add(K.f4, K.i2, A)
	add(K.f4, K.i4, A)
	add(K.f4, K.i8, A)
	add(K.f4, K.f8, I)
	add(K.f4, K.num, A)
	add(K.f8, K.i2, A)
	add(K.f8, K.i4, A)
	add(K.f8, K.i8, A)
	add(K.f8, K.f4, A)
	add(K.f8, K.num, A)
	add(K.num, K.i2, A)
	add(K.num, K.i4, A)
	add(K.num, K.i8, A)
	add(K.num, K.f4, I)
	add(K.num, K.f8, I)
	add(K.b, K.i4, E)
	add(K.date, K.ts, I)
	add(K.date, K.tz, I)
	add(K.ts, K.date, A)
	add(K.ts, K.time, A)
	add(K.ts, K.tz, I)
	add(K.tz, K.date, A)
	add(K.tz, K.time, A)
	add(K.tz, K.ts, A)
	add(K.time, K.iv, I)
	add(K.iv, K.time, A)
	for _, k := range []types.Kind{K.b, K.num, K.i2, K.i4, K.i8, K.f4, K.f8} {
		add(K.js, k, E)
	}
	return m
}()

// CanCoerce reports whether a value of type from may be converted to type
// to in context ctx.
func CanCoerce(from, to types.Type, ctx CastContext) bool {
	c, ok := castContextOf(from, to)
	return ok && c <= ctx
}
