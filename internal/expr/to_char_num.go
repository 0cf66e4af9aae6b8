package expr

import (
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/runneldb/runnel/internal/types"
)

// Numeric to_char: the common subset of PostgreSQL's number templates —
// digit positions 9 (blank when not needed) and 0 (forced zero), decimal
// point . or D, group separator , or G, sign S (before the digits or at
// the end), trailing MI, FM (no padding, no trailing fractional zeros in 9
// positions) and literal text ("quoted" or plain). A value with more
// integer digits than positions prints # in every position; NaN and
// Infinity print their letters in the digit positions (toCharWord).

type numTok struct {
	kind byte // '9', '0', '.', ',', 'S', 'M' (MI), 'L' (literal)
	lit  string
}

func parseNumFormat(f string) (toks []numTok, fm bool) {
	for i := 0; i < len(f); {
		up := strings.ToUpper(f[i:])
		switch {
		case strings.HasPrefix(up, "FM"):
			fm = true
			i += 2
		case f[i] == '9' || f[i] == '0':
			toks = append(toks, numTok{kind: f[i]})
			i++
		case f[i] == '.' || up[0] == 'D':
			toks = append(toks, numTok{kind: '.'})
			i++
		case f[i] == ',' || up[0] == 'G':
			toks = append(toks, numTok{kind: ','})
			i++
		case up[0] == 'S':
			toks = append(toks, numTok{kind: 'S'})
			i++
		case strings.HasPrefix(up, "MI"):
			toks = append(toks, numTok{kind: 'M'})
			i += 2
		case f[i] == '"':
			j := strings.IndexByte(f[i+1:], '"')
			if j < 0 {
				toks = append(toks, numTok{kind: 'L', lit: f[i+1:]})
				i = len(f)
			} else {
				toks = append(toks, numTok{kind: 'L', lit: f[i+1 : i+1+j]})
				i += j + 2
			}
		default:
			toks = append(toks, numTok{kind: 'L', lit: f[i : i+1]})
			i++
		}
	}
	return toks, fm
}

