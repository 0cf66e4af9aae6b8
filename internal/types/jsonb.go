package types

import (
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// ParseJsonb parses JSON text and returns jsonb's canonical text, the form
// PostgreSQL's jsonb_out prints: object keys ordered by length and then
// bytewise, duplicate keys dropped keeping the last, numbers as numeric
// prints them (1e2 becomes 100, 1.50 stays 1.50), and ", " / ": " spacing.
// Errors are 22P02 invalid_text_representation with PostgreSQL's detail
// text (22P05 for \u0000).
func ParseJsonb(s string) (string, error) {
	p := jsonParser{s: s}
	if err := p.advance(); err != nil {
		return "", err
	}
	v, err := p.value(0)
	if err != nil {
		return "", err
	}
	if p.tok != tokEnd {
		return "", p.expected("end of input")
	}
	out := make([]byte, 0, len(s)+8)
	return string(appendJSON(out, v)), nil
}

// maxJSONDepth bounds nesting so that hostile input cannot exhaust the
// goroutine stack (PostgreSQL reports stack depth exceeded instead).
const maxJSONDepth = 4000

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonTrue
	jsonFalse
	jsonNumber // text holds the canonical numeric text
	jsonString // text holds the decoded string
	jsonArray
	jsonObject
)

type jsonValue struct {
	kind  jsonKind
	text  string
	elems []jsonValue // array elements, or alternating key (string), value
}

type jsonToken uint8

const (
	tokEnd   jsonToken = iota
	tokPunct           // one of { } [ ] , :
	tokString
	tokNumber
	tokTrue
	tokFalse
	tokNull
)

// jsonParser is a lexer plus recursive-descent parser shaped like
// PostgreSQL's (src/common/jsonapi.c), so that errors name the same token
// and expectation.
type jsonParser struct {
	s     string
	i     int
	tok   jsonToken
	start int    // start of the current token
	text  string // current token's source text
	str   string // decoded string for tokString
}

func jsonSyntax(detail string) *sqlerr.Error {
	return sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type json").WithDetail("%s", detail)
}

func jsonInvalidToken(tok string) *sqlerr.Error {
	return jsonSyntax("Token \"" + tok + "\" is invalid.")
}

// jsonAlnum is PostgreSQL's JSON_ALPHANUMERIC_CHAR: the characters that
// extend a bad token.
func jsonAlnum(c byte) bool { return isAlpha(c) || isDigit(c) || c == '_' || c >= 0x80 }

func (p *jsonParser) expected(what string) *sqlerr.Error {
	if p.tok == tokEnd {
		return jsonSyntax("The input string ended unexpectedly.")
	}
	return jsonSyntax("Expected " + what + ", but found \"" + p.text + "\".")
}

// advance lexes the next token.
func (p *jsonParser) advance() error {
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		p.i++
	}
	p.start = p.i
	if p.i >= len(p.s) {
		p.tok, p.text = tokEnd, ""
		return nil
	}
	c := p.s[p.i]
	switch {
	case c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':':
		p.i++
		p.tok = tokPunct
	case c == '"':
		str, err := p.lexString()
		if err != nil {
			return err
		}
		p.tok, p.str = tokString, str
	case c == '-' || isDigit(c):
		if err := p.lexNumber(); err != nil {
			return err
		}
		p.tok = tokNumber
	default:
		j := p.i
		for j < len(p.s) && jsonAlnum(p.s[j]) {
			j++
		}
		if j == p.i {
			j++ // a lone non-alphanumeric character
		}
		word := p.s[p.i:j]
		p.i = j
		switch word {
		case "true":
			p.tok = tokTrue
		case "false":
			p.tok = tokFalse
		case "null":
			p.tok = tokNull
		default:
			return jsonInvalidToken(word)
		}
	}
	p.text = p.s[p.start:p.i]
	return nil
}

