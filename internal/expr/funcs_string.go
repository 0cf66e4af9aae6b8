package expr

import (
	"crypto/md5"
	"encoding/hex"
	"github.com/runneldb/runnel/internal/sql/ident"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func txt(s string) types.Datum { return types.DVarchar(s) }

func s1(fn func(s string) types.Datum) func(a types.Datum) (types.Datum, error) {
	return func(a types.Datum) (types.Datum, error) { return fn(a.Str()), nil }
}

// runeSlice returns s[from:to) in characters (0-based, clamped).
func runeSlice(s string, from, to int64) string {
	if from < 0 {
		from = 0
	}
	if to <= from {
		return ""
	}
	i, start, end := int64(0), -1, len(s)
	for pos := range s {
		if i == from {
			start = pos
		}
		if i == to {
			end = pos
			break
		}
		i++
	}
	if start < 0 {
		return ""
	}
	return s[start:end]
}

// substring(s from start for count) with PostgreSQL's rules: positions are
// 1-based, start may be <= 0 (the window still counts from there).
func substring(s string, start int64, count int64, hasCount bool) (string, error) {
	if !hasCount {
		return runeSlice(s, start-1, int64(len(s))+1), nil
	}
	if count < 0 {
		return "", sqlError("22011", "negative substring length not allowed")
	}
	end, ok := add64(start, count)
	if !ok {
		end = int64(len(s)) + 1
	}
	return runeSlice(s, start-1, end-1), nil
}

func strpos(s, sub string) int64 {
	i := strings.Index(s, sub)
	if i < 0 {
		return 0
	}
	return int64(utf8.RuneCountInString(s[:i])) + 1
}

func trimChars(s, chars string, left, right bool) string {
	set := func(r rune) bool { return strings.ContainsRune(chars, r) }
	if left {
		s = strings.TrimLeftFunc(s, set)
	}
	if right {
		s = strings.TrimRightFunc(s, set)
	}
	return s
}

func pad(s string, n int64, fill string, left bool) (string, error) {
	if n <= 0 {
		return "", nil
	}
	if n > maxStringChars {
		return "", sqlError(sqlerr.ProgramLimitExceeded, "requested length too large")
	}
	l := int64(utf8.RuneCountInString(s))
	if l >= n || fill == "" {
		return runeSlice(s, 0, n), nil
	}
	fr := []rune(fill)
	var b strings.Builder
	need := n - l
	padding := make([]rune, 0, need)
	for i := int64(0); i < need; i++ {
		padding = append(padding, fr[i%int64(len(fr))])
	}
	if left {
		b.WriteString(string(padding))
		b.WriteString(s)
	} else {
		b.WriteString(s)
		b.WriteString(string(padding))
	}
	return b.String(), nil
}

// maxStringChars bounds results built by lpad/rpad/repeat (PostgreSQL's
// 1 GB value limit, in characters of up to 4 bytes).
const maxStringChars = 1 << 28

func initcap(s string) string {
	var b strings.Builder
	inWord := false
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if inWord {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToUpper(r))
			}
			inWord = true
		} else {
			b.WriteRune(r)
			inWord = false
		}
	}
	return b.String()
}

func quoteIdent(s string) string { return ident.Quote(s) }

func quoteLiteral(s string) string {
	if strings.Contains(s, `\`) {
		return `E'` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `''`) + `'`
	}
	return `'` + strings.ReplaceAll(s, `'`, `''`) + `'`
}

// formatFunc implements format() for %s, %I, %L and %% with optional
// argument positions (%2$s); width and flags are not supported.
func formatFunc(args []types.Datum) (types.Datum, error) {
	if args[0].IsNull() {
		return types.NullDatum, nil
	}
	f := args[0].Str()
	rest := args[1:]
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(f) {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "unterminated format() type specifier").(*sqlerr.Error).WithHint("For a single \"%%\" use \"%%%%\".")
		}
		if f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		// optional n$
		j := i
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		argIdx := next
		if j < len(f) && f[j] == '$' && j > i {
			n, _ := strconv.Atoi(f[i:j])
			if n == 0 {
				return types.NullDatum, sqlError(codeInvalidParameterValue, "format specifies argument 0, but arguments are numbered from 1")
			}
			argIdx = n - 1
			i = j + 1
		}
		if i >= len(f) {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "unterminated format() type specifier")
		}
		if argIdx >= len(rest) {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "too few arguments for format()")
		}
		v := rest[argIdx]
		next = argIdx + 1
		switch f[i] {
		case 's':
			if !v.IsNull() {
				b.WriteString(v.Str())
			}
		case 'I':
			if v.IsNull() {
				return types.NullDatum, sqlError(sqlerr.NullValueNotAllowed, "null values cannot be formatted as an SQL identifier")
			}
			b.WriteString(quoteIdent(v.Str()))
		case 'L':
			if v.IsNull() {
				b.WriteString("NULL")
			} else {
				b.WriteString(quoteLiteral(v.Str()))
			}
		default:
			return types.NullDatum, sqlError(codeInvalidParameterValue, "unrecognized format() type specifier \"%c\"", f[i]).(*sqlerr.Error).WithHint("For a single \"%%\" use \"%%%%\".")
		}
	}
	return txt(b.String()), nil
}