// toCharNumber formats the decimal digits of |v| (intDigits without
// leading zeros, "0" for zero; fracDigits already rounded to the number
// of fraction positions) with the template.
func toCharNumber(intDigits, fracDigits string, neg bool, f string) string {
	toks, fm := parseNumFormat(f)
	intPos, fracPos, seenPoint := 0, 0, false
	hasS, hasMI := false, false
	for _, t := range toks {
		switch t.kind {
		case '9', '0':
			if seenPoint {
				fracPos++
			} else {
				intPos++
			}
		case '.':
			seenPoint = true
		case 'S':
			hasS = true
		case 'M':
			hasMI = true
		}
	}
	overflow := len(intDigits) > intPos
	// An integer part of zero occupies the last integer position but is
	// printed only when a 0 position forces it, when there is no fraction,
	// or (FM) when the whole fraction is trimmed away — zero digits in 9
	// positions only: 0.5 -> " .50", FM -> ".5", 0 -> "0.", but 0 with
	// FM9D00 -> ".00" (a 0 fraction position keeps the fraction).
	zeroInt := intDigits == "0"
	fracZeroPos := false
	seen := false
	for _, t := range toks {
		if t.kind == '.' {
			seen = true
		} else if seen && t.kind == '0' {
			fracZeroPos = true
		}
	}
	showZero := fracPos == 0 || (fm && !fracZeroPos && strings.Trim(fracDigits, "0") == "")
	signChar := func() byte {
		if neg {
			return '-'
		}
		if hasS {
			return '+'
		}
		return ' '
	}
	// Build the body with one cell per template token.
	var cells []string
	firstDigitCell := -1
	lastForcedZero := intPos // index of the first '0' int position
	k := 0
	for _, t := range toks {
		if (t.kind == '9' || t.kind == '0') && k < intPos {
			if t.kind == '0' && k < lastForcedZero {
				lastForcedZero = k
			}
			k++
		}
	}
	ip, fp, printed := 0, 0, false
	for _, t := range toks {
		switch t.kind {
		case '9', '0':
			var c string
			if overflow {
				c = "#"
			} else if ip < intPos {
				d := ip - (intPos - len(intDigits))
				switch {
				case d >= 0 && !(zeroInt && !showZero && ip < lastForcedZero):
					c = intDigits[d : d+1]
				case ip >= lastForcedZero:
					c = "0"
				default:
					c = " "
				}
				ip++
			} else {
				c = string(fracDigits[fp])
				fp++
			}
			if c != " " && !printed {
				printed = true
				firstDigitCell = len(cells)
			}
			cells = append(cells, c)
		case '.':
			if !printed {
				firstDigitCell = len(cells)
				printed = true
			}
			if fm && fracPos == 0 && !overflow {
				cells = append(cells, "")
			} else if fracPos == 0 && !overflow {
				// PostgreSQL meets the end of the digit string here and
				// copies its NUL terminator: the output stops at the
				// point (to_char(-5, '999.MI') = '  5')
				cells = append(cells, "\x00")
			} else {
				cells = append(cells, ".")
			}
		case ',':
			if printed {
				cells = append(cells, ",")
			} else {
				cells = append(cells, " ")
			}
		case 'S', 'M':
			cells = append(cells, "") // filled below
		case 'L':
			cells = append(cells, t.lit)
		}
	}
	// Place the sign.
	anchored := false
	for i, t := range toks {
		switch t.kind {
		case 'M':
			if neg {
				cells[i] = "-"
			} else if !fm {
				cells[i] = " "
			}
		case 'S':
			if i < firstDigitCell || firstDigitCell < 0 {
				anchored = true // leading S: sign goes right before the digits
				cells[i] = " "
			} else {
				cells[i] = string(signChar())
			}
		}
	}
	if !hasS && !hasMI {
		// the sign slot PostgreSQL reserves in front of the number
		at := len(cells)
		for i, t := range toks {
			if t.kind == '9' || t.kind == '0' || t.kind == '.' {
				at = i
				break
			}
		}
		cells = append(cells[:at], append([]string{" "}, cells[at:]...)...)
		if firstDigitCell >= at {
			firstDigitCell++
		}
	}
	if !hasMI && (anchored || !hasS) && (neg || hasS) {
		sc := string(signChar())
		if firstDigitCell < 0 {
			firstDigitCell = len(cells)
		}
		if firstDigitCell > 0 && cells[firstDigitCell-1] == " " {
			cells[firstDigitCell-1] = sc
		} else {
			cells = append(cells[:firstDigitCell], append([]string{sc}, cells[firstDigitCell:]...)...)
		}
	}
	out := strings.Join(cells, "")
	if cut := strings.IndexByte(out, 0); cut >= 0 {
		out = out[:cut]
	}
	if fm {
		// drop padding blanks and trailing zeros in 9 fraction positions
		out = strings.TrimLeft(out, " ")
		if fracPos > 0 && !overflow {
			zeros := 0
			for i := len(toks) - 1; i >= 0; i-- {
				t := toks[i]
				if t.kind == '0' {
					break
				}
				if t.kind == '9' {
					if fracDigits[fracPos-1-zeros] != '0' {
						break
					}
					zeros++
					if zeros == fracPos {
						break
					}
				}
			}
			if zeros > 0 {
				idx := strings.LastIndexByte(out, '.')
				if idx >= 0 {
					tail := out[idx+1:]
					digitsEnd := idx + 1 + fracPos
					if digitsEnd <= len(out) {
						out = out[:digitsEnd-zeros] + out[digitsEnd:]
					}
					_ = tail
				}
			}
		}
	}
	return out
}

func fracPositions(f string) int {
	toks, _ := parseNumFormat(f)
	n, seen := 0, false
	for _, t := range toks {
		if t.kind == '.' {
			seen = true
		} else if seen && (t.kind == '9' || t.kind == '0') {
			n++
		}
	}
	return n
}

func splitDigits(s string) (intDigits, frac string, neg bool) {
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	intDigits, frac, _ = strings.Cut(s, ".")
	intDigits = strings.TrimLeft(intDigits, "0")
	if intDigits == "" {
		intDigits = "0"
	}
	return intDigits, frac, neg
}

func toCharDecimal(d *apd.Decimal, f string) types.Datum {
	fp := fracPositions(f)
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return types.DVarchar(toCharWord("NaN", false, f))
	case apd.Infinite:
		return types.DVarchar(toCharWord("Infinity", d.Negative, f))
	}
	r := roundDec(d, int32(fp), false)
	s := r.Text('f')
	i, fr, neg := splitDigits(s)
	for len(fr) < fp {
		fr += "0"
	}
	if i == "0" && strings.Trim(fr, "0") == "" {
		neg = false
	}
	return types.DVarchar(toCharNumber(i, fr, neg, f))
}