// lexNumber follows json_lex_number: the JSON number grammar, and on any
// error (or letters glued to the number) the bad token runs to the end of
// the alphanumeric characters at the failure point.
func (p *jsonParser) lexNumber() error {
	j := p.i
	fail := func() error {
		for j < len(p.s) && jsonAlnum(p.s[j]) {
			j++
		}
		return jsonInvalidToken(p.s[p.start:j])
	}
	if p.s[j] == '-' {
		j++
	}
	switch {
	case j < len(p.s) && p.s[j] == '0':
		j++
	case j < len(p.s) && p.s[j] >= '1' && p.s[j] <= '9':
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
	default:
		return fail()
	}
	if j < len(p.s) && p.s[j] == '.' {
		j++
		if j >= len(p.s) || !isDigit(p.s[j]) {
			return fail()
		}
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
	}
	if j < len(p.s) && (p.s[j] == 'e' || p.s[j] == 'E') {
		j++
		if j < len(p.s) && (p.s[j] == '+' || p.s[j] == '-') {
			j++
		}
		if j >= len(p.s) || !isDigit(p.s[j]) {
			return fail()
		}
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
	}
	if j < len(p.s) && jsonAlnum(p.s[j]) {
		return fail()
	}
	p.i = j
	return nil
}

// lexString decodes a string token starting at the opening quote.
func (p *jsonParser) lexString() (string, error) {
	p.i++
	start := p.i
	// fast path: no escapes
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			out := p.s[start:p.i]
			p.i++
			return out, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", jsonControlChar(c)
		}
		p.i++
	}
	buf := []byte(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), nil
		case c < 0x20:
			return "", jsonControlChar(c)
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			break
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", jsonSyntax("\"\\u\" must be followed by four hexadecimal digits.")
			}
			if r == 0 {
				return "", sqlerr.New(sqlerr.UntranslatableCharacter, "unsupported Unicode escape sequence").
					WithDetail("\\u0000 cannot be converted to text.")
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xdc00 {
					return "", jsonSyntax("Unicode low surrogate must follow a high surrogate.")
				}
				if p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					p.i += 2
					r2, ok := p.hex4()
					if !ok {
						return "", jsonSyntax("\"\\u\" must be followed by four hexadecimal digits.")
					}
					if r2 >= 0xd800 && r2 < 0xdc00 {
						return "", jsonSyntax("Unicode high surrogate must not follow a high surrogate.")
					}
					if r2 < 0xdc00 || r2 > 0xdfff {
						return "", jsonSyntax("Unicode low surrogate must follow a high surrogate.")
					}
					r = utf16.DecodeRune(r, r2)
				} else {
					return "", jsonSyntax("Unicode low surrogate must follow a high surrogate.")
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			n := utf8Len(p.s[p.i-1:])
			return "", jsonSyntax("Escape sequence \"\\" + p.s[p.i-1:p.i-1+n] + "\" is invalid.")
		}
	}
	// unterminated: the bad token is everything from the quote on
	return "", jsonInvalidToken(p.s[p.start:])
}

