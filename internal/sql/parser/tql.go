package parser

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// TQL evaluates a PromQL expression over the time-series tables of the
// session's schema (GreptimeDB's TQL): TQL EVAL|EVALUATE (start, end,
// step) query. Start and end are Unix seconds or quoted RFC 3339 times,
// step is seconds or a quoted duration ('15s'); the parser keeps them as
// written and the server parses them (internal/promql).
type TQL struct {
	Start, End, Step string
	Query            string
}

func (*TQL) runnelStmt() {}

var tqlSyntax = "syntax error: expected TQL EVAL (start, end, step) <PromQL expression>"

// parseTQL parses a TQL statement; ok is false when text is not one.
func parseTQL(text string) (*TQL, bool, error) {
	if len(text) < 4 || !strings.EqualFold(text[:3], "tql") || !isSpace(text[3]) {
		return nil, false, nil
	}
	rest := strings.TrimLeft(text[3:], " \t\r\n\f")
	verb := rest
	if i := strings.IndexAny(rest, " \t\r\n\f("); i >= 0 {
		verb = rest[:i]
	}
	if !strings.EqualFold(verb, "eval") && !strings.EqualFold(verb, "evaluate") {
		return nil, true, sqlerr.Errorf(sqlerr.FeatureNotSupported, "TQL %s is not supported; only TQL EVAL", verb)
	}
	rest = strings.TrimLeft(rest[len(verb):], " \t\r\n\f")
	if !strings.HasPrefix(rest, "(") {
		return nil, true, sqlerr.New(sqlerr.SyntaxError, tqlSyntax)
	}
	rest = rest[1:]
	var args []string
	for len(args) < 3 {
		rest = strings.TrimLeft(rest, " \t\r\n\f")
		var arg string
		if strings.HasPrefix(rest, "'") {
			// A quoted argument; '' is a quote.
			var b strings.Builder
			i := 1
			for ; i < len(rest); i++ {
				if rest[i] == '\'' {
					if i+1 < len(rest) && rest[i+1] == '\'' {
						b.WriteByte('\'')
						i++
						continue
					}
					break
				}
				b.WriteByte(rest[i])
			}
			if i >= len(rest) {
				return nil, true, sqlerr.New(sqlerr.SyntaxError, "unterminated quoted string in TQL")
			}
			arg, rest = b.String(), rest[i+1:]
		} else {
			i := strings.IndexAny(rest, ",)")
			if i < 0 {
				return nil, true, sqlerr.New(sqlerr.SyntaxError, tqlSyntax)
			}
			arg, rest = strings.TrimRight(rest[:i], " \t\r\n\f"), rest[i:]
		}
		if arg == "" {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, tqlSyntax)
		}
		args = append(args, arg)
		rest = strings.TrimLeft(rest, " \t\r\n\f")
		want := ","
		if len(args) == 3 {
			want = ")"
		}
		if !strings.HasPrefix(rest, want) {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, tqlSyntax)
		}
		rest = rest[1:]
	}
	q := strings.TrimSpace(rest)
	if q == "" {
		return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error: TQL EVAL needs a PromQL expression after (start, end, step)")
	}
	return &TQL{Start: args[0], End: args[1], Step: args[2], Query: q}, true, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' }
