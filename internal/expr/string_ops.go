package expr

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// LIKE matching follows PostgreSQL: % matches any run of characters, _ one
// character, and the escape character (default backslash) makes the next
// character literal; a pattern ending in the escape character is an error.

func likeMatch(s, p string, esc rune, fold bool) (bool, error) {
	if fold {
		s, p = strings.ToLower(s), strings.ToLower(p)
	}
	if esc != '\\' && esc != 0 {
		var err error
		if p, err = likeEscape(p, string(esc)); err != nil {
			return false, err
		}
	} else if esc == 0 {
		p, _ = likeEscape(p, "")
	}
	r, err := likeRec(s, p)
	return r == likeTrue, err
}

const (
	likeFalse = iota
	likeTrue
	likeAbort // no match possible for any suffix: stop scanning
)

// likeRec is PostgreSQL's MatchText (backslash is the escape). Like
// PostgreSQL it reports a trailing escape only when matching reaches it.
func likeRec(t, p string) (int, error) {
	if p == "%" {
		return likeTrue, nil
	}
	for len(t) > 0 && len(p) > 0 {
		switch p[0] {
		case '\\':
			p = p[1:]
			if len(p) == 0 {
				return likeFalse, sqlError(sqlerr.InvalidEscapeSequence, "LIKE pattern must not end with escape character")
			}
			pr, pn := utf8.DecodeRuneInString(p)
			tr, tn := utf8.DecodeRuneInString(t)
			if pr != tr {
				return likeFalse, nil
			}
			t, p = t[tn:], p[pn:]
			continue
		case '%':
			p = p[1:]
			for len(p) > 0 {
				if p[0] == '%' {
					p = p[1:]
				} else if p[0] == '_' {
					if len(t) == 0 {
						return likeAbort, nil
					}
					_, tn := utf8.DecodeRuneInString(t)
					t, p = t[tn:], p[1:]
				} else {
					break
				}
			}
			if len(p) == 0 {
				return likeTrue, nil
			}
			var first rune
			if p[0] == '\\' {
				if len(p) < 2 {
					return likeFalse, sqlError(sqlerr.InvalidEscapeSequence, "LIKE pattern must not end with escape character")
				}
				first, _ = utf8.DecodeRuneInString(p[1:])
			} else {
				first, _ = utf8.DecodeRuneInString(p)
			}
			for len(t) > 0 {
				tr, tn := utf8.DecodeRuneInString(t)
				if tr == first {
					m, err := likeRec(t, p)
					if err != nil || m != likeFalse {
						return m, err
					}
				}
				t = t[tn:]
			}
			return likeAbort, nil
		case '_':
			_, tn := utf8.DecodeRuneInString(t)
			t, p = t[tn:], p[1:]
			continue
		}
		pr, pn := utf8.DecodeRuneInString(p)
		tr, tn := utf8.DecodeRuneInString(t)
		if pr != tr {
			return likeFalse, nil
		}
		t, p = t[tn:], p[pn:]
	}
	if len(t) > 0 {
		return likeFalse, nil
	}
	for len(p) > 0 && p[0] == '%' {
		p = p[1:]
	}
	if len(p) == 0 {
		return likeTrue, nil
	}
	return likeAbort, nil
}

func likeOp(not, fold bool) func(a, b types.Datum) (types.Datum, error) {
	return func(a, b types.Datum) (types.Datum, error) {
		m, err := likeMatch(a.Str(), b.Str(), '\\', fold)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(m != not), nil
	}
}

