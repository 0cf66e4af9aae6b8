package expr

import (
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/runneldb/runnel/internal/types"
)

// toNumber is to_number(text, format): it walks the format as
// PostgreSQL's NUM_processor does when reading: each 9 or 0 takes a digit
// if the input has one there, D or . takes the decimal point, G or ,
// skips a group separator, S/MI/PL/SG and PR read the sign, L skips a
// currency symbol, and any other format character skips one input
// character. Digits beyond the format's positions are not read
// (to_number('12345', '99') is 12). Input with no digit at all is 22P02.
func toNumber(s, f string) (types.Datum, error) {
	in := []rune(s)
	pos := 0
	var digits strings.Builder
	frac := -1 // digits after the decimal point, -1 before it
	neg, any := false, false
	up := strings.ToUpper(f)
	skipSpaces := func() {
		for pos < len(in) && in[pos] == ' ' {
			pos++
		}
	}
	readSign := func() {
		skipSpaces()
		if pos < len(in) && (in[pos] == '-' || in[pos] == '+' || in[pos] == '<' && strings.Contains(up, "PR")) {
			neg = in[pos] != '+'
			pos++
		}
	}
	for i := 0; i < len(f); {
		rest := up[i:]
		switch {
		case strings.HasPrefix(rest, "FM"):
			i += 2
		case rest[0] == '9' || rest[0] == '0':
			if !any && digits.Len() == 0 {
				readSign()
			}
			for pos < len(in) && in[pos] == ' ' {
				pos++
			}
			if pos < len(in) && in[pos] >= '0' && in[pos] <= '9' {
				digits.WriteRune(in[pos])
				any = true
				if frac >= 0 {
					frac++
				}
				pos++
			}
			i++
		case rest[0] == 'D' || rest[0] == '.':
			if pos < len(in) && in[pos] == '.' {
				pos++
				frac = 0
			}
			i++
		case rest[0] == 'G' || rest[0] == ',':
			if pos < len(in) && in[pos] == ',' {
				pos++
			}
			i++
		case strings.HasPrefix(rest, "PR"):
			if pos < len(in) && in[pos] == '>' {
				pos++
			}
			i += 2
		case strings.HasPrefix(rest, "MI"), strings.HasPrefix(rest, "PL"), strings.HasPrefix(rest, "SG"):
			readSign()
			i += 2
		case rest[0] == 'S':
			readSign()
			i++
		case rest[0] == 'L':
			if pos < len(in) && !(in[pos] >= '0' && in[pos] <= '9') {
				pos++
			}
			i++
		default:
			if pos < len(in) {
				pos++
			}
			i++
		}
	}
	if !any {
		return types.NullDatum, sqlError(codeInvalidTextRepresentaion, "invalid input syntax for type numeric: \" \"")
	}
	d := new(apd.Decimal)
	if _, _, err := d.SetString(digits.String()); err != nil {
		return types.NullDatum, sqlError(codeInvalidTextRepresentaion, "invalid input syntax for type numeric: \"%s\"", s)
	}
	if frac > 0 {
		d.Exponent = -int32(frac)
	}
	d.Negative = neg && !d.IsZero()
	return types.DNumeric(d), nil
}

func init() {
	regFunc("to_number", &overload{args: []types.Type{types.Text, types.Text}, ret: types.Numeric, fn2: func(a, b types.Datum) (types.Datum, error) {
		return toNumber(a.Str(), b.Str())
	}})
}