// pgReplacement converts a PostgreSQL regexp_replace replacement (\1..\9,
// \& for the whole match, \\ for a backslash) into Go's template syntax.
func pgReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '$':
			b.WriteString("$$")
		case c == '\\' && i+1 < len(r):
			n := r[i+1]
			switch {
			case n >= '1' && n <= '9':
				b.WriteString("${" + string(n) + "}")
				i++
			case n == '&':
				b.WriteString("${0}")
				i++
			case n == '\\':
				b.WriteByte('\\')
				i++
			default:
				b.WriteByte('\\')
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func regexpReplace(s, pat, repl, flags string) (types.Datum, error) {
	for _, f := range flags {
		if !strings.ContainsRune("gimnsx", f) {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "invalid regular expression option: \"%c\"", f)
		}
	}
	re, err := compileRegex(pat, strings.ReplaceAll(flags, "g", ""))
	if err != nil {
		return types.NullDatum, err
	}
	tmpl := pgReplacement(repl)
	if strings.Contains(flags, "g") {
		return txt(re.ReplaceAllString(s, tmpl)), nil
	}
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil {
		return txt(s), nil
	}
	var dst []byte
	dst = re.ExpandString(dst, tmpl, s, loc)
	return txt(s[:loc[0]] + string(dst) + s[loc[1]:]), nil
}

