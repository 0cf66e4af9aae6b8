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
// Errors are 22P02 invalid_text_representation (22P05 for \u0000).
func ParseJsonb(s string) (string, error) {
	p := jsonParser{s: s}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return "", err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return "", p.tokenError()
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

type jsonParser struct {
	s string
	i int
}

func (p *jsonParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func jsonSyntax(detail string) *sqlerr.Error {
	return sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type json").WithDetail("%s", detail)
}

// tokenError reports the token at the current position as PostgreSQL does.
func (p *jsonParser) tokenError() *sqlerr.Error {
	if p.i >= len(p.s) {
		return jsonSyntax("The input string ended unexpectedly.")
	}
	j := p.i
	for j < len(p.s) {
		c := p.s[j]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == '[' || c == ']' || c == '{' || c == '}' || c == '"' {
			break
		}
		j++
	}
	if j == p.i {
		j++
	}
	return jsonSyntax("Token \"" + p.s[p.i:j] + "\" is invalid.")
}

func (p *jsonParser) value(depth int) (jsonValue, error) {
	if depth > maxJSONDepth {
		return jsonValue{}, sqlerr.New(sqlerr.ProgramLimitExceeded, "stack depth limit exceeded")
	}
	if p.i >= len(p.s) {
		return jsonValue{}, jsonSyntax("The input string ended unexpectedly.")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		str, err := p.str()
		return jsonValue{kind: jsonString, text: str}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't' || c == 'f' || c == 'n':
		j := p.i
		for j < len(p.s) && isAlpha(p.s[j]) || j < len(p.s) && isDigit(p.s[j]) || j < len(p.s) && p.s[j] == '_' {
			j++
		}
		switch p.s[p.i:j] {
		case "true":
			p.i = j
			return jsonValue{kind: jsonTrue}, nil
		case "false":
			p.i = j
			return jsonValue{kind: jsonFalse}, nil
		case "null":
			p.i = j
			return jsonValue{kind: jsonNull}, nil
		}
	}
	return jsonValue{}, p.tokenError()
}

func (p *jsonParser) number() (jsonValue, error) {
	start := p.i
	j := p.i
	if p.s[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
		return j - k
	}
	if j < len(p.s) && p.s[j] == '0' {
		j++
	} else if digits() == 0 {
		p.i = start
		return jsonValue{}, p.tokenError()
	}
	if j < len(p.s) && p.s[j] == '.' {
		j++
		if digits() == 0 {
			p.i = start
			return jsonValue{}, p.tokenError()
		}
	}
	if j < len(p.s) && (p.s[j] == 'e' || p.s[j] == 'E') {
		j++
		if j < len(p.s) && (p.s[j] == '+' || p.s[j] == '-') {
			j++
		}
		if digits() == 0 {
			p.i = start
			return jsonValue{}, p.tokenError()
		}
	}
	// A number glued to letters or digits (01, 1x) is one bad token.
	if j < len(p.s) && (isAlpha(p.s[j]) || isDigit(p.s[j]) || p.s[j] == '.') {
		p.i = start
		return jsonValue{}, p.tokenError()
	}
	d, err := parseNumeric(p.s[start:j])
	if err != nil {
		return jsonValue{}, err
	}
	p.i = j
	return jsonValue{kind: jsonNumber, text: string(appendNumeric(nil, d))}, nil
}

func (p *jsonParser) str() (string, error) {
	p.i++ // opening quote
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
			return "", jsonSyntax("Character with value 0x" + strconv.FormatUint(uint64(c)|0x100, 16)[1:] + " must be escaped.")
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
			return "", jsonSyntax("Character with value 0x" + strconv.FormatUint(uint64(c)|0x100, 16)[1:] + " must be escaped.")
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
					if r2 < 0xdc00 || r2 > 0xdfff {
						return "", jsonSyntax("Unicode high surrogate must not follow a high surrogate.")
					}
					r = utf16.DecodeRune(r, r2)
				} else {
					return "", jsonSyntax("Unicode low surrogate must follow a high surrogate.")
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", jsonSyntax("Escape sequence \"\\" + string(e) + "\" is invalid.")
		}
	}
	return "", jsonSyntax("The input string ended unexpectedly.")
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

func (p *jsonParser) array(depth int) (jsonValue, error) {
	p.i++
	v := jsonValue{kind: jsonArray}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		p.skipSpace()
		e, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.elems = append(v.elems, e)
		p.skipSpace()
		if p.i >= len(p.s) {
			return v, jsonSyntax("The input string ended unexpectedly.")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return v, nil
		default:
			return v, jsonSyntax("Expected \",\" or \"]\", but found \"" + p.s[p.i:p.i+1] + "\".")
		}
	}
}

func (p *jsonParser) object(depth int) (jsonValue, error) {
	p.i++
	v := jsonValue{kind: jsonObject}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return v, nil
	}
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return v, jsonSyntax("The input string ended unexpectedly.")
		}
		if p.s[p.i] != '"' {
			return v, jsonSyntax("Expected string, but found \"" + p.s[p.i:p.i+1] + "\".")
		}
		k, err := p.str()
		if err != nil {
			return v, err
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return v, jsonSyntax("The input string ended unexpectedly.")
		}
		if p.s[p.i] != ':' {
			return v, jsonSyntax("Expected \":\", but found \"" + p.s[p.i:p.i+1] + "\".")
		}
		p.i++
		p.skipSpace()
		e, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.elems = append(v.elems, jsonValue{kind: jsonString, text: k}, e)
		p.skipSpace()
		if p.i >= len(p.s) {
			return v, jsonSyntax("The input string ended unexpectedly.")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			canonicalizeObject(&v)
			return v, nil
		default:
			return v, jsonSyntax("Expected \",\" or \"}\", but found \"" + p.s[p.i:p.i+1] + "\".")
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