func jsonControlChar(c byte) *sqlerr.Error {
	return jsonSyntax("Character with value 0x" + strconv.FormatUint(uint64(c)|0x100, 16)[1:] + " must be escaped.")
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for k := 0; k < 4; k++ {
		v, ok := unhex(p.s[p.i+k])
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	p.i += 4
	return r, true
}

func (p *jsonParser) isPunct(c byte) bool { return p.tok == tokPunct && p.text[0] == c }

// value parses the value starting at the current token and advances past it.
func (p *jsonParser) value(depth int) (jsonValue, error) {
	if depth > maxJSONDepth {
		return jsonValue{}, sqlerr.New(sqlerr.StatementTooComplex, "stack depth limit exceeded")
	}
	var v jsonValue
	switch p.tok {
	case tokString:
		v = jsonValue{kind: jsonString, text: p.str}
	case tokNumber:
		d, err := parseNumeric(p.text)
		if err != nil {
			return v, err
		}
		v = jsonValue{kind: jsonNumber, text: string(appendNumeric(nil, d))}
	case tokTrue:
		v = jsonValue{kind: jsonTrue}
	case tokFalse:
		v = jsonValue{kind: jsonFalse}
	case tokNull:
		v = jsonValue{kind: jsonNull}
	case tokPunct:
		switch p.text[0] {
		case '[':
			return p.array(depth)
		case '{':
			return p.object(depth)
		}
		return v, p.expected("JSON value")
	default:
		return v, p.expected("JSON value")
	}
	return v, p.advance()
}

func (p *jsonParser) array(depth int) (jsonValue, error) {
	v := jsonValue{kind: jsonArray}
	if err := p.advance(); err != nil {
		return v, err
	}
	if p.isPunct(']') {
		return v, p.advance()
	}
	for {
		e, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.elems = append(v.elems, e)
		switch {
		case p.isPunct(','):
			if err := p.advance(); err != nil {
				return v, err
			}
		case p.isPunct(']'):
			return v, p.advance()
		default:
			return v, p.expected("\",\" or \"]\"")
		}
	}
}

func (p *jsonParser) object(depth int) (jsonValue, error) {
	v := jsonValue{kind: jsonObject}
	if err := p.advance(); err != nil {
		return v, err
	}
	if p.isPunct('}') {
		return v, p.advance()
	}
	if p.tok != tokString {
		return v, p.expected("string or \"}\"")
	}
	for {
		key := p.str
		if err := p.advance(); err != nil {
			return v, err
		}
		if !p.isPunct(':') {
			return v, p.expected("\":\"")
		}
		if err := p.advance(); err != nil {
			return v, err
		}
		e, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.elems = append(v.elems, jsonValue{kind: jsonString, text: key}, e)
		switch {
		case p.isPunct(','):
			if err := p.advance(); err != nil {
				return v, err
			}
			if p.tok != tokString {
				return v, p.expected("string")
			}
		case p.isPunct('}'):
			canonicalizeObject(&v)
			return v, p.advance()
		default:
			return v, p.expected("\",\" or \"}\"")
		}
	}
}

type jsonPair struct {
	key string
	val jsonValue
	pos int
}

// canonicalizeObject sorts keys as jsonb does (shorter first, then
// bytewise) and keeps only the last value of a duplicated key.
func canonicalizeObject(v *jsonValue) {
	n := len(v.elems) / 2
	pairs := make([]jsonPair, n)
	for i := 0; i < n; i++ {
		pairs[i] = jsonPair{v.elems[2*i].text, v.elems[2*i+1], i}
	}
	sort.SliceStable(pairs, func(a, b int) bool {
		ka, kb := pairs[a].key, pairs[b].key
		if len(ka) != len(kb) {
			return len(ka) < len(kb)
		}
		return ka < kb
	})
	out := v.elems[:0]
	for i := 0; i < n; i++ {
		if i+1 < n && pairs[i+1].key == pairs[i].key {
			continue // a later duplicate wins (stable sort keeps input order)
		}
		out = append(out, jsonValue{kind: jsonString, text: pairs[i].key}, pairs[i].val)
	}
	v.elems = out
}

func appendJSON(buf []byte, v jsonValue) []byte {
	switch v.kind {
	case jsonNull:
		return append(buf, "null"...)
	case jsonTrue:
		return append(buf, "true"...)
	case jsonFalse:
		return append(buf, "false"...)
	case jsonNumber:
		return append(buf, v.text...)
	case jsonString:
		return AppendJSONString(buf, v.text)
	case jsonArray:
		buf = append(buf, '[')
		for i, e := range v.elems {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = appendJSON(buf, e)
		}
		return append(buf, ']')
	case jsonObject:
		buf = append(buf, '{')
		for i := 0; i+1 < len(v.elems); i += 2 {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = AppendJSONString(buf, v.elems[i].text)
			buf = append(buf, ": "...)
			buf = appendJSON(buf, v.elems[i+1])
		}
		return append(buf, '}')
	}
	return buf
}

// AppendJSONString appends s as a JSON string literal the way PostgreSQL's
// escape_json does: quotes, backslashes and control characters escaped,
// everything else (including non-ASCII and '/') verbatim.
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			buf = append(buf, '\\', '"')
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			if c < 0x20 {
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			} else {
				buf = append(buf, c)
			}
		}
	}
	return append(buf, '"')
}
