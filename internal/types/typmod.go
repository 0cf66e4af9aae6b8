package types

import "github.com/runneldb/runnel/internal/sqlerr"

// Type modifiers as PostgreSQL's catalogs and wire protocol carry them
// (pg_attribute.atttypmod, RowDescription's type modifier) differ from
// Type.Mod: varlena types add VARHDRSZ (4), and numeric keeps its scale in
// 11 bits.

const varHdrSz = 4

// PGTypmod returns the typmod PostgreSQL would report for t, or -1.
func (t Type) PGTypmod() int32 {
	if t.Mod < 0 {
		return -1
	}
	if t.Kind == KindArray {
		return t.ElemType().PGTypmod()
	}
	switch t.Kind {
	case KindVarchar:
		if t.Text {
			return -1
		}
		return t.Mod + varHdrSz
	case KindNumeric:
		p, s, _ := NumericPrecisionScale(t.Mod)
		return (int32(p)<<16 | int32(s)&0x7ff) + varHdrSz
	case KindTime, KindTimestamp, KindTimestamptz, KindInterval:
		return t.Mod
	}
	return -1
}

// WithPGTypmod returns t with the modifier taken from a PostgreSQL typmod
// (the inverse of PGTypmod).
func (t Type) WithPGTypmod(pgmod int32) Type {
	t.Mod = -1
	if pgmod < 0 {
		return t
	}
	if t.Kind == KindArray {
		return ArrayOf(t.ElemType().WithPGTypmod(pgmod))
	}
	switch t.Kind {
	case KindVarchar:
		if !t.Text && pgmod >= varHdrSz {
			t.Mod = pgmod - varHdrSz
		}
	case KindNumeric:
		if pgmod >= varHdrSz {
			m := pgmod - varHdrSz
			s := (m & 0x7ff) ^ 0x400 - 0x400 // sign-extend 11 bits
			t.Mod = NumericTypmod(int(m>>16&0xffff), int(s))
		}
	case KindTime, KindTimestamp, KindTimestamptz:
		t.Mod = pgmod
	}
	return t
}

// MakeTypmod validates type-modifier arguments as written in SQL
// (varchar(n), numeric(p[,s]), time(p), timestamp(p)) and returns t with
// the modifier set. Errors mirror PostgreSQL's (22023 / 42601 style
// messages).
func (t Type) MakeTypmod(args []int64) (Type, error) {
	switch t.Kind {
	case KindVarchar:
		if t.Text {
			break
		}
		if len(args) != 1 {
			return t, sqlerr.New(sqlerr.SyntaxError, "invalid type modifier")
		}
		if args[0] < 1 {
			return t, sqlerr.New(sqlerr.InvalidParameterValue, "length for type varchar must be at least 1")
		}
		if args[0] > 10485760 {
			return t, sqlerr.New(sqlerr.InvalidParameterValue, "length for type varchar cannot exceed 10485760")
		}
		t.Mod = int32(args[0])
		return t, nil
	case KindNumeric:
		if len(args) < 1 || len(args) > 2 {
			return t, sqlerr.New(sqlerr.SyntaxError, "invalid NUMERIC type modifier")
		}
		p, s := args[0], int64(0)
		if len(args) == 2 {
			s = args[1]
		}
		if p < 1 || p > numericMaxPrecision {
			return t, sqlerr.Errorf(sqlerr.InvalidParameterValue, "NUMERIC precision %d must be between 1 and %d", p, numericMaxPrecision)
		}
		if s < -1000 || s > 1000 {
			return t, sqlerr.Errorf(sqlerr.InvalidParameterValue, "NUMERIC scale %d must be between %d and %d", s, -1000, 1000)
		}
		t.Mod = NumericTypmod(int(p), int(s))
		return t, nil
	case KindTime, KindTimestamp, KindTimestamptz:
		if len(args) != 1 {
			return t, sqlerr.New(sqlerr.SyntaxError, "invalid type modifier")
		}
		if args[0] < 0 {
			return t, sqlerr.Errorf(sqlerr.InvalidParameterValue, "TIME(%d) precision must not be negative", args[0])
		}
		t.Mod = int32(min(args[0], 6)) // PostgreSQL warns and reduces to 6
		return t, nil
	}
	return t, sqlerr.Errorf(sqlerr.SyntaxError, "type modifier is not allowed for type %s", pgQuote(t.Name()))
}