// NewLike builds s [NOT] [I]LIKE pattern ESCAPE esc. esc may be nil
// (backslash); an empty escape string disables escaping.
func NewLike(s, pattern, esc Expr, caseInsensitive, not bool) (Expr, error) {
	if esc == nil {
		op := "LIKE"
		if caseInsensitive {
			op = "ILIKE"
		}
		if not {
			op = "NOT " + op
		}
		return NewBinaryOp(op, s, pattern)
	}
	args := make([]Expr, 3)
	for i, e := range []Expr{s, pattern, esc} {
		c, err := coerceTo(e, types.Text, CastImplicit)
		if err != nil {
			return nil, undefinedOperator("~~", []types.Type{s.Type(), pattern.Type()})
		}
		args[i] = c
	}
	o := &overload{args: []types.Type{types.Text, types.Text, types.Text}, ret: types.Bool,
		fn: func(_ *EvalContext, a []types.Datum) (types.Datum, error) {
			e := a[2].Str()
			var er rune
			switch utf8.RuneCountInString(e) {
			case 0:
			case 1:
				er, _ = utf8.DecodeRuneInString(e)
			default:
				return types.NullDatum, sqlError(codeInvalidEscapeCharacter, "invalid escape string")
			}
			m, err := likeMatch(a[0].Str(), a[1].Str(), er, caseInsensitive)
			if err != nil {
				return types.NullDatum, err
			}
			return types.DBool(m != not), nil
		}}
	name := "like_escape"
	return &FuncExpr{Name: name, Args: args, o: o, typ: types.Bool}, nil
}

// regexCache compiles PostgreSQL-style regular expressions (translated to
// Go's RE2 syntax, which covers the common ARE subset) once per pattern.
var regexCache sync.Map // key: flags + "\x00" + pattern

