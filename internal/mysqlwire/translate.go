package mysqlwire

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// This file turns MySQL's lexical dialect into the PostgreSQL dialect the
// engine parses. It changes tokens only, never the structure of a
// statement:
//
//	MySQL                          PostgreSQL
//	`odd name`                     "odd name"        identifier quotes
//	"text", 'it\'s'                'text', 'it''s'   strings (backslash escapes decoded)
//	# comment                      (dropped)         comments
//	/*!40101 SET ... */            (dropped)         version comments are not run
//	? (prepared statements)        $1, $2, ...       parameters
//	LIMIT 10, 20                   LIMIT 20 OFFSET 10
//	_binary'\0\1'                  '\x0001'::bytea     introducers (others dropped)
//
// and splits a text on top-level semicolons. Statements MySQL clients send
// that the engine has no syntax for (SHOW TABLES, USE, SELECT @@var) are
// recognised afterwards, on the translated text (statements.go).

// translated is one statement in the engine's dialect.
type translated struct {
	sql     string
	nparams int // the number of ? placeholders (prepare mode)
}

// translate splits sql into statements and rewrites each. In prepare mode
// every ? outside literals and comments becomes $n (numbered across the
// whole text). Empty statements are dropped.
func translate(sql string, prepare bool) ([]translated, error) {
	var out []translated
	var b strings.Builder
	nparams := 0
	stmtParams := 0
	flush := func() {
		s := strings.TrimSpace(b.String())
		if s != "" {
			out = append(out, translated{sql: s, nparams: stmtParams})
		}
		b.Reset()
		stmtParams = 0
	}
	placeholder := func() string {
		nparams++
		stmtParams++
		return "$" + strconv.Itoa(nparams)
	}
	// limitOperand renders one operand of LIMIT a, b.
	limitOperand := func(v string) (string, error) {
		if v != "?" {
			return v, nil
		}
		if !prepare {
			return "", sqlerr.New(sqlerr.SyntaxError, `syntax error at or near "?"`)
		}
		return placeholder(), nil
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"':
			v, n, err := scanMySQLString(sql[i:])
			if err != nil {
				return nil, err
			}
			// MySQL joins adjacent literals: 'a' 'b' is 'ab'.
			for {
				j := i + n
				for j < len(sql) && (sql[j] == ' ' || sql[j] == '\t' || sql[j] == '\n' || sql[j] == '\r') {
					j++
				}
				if j >= len(sql) || sql[j] != '\'' && sql[j] != '"' {
					break
				}
				v2, n2, err := scanMySQLString(sql[j:])
				if err != nil {
					return nil, err
				}
				v += v2
				n = j - i + n2
			}
			if strings.IndexByte(v, 0) >= 0 {
				return nil, sqlerr.New(sqlerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x00")
			}
			b.WriteString(quoteLiteral(v))
			i += n
		case c == '`':
			name, n, err := scanBacktick(sql[i:])
			if err != nil {
				return nil, err
			}
			b.WriteString(quoteIdent(name))
			i += n
		case c == '#':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			b.WriteByte(' ')
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			j := i
			for j < len(sql) && sql[j] != '\n' {
				j++
			}
			b.WriteString(sql[i:j])
			i = j
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return nil, sqlerr.New(sqlerr.SyntaxError, "unterminated /* comment")
			}
			if !strings.HasPrefix(sql[i:], "/*!") {
				b.WriteString(sql[i : i+2+end+2])
			} else {
				b.WriteByte(' ')
			}
			i += 2 + end + 2
		case c == '?' && prepare:
			b.WriteString(placeholder())
			i++
		case c == ';':
			flush()
			i++
		case isIdentStart(c):
			j := i
			for j < len(sql) && isIdentChar(sql[j]) {
				j++
			}
			word := sql[i:j]
			if word[0] == '_' && j < len(sql) && (sql[j] == '\'' || sql[j] == '"') {
				// A character set introducer: _utf8mb4'x' is 'x';
				// _binary'...' (go-sql-driver's []byte) is a bytea.
				if !strings.EqualFold(word, "_binary") {
					i = j
					continue
				}
				v, n, err := scanMySQLString(sql[j:])
				if err != nil {
					return nil, err
				}
				b.WriteString(`'\x` + hex.EncodeToString([]byte(v)) + `'::bytea`)
				i = j + n
				continue
			}
			b.WriteString(word)
			i = j
			if strings.EqualFold(word, "LIMIT") {
				if a, bb, n, ok := scanLimitPair(sql[i:]); ok {
					// LIMIT a, b skips a rows and returns b: the offset
					// comes first in the text, so it is parameter n+1
					// when both are placeholders.
					off, err := limitOperand(a)
					if err != nil {
						return nil, err
					}
					cnt, err := limitOperand(bb)
					if err != nil {
						return nil, err
					}
					b.WriteString(" " + cnt + " OFFSET " + off)
					i += n
				}
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	flush()
	return out, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' }

// scanLimitPair matches "<ws>a<ws>,<ws>b" after LIMIT, a and b each a
// number or ?; n is the length matched.
func scanLimitPair(s string) (a, b string, n int, ok bool) {
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	operand := func() string {
		if i < len(s) && s[i] == '?' {
			i++
			return "?"
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return s[j:i]
	}
	skip()
	if a = operand(); a == "" {
		return "", "", 0, false
	}
	skip()
	if i >= len(s) || s[i] != ',' {
		return "", "", 0, false
	}
	i++
	skip()
	if b = operand(); b == "" {
		return "", "", 0, false
	}
	if i < len(s) && isIdentChar(s[i]) {
		return "", "", 0, false
	}
	return a, b, i, true
}

// scanMySQLString decodes a '...' or "..." literal at the start of s (the
// quote doubled or backslash-escaped inside), returning its value and the
// bytes consumed. MySQL keeps the backslash of \% and \_ (LIKE escapes).
func scanMySQLString(s string) (string, int, error) {
	q := s[0]
	var v strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case '0':
				v.WriteByte(0)
			case 'b':
				v.WriteByte('\b')
			case 'n':
				v.WriteByte('\n')
			case 'r':
				v.WriteByte('\r')
			case 't':
				v.WriteByte('\t')
			case 'Z':
				v.WriteByte(26)
			case '%', '_':
				v.WriteByte('\\')
				v.WriteByte(e)
			default:
				v.WriteByte(e)
			}
		case c == q:
			if i+1 < len(s) && s[i+1] == q {
				v.WriteByte(q)
				i++
				continue
			}
			return v.String(), i + 1, nil
		default:
			v.WriteByte(c)
		}
	}
	return "", 0, sqlerr.New(sqlerr.SyntaxError, "unterminated quoted string")
}

// scanBacktick decodes a `...` identifier (“ inside is one backtick).
func scanBacktick(s string) (string, int, error) {
	var v strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] == '`' {
			if i+1 < len(s) && s[i+1] == '`' {
				v.WriteByte('`')
				i++
				continue
			}
			return v.String(), i + 1, nil
		}
		v.WriteByte(s[i])
	}
	return "", 0, sqlerr.New(sqlerr.SyntaxError, "unterminated quoted identifier")
}

// quoteLiteral renders s as a PostgreSQL standard string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoteIdent renders s as a PostgreSQL quoted identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
