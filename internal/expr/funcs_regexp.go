package expr

import (
	"strings"
	"unicode/utf8"

	"github.com/runneldb/runnel/internal/types"
)

// regexFlags checks a regexp_* flags argument as PostgreSQL's
// parse_re_flags does and returns the flags compileRegex understands.
func regexFlags(fn, flags string, allowGlobal bool) (string, error) {
	out := ""
	for _, r := range flags {
		switch r {
		case 'g':
			if !allowGlobal {
				return "", sqlError(codeInvalidParameterValue, "%s() does not support the \"global\" option", fn)
			}
		case 'i', 'n', 'm':
			out += string(r)
		case 'c':
			out = strings.ReplaceAll(out, "i", "")
		case 'b', 'e', 'p', 'q', 's', 't', 'w', 'x':
			// Syntax variants Runnel's RE2 translation does not model;
			// accepted as PostgreSQL accepts them.
		default:
			return "", sqlError(codeInvalidParameterValue, "invalid regular expression option: \"%c\"", r)
		}
	}
	return out, nil
}

// charToByte returns the byte offset of the 0-based character position
// pos in s (len(s) past the end).
func charToByte(s string, pos int64) int {
	i := int64(0)
	for b := range s {
		if i == pos {
			return b
		}
		i++
	}
	return len(s)
}

// regexpInstr is regexp_instr(s, pattern, start, n, endoption, flags,
// subexpr): the 1-based character position where the n-th match (or its
// subexpr-th parenthesised part) starts, or the position after it ends
// when endoption is 1; 0 when there is no such match.
func regexpInstr(a []types.Datum) (types.Datum, error) {
	s, pat := a[0].Str(), a[1].Str()
	start, n, endopt, flags, sub := int64(1), int64(1), int64(0), "", int64(0)
	if len(a) > 2 {
		if start = a[2].Int(); start <= 0 {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid value for parameter \"%s\": %d", "start", start)
		}
	}
	if len(a) > 3 {
		if n = a[3].Int(); n <= 0 {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid value for parameter \"%s\": %d", "n", n)
		}
	}
	if len(a) > 4 {
		if endopt = a[4].Int(); endopt != 0 && endopt != 1 {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid value for parameter \"%s\": %d", "endoption", endopt)
		}
	}
	if len(a) > 5 {
		flags = a[5].Str()
	}
	if len(a) > 6 {
		if sub = a[6].Int(); sub < 0 {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid value for parameter \"%s\": %d", "subexpr", sub)
		}
	}
	fl, err := regexFlags("regexp_instr", flags, false)
	if err != nil {
		return types.NullDatum, err
	}
	re, err := compileRegex(pat, fl)
	if err != nil {
		return types.NullDatum, err
	}
	off := charToByte(s, start-1)
	if sub > int64(re.NumSubexp()) {
		return types.DInt32(0), nil
	}
	ms := re.FindAllStringSubmatchIndex(s[off:], int(n))
	if int64(len(ms)) < n {
		return types.DInt32(0), nil
	}
	m := ms[n-1]
	from, to := m[2*sub], m[2*sub+1]
	if from < 0 {
		return types.DInt32(0), nil
	}
	pos := from
	if endopt == 1 {
		pos = to
	}
	return types.DInt32(int32(utf8.RuneCountInString(s[:off+pos]) + 1)), nil
}

// regexSubstring is substring(s from pattern): the part of s the first
// match's first parenthesised subexpression covers (NULL if it took no
// part), or the whole match when the pattern has none; NULL without a
// match.
func regexSubstring(s, pat string) (types.Datum, error) {
	re, err := compileRegex(pat, "")
	if err != nil {
		return types.NullDatum, err
	}
	m := re.FindStringSubmatchIndex(s)
	if m == nil {
		return types.NullDatum, nil
	}
	if re.NumSubexp() > 0 {
		if m[2] < 0 {
			return types.NullDatum, nil
		}
		return txt(s[m[2]:m[3]]), nil
	}
	return txt(s[m[0]:m[1]]), nil
}

func countNulls(a []types.Datum, nulls bool) (types.Datum, error) {
	if len(a) == 0 {
		return types.NullDatum, sqlError("42883", "function num_nulls() does not exist")
	}
	n := 0
	for _, v := range a {
		if v.IsNull() == nulls {
			n++
		}
	}
	return types.DInt32(int32(n)), nil
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	X, I := types.Text, types.Int32
	for i, sig := range [][]types.Type{T(X, X), T(X, X, I), T(X, X, I, I), T(X, X, I, I, I), T(X, X, I, I, I, X), T(X, X, I, I, I, X, I)} {
		_ = i
		regFunc("regexp_instr", &overload{args: sig, ret: I, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) { return regexpInstr(a) }})
	}
	// substring(s from pattern) and substring(s similar pattern escape e),
	// which PostgreSQL's grammar turns into substring(s, pattern) and
	// substring(s, pattern, e).
	regFunc("substring", &overload{args: T(X, X), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		return regexSubstring(a.Str(), b.Str())
	}})
	regFunc("substring", &overload{args: T(X, X, X), ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		re, err := similarEscape(a[1].Str(), a[2].Str())
		if err != nil {
			return types.NullDatum, err
		}
		return regexSubstring(a[0].Str(), re)
	}})
	regFunc("num_nulls", &overload{anyArgs: true, ret: I, nonStrict: true, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return countNulls(a, true)
	}})
	regFunc("num_nonnulls", &overload{anyArgs: true, ret: I, nonStrict: true, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return countNulls(a, false)
	}})
}