// toCharWord formats NaN or Infinity the way PostgreSQL does: the text
// of numeric_out ("NaN", "Infinity") stands in for the digit string. With
// fewer integer positions than letters it is an overflow (# in every
// position). Otherwise the letters fill the integer positions after the
// padding, exactly as digits would; the first digit or decimal-point
// position met once the letters are used up ends the output there
// (PostgreSQL copies the string's terminating NUL into its result), so a
// decimal point, the fraction and anything after them are dropped:
// to_char('NaN'::numeric, '9,999.99') = '   NaN', '999S' = 'NaN+',
// '0009' = ' 0NaN'.
func toCharWord(word string, neg bool, f string) string {
	toks, fm := parseNumFormat(f)
	pre, positions, zeroStart, seenPoint := 0, 0, -1, false
	hasS, hasMI, preAtS, sAfterPoint := false, false, -1, false
	for _, t := range toks {
		switch t.kind {
		case '9', '0':
			positions++
			if !seenPoint {
				if t.kind == '0' && zeroStart < 0 {
					zeroStart = pre
				}
				pre++
			}
		case '.':
			positions++
			seenPoint = true
		case 'S':
			if !hasS {
				hasS, preAtS, sAfterPoint = true, pre, seenPoint
			}
		case 'M':
			hasMI = true
		}
	}
	if pre < len(word) {
		return toCharNumber(strings.Repeat("9", len(f)+1), strings.Repeat("0", fracPositions(f)), neg, f)
	}
	sign := byte('+')
	if neg {
		sign = '-'
	}
	// A sign written by S goes before the first letter unless S follows
	// all the integer positions (or the decimal point); then it follows
	// the last digit position, which a template with a point never
	// reaches.
	signAfter := hasS && (sAfterPoint || preAtS == pre)
	signWrote := hasMI || (!neg && fm && !hasS)
	spaces := pre - len(word)
	var b strings.Builder
	used, cur, in := 0, 0, false
	for _, t := range toks {
		switch t.kind {
		case '9', '0', '.':
			if !signWrote && (cur >= spaces || zeroStart == cur) {
				switch {
				case hasS && !signAfter:
					b.WriteByte(sign)
				case hasS:
					// written after the last integer position
				case neg:
					b.WriteByte('-')
				case !fm:
					b.WriteByte(' ')
				}
				if !hasS || !signAfter {
					signWrote = true
				}
			}
			switch {
			case cur < spaces && (zeroStart < 0 || zeroStart > cur):
				if !fm {
					b.WriteByte(' ')
				}
			case cur < spaces:
				b.WriteByte('0')
				in = true
			case used < len(word):
				b.WriteByte(word[used])
				used++
				in = true
			default:
				return b.String()
			}
			if signAfter && cur+1 == positions {
				b.WriteByte(sign)
			}
			cur++
		case ',':
			if in {
				b.WriteByte(',')
			} else if !fm {
				b.WriteByte(' ')
			}
		case 'M':
			if neg {
				b.WriteByte('-')
			} else if !fm {
				b.WriteByte(' ')
			}
		case 'L':
			b.WriteString(t.lit)
		}
	}
	return b.String()
}

func init() {
	X := types.Text
	regFunc("to_char", &overload{args: []types.Type{types.Numeric, X}, ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		return toCharDecimal(a.Decimal(), b.Str()), nil
	}})
	for _, t := range []types.Type{types.Int32, types.Int64} {
		regFunc("to_char", &overload{args: []types.Type{t, X}, ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
			return toCharDecimal(apd.New(a.Int(), 0), b.Str()), nil
		}})
	}
	regFunc("to_char", &overload{args: []types.Type{types.Float64, X}, ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		v := a.Float()
		if math.IsNaN(v) {
			return types.DVarchar(toCharWord("NaN", false, b.Str())), nil
		}
		if math.IsInf(v, 0) {
			return types.DVarchar(toCharWord("Infinity", v < 0, b.Str())), nil
		}
		fp := fracPositions(b.Str())
		s := strconv.FormatFloat(v, 'f', fp, 64)
		i, fr, neg := splitDigits(s)
		if i == "0" && strings.Trim(fr, "0") == "" {
			neg = false
		}
		return types.DVarchar(toCharNumber(i, fr, neg, b.Str())), nil
	}})
}