func compileRegex(pat string, flags string) (*regexp.Regexp, error) {
	key := flags + "\x00" + pat
	if r, ok := regexCache.Load(key); ok {
		return r.(*regexp.Regexp), nil
	}
	goPat := pat
	prefix := ""
	if strings.Contains(flags, "i") {
		prefix += "i"
	}
	if strings.Contains(flags, "n") || strings.Contains(flags, "m") {
		prefix += "m"
	} else {
		prefix += "s"
	}
	if prefix != "" {
		goPat = "(?" + prefix + ")" + goPat
	}
	re, err := regexp.Compile(goPat)
	if err != nil {
		return nil, sqlError(codeInvalidRegex, "invalid regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	regexCache.Store(key, re)
	return re, nil
}

func regexOp(not, fold bool) func(a, b types.Datum) (types.Datum, error) {
	flags := ""
	if fold {
		flags = "i"
	}
	return func(a, b types.Datum) (types.Datum, error) {
		re, err := compileRegex(b.Str(), flags)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(re.MatchString(a.Str()) != not), nil
	}
}

func textConcat(a, b types.Datum) (types.Datum, error) {
	return types.DVarchar(a.Str() + b.Str()), nil
}

func init() {
	tt := []types.Type{types.Text, types.Text}
	regBinop("||", &overload{args: tt, ret: types.Text, fn2: textConcat})
	regBinop("||", &overload{args: []types.Type{types.Bytea, types.Bytea}, ret: types.Bytea,
		fn2: func(a, b types.Datum) (types.Datum, error) { return types.DByteaString(a.Str() + b.Str()), nil }})
	regBinop("~~", &overload{args: tt, ret: types.Bool, fn2: likeOp(false, false)})
	regBinop("!~~", &overload{args: tt, ret: types.Bool, fn2: likeOp(true, false)})
	regBinop("~~*", &overload{args: tt, ret: types.Bool, fn2: likeOp(false, true)})
	regBinop("!~~*", &overload{args: tt, ret: types.Bool, fn2: likeOp(true, true)})
	regBinop("~", &overload{args: tt, ret: types.Bool, fn2: regexOp(false, false)})
	regBinop("!~", &overload{args: tt, ret: types.Bool, fn2: regexOp(true, false)})
	regBinop("~*", &overload{args: tt, ret: types.Bool, fn2: regexOp(false, true)})
	regBinop("!~*", &overload{args: tt, ret: types.Bool, fn2: regexOp(true, true)})
	regBinop("^@", &overload{args: tt, ret: types.Bool, fn2: func(a, b types.Datum) (types.Datum, error) {
		return types.DBool(strings.HasPrefix(a.Str(), b.Str())), nil
	}})
}

// likeEscape rewrites a LIKE pattern that uses esc as its escape character
// into one that uses backslash (PostgreSQL's like_escape, which the parser
// inserts for "x LIKE p ESCAPE e"). An empty esc disables escaping.
func likeEscape(p, esc string) (string, error) {
	er, err := escapeRune(esc, codeInvalidEscapeCharacter)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	afterEsc := false
	for _, r := range p {
		switch {
		case afterEsc:
			if r == '\\' {
				b.WriteString(`\\`)
			} else {
				b.WriteByte('\\')
				b.WriteRune(r)
			}
			afterEsc = false
		case er != 0 && r == er:
			afterEsc = true
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteRune(r)
		}
	}
	if afterEsc {
		b.WriteByte('\\') // reported by the matcher if it gets there
	}
	return b.String(), nil
}

// similarToRegex translates a SQL SIMILAR TO pattern into an anchored
// regular expression exactly as PostgreSQL's similar_to_escape does (its
// text is visible through that function): % is .*, _ is ., ( opens a
// non-capturing group, . ^ $ and backslash are quoted, an escaped
// character is quoted, and up to two escape-double-quote separators split
// the pattern into ^(?:a){1,1}?(b){1,1}(?:c)$ so that substring(... similar
// ...) returns the part between them.
func similarToRegex(p string, esc rune, hasEsc bool) (string, error) {
	var b strings.Builder
	b.WriteString("^(?:")
	inClass, classPos := false, 0
	afterEsc := false
	quotes := 0
	for _, r := range p {
		switch {
		case afterEsc:
			if r == '"' && !inClass {
				switch quotes {
				case 0:
					b.WriteString("){1,1}?(")
				case 1:
					b.WriteString("){1,1}(?:")
				default:
					return "", sqlError("2200C", "SQL regular expression may not contain more than two escape-double-quote separators")
				}
				quotes++
			} else {
				b.WriteByte('\\')
				b.WriteRune(r)
			}
			afterEsc = false
		case hasEsc && r == esc:
			afterEsc = true
		case inClass:
			if r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
			classPos++
			if r == ']' && classPos > 1 {
				inClass = false
			} else if r == '^' && classPos == 1 {
				classPos = 0 // [^] : the ] after ^ is still a member
			}
		case r == '[':
			b.WriteRune(r)
			inClass, classPos = true, 0
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteByte('.')
		case r == '(':
			b.WriteString("(?:")
		case r == '\\' || r == '.' || r == '^' || r == '$':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(")$")
	return b.String(), nil
}

// similarEscape is similar_to_escape(pattern, escape): an empty escape
// disables escaping; more than one character is 22025, as PostgreSQL.
func similarEscape(pat, e string) (string, error) {
	er, err := escapeRune(e, sqlerr.InvalidEscapeSequence)
	if err != nil {
		return "", err
	}
	return similarToRegex(pat, er, e != "")
}

// escapeRune reads an ESCAPE string: empty (no escaping, 0) or one
// character; anything longer is an error with the caller's SQLSTATE
// (LIKE: 22019, SIMILAR TO: 22025).
func escapeRune(e, code string) (rune, error) {
	switch utf8.RuneCountInString(e) {
	case 0:
		return 0, nil
	case 1:
		r, _ := utf8.DecodeRuneInString(e)
		return r, nil
	}
	return 0, sqlError(code, "invalid escape string").(*sqlerr.Error).
		WithHint("Escape string must be empty or one character.")
}

func init() {
	X := types.Text
	regFunc("like_escape", &overload{args: []types.Type{X, X}, ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		s, err := likeEscape(a.Str(), b.Str())
		if err != nil {
			return types.NullDatum, err
		}
		return types.DVarchar(s), nil
	}})
	regFunc("similar_to_escape", &overload{args: []types.Type{X}, ret: X, fn1: func(a types.Datum) (types.Datum, error) {
		s, err := similarToRegex(a.Str(), '\\', true)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DVarchar(s), nil
	}})
	regFunc("similar_to_escape", &overload{args: []types.Type{X, X}, ret: X, fn2: func(a, b types.Datum) (types.Datum, error) {
		s, err := similarEscape(a.Str(), b.Str())
		if err != nil {
			return types.NullDatum, err
		}
		return types.DVarchar(s), nil
	}})
}
