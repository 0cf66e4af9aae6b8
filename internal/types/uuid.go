package types

// uuid: 16 bytes, printed as PostgreSQL does (lower-case hex in groups of
// 8-4-4-4-12) and read as PostgreSQL's string_to_uuid does: 32 hex digits
// of either case, optionally in braces, with a hyphen allowed after any
// group of four digits.

// appendUUID appends the text form of a uuid's 16 bytes.
func appendUUID(buf []byte, b string) []byte {
	for i := 0; i < len(b); i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf = append(buf, '-')
		}
		buf = append(buf, hexDigits[b[i]>>4], hexDigits[b[i]&0xf])
	}
	return buf
}

// ParseUUID reads a uuid's text form (22P02 if it is not one).
func ParseUUID(s string) (Datum, error) {
	var out [16]byte
	p := s
	braces := len(p) > 0 && p[0] == '{'
	if braces {
		p = p[1:]
	}
	for i := 0; i < 16; i++ {
		if len(p) < 2 {
			return NullDatum, invalidSyntax("uuid", s)
		}
		hi, ok1 := unhex(p[0])
		lo, ok2 := unhex(p[1])
		if !ok1 || !ok2 {
			return NullDatum, invalidSyntax("uuid", s)
		}
		out[i] = hi<<4 | lo
		p = p[2:]
		if i%2 == 1 && i < 15 && len(p) > 0 && p[0] == '-' {
			p = p[1:]
		}
	}
	if braces {
		if len(p) == 0 || p[0] != '}' {
			return NullDatum, invalidSyntax("uuid", s)
		}
		p = p[1:]
	}
	if len(p) != 0 {
		return NullDatum, invalidSyntax("uuid", s)
	}
	return DUUID(out), nil
}