func init() {
	T := func(ts ...types.Type) []types.Type { return ts }
	X, I, I8, B := types.Text, types.Int32, types.Int64, types.Bool
	runeLen := func(a types.Datum) (types.Datum, error) {
		return types.DInt32(int32(utf8.RuneCountInString(a.Str()))), nil
	}
	for _, n := range []string{"length", "char_length", "character_length"} {
		regFunc(n, &overload{args: T(X), ret: I, fn1: runeLen})
	}
	regFunc("length", &overload{args: T(types.Bytea), ret: I, fn1: func(a types.Datum) (types.Datum, error) { return types.DInt32(int32(len(a.Str()))), nil }})
	regFunc("octet_length", &overload{args: T(X), ret: I, fn1: func(a types.Datum) (types.Datum, error) { return types.DInt32(int32(len(a.Str()))), nil }})
	regFunc("octet_length", &overload{args: T(types.Bytea), ret: I, fn1: func(a types.Datum) (types.Datum, error) { return types.DInt32(int32(len(a.Str()))), nil }})
	regFunc("bit_length", &overload{args: T(X), ret: I, fn1: func(a types.Datum) (types.Datum, error) { return types.DInt32(int32(8 * len(a.Str()))), nil }})
	regFunc("lower", &overload{args: T(X), ret: X, fn1: s1(func(s string) types.Datum { return txt(strings.ToLower(s)) })})
	regFunc("upper", &overload{args: T(X), ret: X, fn1: s1(func(s string) types.Datum { return txt(strings.ToUpper(s)) })})
	regFunc("initcap", &overload{args: T(X), ret: X, fn1: s1(func(s string) types.Datum { return txt(initcap(s)) })})
	regFunc("reverse", &overload{args: T(X), ret: X, fn1: s1(func(s string) types.Datum {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return txt(string(r))
	})})
	regFunc("md5", &overload{args: T(X), ret: X, fn1: s1(func(s string) types.Datum {
		h := md5.Sum([]byte(s))
		return txt(hex.EncodeToString(h[:]))
	})})
	regFunc("md5", &overload{args: T(types.Bytea), ret: X, fn1: s1(func(s string) types.Datum {
		h := md5.Sum([]byte(s))
		return txt(hex.EncodeToString(h[:]))
	})})
	regFunc("ascii", &overload{args: T(X), ret: I, fn1: s1(func(s string) types.Datum {
		if s == "" {
			return types.DInt32(0)
		}
		r, _ := utf8.DecodeRuneInString(s)
		return types.DInt32(int32(r))
	})})
	regFunc("chr", &overload{args: T(I), ret: X, fn1: func(a types.Datum) (types.Datum, error) {
		v := a.Int()
		switch {
		case v == 0:
			return types.NullDatum, sqlError(sqlerr.ProgramLimitExceeded, "null character not permitted")
		case v < 0:
			return types.NullDatum, sqlError(codeInvalidParameterValue, "character number must be positive")
		case v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF):
			return types.NullDatum, sqlError(sqlerr.ProgramLimitExceeded, "requested character too large for encoding: %d", v)
		}
		return txt(string(rune(v))), nil
	}})
	regFunc("to_hex", &overload{args: T(I), ret: X, fn1: func(a types.Datum) (types.Datum, error) {
		return txt(strconv.FormatUint(uint64(uint32(a.Int())), 16)), nil
	}})
	regFunc("to_hex", &overload{args: T(I8), ret: X, fn1: func(a types.Datum) (types.Datum, error) {
		return txt(strconv.FormatUint(uint64(a.Int()), 16)), nil
	}})
	for _, n := range []string{"substr", "substring"} {
		regFunc(n, &overload{args: T(X, I), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
			r, err := substring(a.Str(), b.Int(), 0, false)
			return txt(r), err
		}})
		regFunc(n, &overload{args: T(X, I, I), ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			r, err := substring(a[0].Str(), a[1].Int(), a[2].Int(), true)
			return txt(r), err
		}})
	}
	regFunc("strpos", &overload{args: T(X, X), ret: I, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DInt32(int32(strpos(a.Str(), b.Str()))), nil
	}})
	// position(sub IN s): PostgreSQL's grammar passes (s, sub), the
	// argument order of the position(text, text) function.
	regFunc("position", &overload{args: T(X, X), ret: I, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DInt32(int32(strpos(a.Str(), b.Str()))), nil
	}})
	regFunc("replace", &overload{args: T(X, X, X), ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[1].Str() == "" {
			return a[0], nil
		}
		return txt(strings.ReplaceAll(a[0].Str(), a[1].Str(), a[2].Str())), nil
	}})
	regFunc("translate", &overload{args: T(X, X, X), ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		from, to := []rune(a[1].Str()), []rune(a[2].Str())
		var b strings.Builder
		for _, r := range a[0].Str() {
			idx := -1
			for i, f := range from {
				if f == r {
					idx = i
					break
				}
			}
			switch {
			case idx < 0:
				b.WriteRune(r)
			case idx < len(to):
				b.WriteRune(to[idx])
			}
		}
		return txt(b.String()), nil
	}})
	for name, lr := range map[string][2]bool{"btrim": {true, true}, "ltrim": {true, false}, "rtrim": {false, true}} {
		l, r := lr[0], lr[1]
		regFunc(name, &overload{args: T(X), ret: X, fn1: s1(func(s string) types.Datum { return txt(trimChars(s, " ", l, r)) })})
		regFunc(name, &overload{args: T(X, X), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
			return txt(trimChars(a.Str(), b.Str(), l, r)), nil
		}})
	}
	for name, left := range map[string]bool{"lpad": true, "rpad": false} {
		left := left
		regFunc(name, &overload{args: T(X, I), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
			r, err := pad(a.Str(), b.Int(), " ", left)
			return txt(r), err
		}})
		regFunc(name, &overload{args: T(X, I, X), ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			r, err := pad(a[0].Str(), a[1].Int(), a[2].Str(), left)
			return txt(r), err
		}})
	}
	regFunc("left", &overload{args: T(X, I), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		n, s := b.Int(), a.Str()
		if n < 0 {
			return txt(runeSlice(s, 0, int64(utf8.RuneCountInString(s))+n)), nil
		}
		return txt(runeSlice(s, 0, n)), nil
	}})
	regFunc("right", &overload{args: T(X, I), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		n, s := b.Int(), a.Str()
		l := int64(utf8.RuneCountInString(s))
		if n < 0 {
			return txt(runeSlice(s, -n, l)), nil
		}
		return txt(runeSlice(s, l-n, l)), nil
	}})
	regFunc("repeat", &overload{args: T(X, I), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		n := b.Int()
		if n <= 0 {
			return txt(""), nil
		}
		if int64(len(a.Str()))*n > 1<<30 {
			return types.NullDatum, sqlError(sqlerr.ProgramLimitExceeded, "requested length too large")
		}
		return txt(strings.Repeat(a.Str(), int(n))), nil
	}})
	regFunc("split_part", &overload{args: T(X, X, I), ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		s, d, n := a[0].Str(), a[1].Str(), a[2].Int()
		if n == 0 {
			return types.NullDatum, sqlError(codeInvalidParameterValue, "field position must not be zero")
		}
		var parts []string
		if d == "" {
			parts = []string{s}
		} else {
			parts = strings.Split(s, d)
		}
		if s == "" {
			return txt(""), nil
		}
		if n < 0 {
			n = int64(len(parts)) + n + 1
			if n <= 0 {
				return txt(""), nil
			}
		}
		if n > int64(len(parts)) {
			return txt(""), nil
		}
		return txt(parts[n-1]), nil
	}})
	regFunc("starts_with", &overload{args: T(X, X), ret: B, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DBool(strings.HasPrefix(a.Str(), b.Str())), nil
	}})
	regFunc("quote_ident", &overload{args: T(X), ret: X, fn1: s1(func(s string) types.Datum { return txt(quoteIdent(s)) })})
	regFunc("quote_literal", &overload{args: T(X), ret: X, fn1: s1(func(s string) types.Datum { return txt(quoteLiteral(s)) })})
	regFunc("quote_nullable", &overload{args: T(X), ret: X, nonStrict: true, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return txt("NULL"), nil
		}
		return txt(quoteLiteral(a[0].Str())), nil
	}})
	regFunc("concat", &overload{anyArgs: true, ret: X, nonStrict: true, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if len(a) == 0 {
			return types.NullDatum, sqlError(sqlerr.UndefinedFunction, "function concat() does not exist")
		}
		var b strings.Builder
		for _, v := range a {
			if !v.IsNull() {
				b.WriteString(v.Str())
			}
		}
		return txt(b.String()), nil
	}})
	regFunc("concat_ws", &overload{anyArgs: true, ret: X, nonStrict: true, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if len(a) == 0 {
			return types.NullDatum, sqlError(sqlerr.UndefinedFunction, "function concat_ws() does not exist")
		}
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		var b strings.Builder
		first := true
		for _, v := range a[1:] {
			if v.IsNull() {
				continue
			}
			if !first {
				b.WriteString(a[0].Str())
			}
			first = false
			b.WriteString(v.Str())
		}
		return txt(b.String()), nil
	}})
	regFunc("format", &overload{anyArgs: true, ret: X, nonStrict: true, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		if len(a) == 0 {
			return types.NullDatum, undefinedFunction("format", nil)
		}
		return formatFunc(a)
	}})
	regFunc("regexp_replace", &overload{args: T(X, X, X), ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return regexpReplace(a[0].Str(), a[1].Str(), a[2].Str(), "")
	}})
	regFunc("regexp_replace", &overload{args: T(X, X, X, X), ret: X, fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return regexpReplace(a[0].Str(), a[1].Str(), a[2].Str(), a[3].Str())
	}})
	regFunc("regexp_match", &overload{args: T(X, X), ret: types.ArrayOf(types.Text), fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return regexpMatch(a[0].Str(), a[1].Str(), "")
	}})
	regFunc("regexp_match", &overload{args: T(X, X, X), ret: types.ArrayOf(types.Text), fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
		return regexpMatch(a[0].Str(), a[1].Str(), a[2].Str())
	}})
	regFunc("regexp_like", &overload{args: T(X, X), ret: B, fn2: regexOp(false, false)})
	regFunc("regexp_count", &overload{args: T(X, X), ret: I, fn2: func(a, b types.Datum) (types.Datum, error) {
		re, err := compileRegex(b.Str(), "")
		if err != nil {
			return types.NullDatum, err
		}
		return types.DInt32(int32(len(re.FindAllStringIndex(a.Str(), -1)))), nil
	}})
	regFunc("regexp_substr", &overload{args: T(X, X), ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		re, err := compileRegex(b.Str(), "")
		if err != nil {
			return types.NullDatum, err
		}
		loc := re.FindStringIndex(a.Str())
		if loc == nil {
			return types.NullDatum, nil
		}
		return txt(a.Str()[loc[0]:loc[1]]), nil
	}})
}

// regexpMatch is PostgreSQL's regexp_match: the first match's capture
// groups as a text[] (NULL for a group that did not take part), or the
// whole match when the pattern has none; NULL when nothing matches.
func regexpMatch(str, pat, flags string) (types.Datum, error) {
	if strings.Contains(flags, "g") {
		return types.NullDatum, sqlerr.Errorf(sqlerr.InvalidParameterValue, "regexp_match() does not support the \"global\" option").
			WithHint("Use the regexp_matches function instead.")
	}
	re, err := compileRegex(pat, flags)
	if err != nil {
		return types.NullDatum, err
	}
	loc := re.FindStringSubmatchIndex(str)
	if loc == nil {
		return types.NullDatum, nil
	}
	if len(loc) == 2 {
		return types.DArray(types.KindVarchar, []types.Datum{types.DVarchar(str[loc[0]:loc[1]])}), nil
	}
	elems := make([]types.Datum, 0, len(loc)/2-1)
	for i := 2; i < len(loc); i += 2 {
		if loc[i] < 0 {
			elems = append(elems, types.NullDatum)
			continue
		}
		elems = append(elems, types.DVarchar(str[loc[i]:loc[i+1]]))
	}
	return types.DArray(types.KindVarchar, elems), nil
}
