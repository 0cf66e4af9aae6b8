package parser

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Bounds on a statement before pg_query's C parser sees it (I9).
//
// PostgreSQL's grammar is LALR: right-nested constructs (parentheses,
// NOT NOT ..., nested CASE) fill bison's stack, which stops at 10,000
// entries with "memory exhausted"; but left-associative chains (1+1+...+1,
// x::int::int..., a UNION b UNION ..., a JOIN b JOIN ...) are reduced as
// they are read and build a tree as deep as the chain is long. pg_query
// then converts that tree to protobuf with C recursion that has no depth
// check: 30,000 terms overflow an 8 MB thread stack and the SIGSEGV kills
// the process (measured: `SELECT 1+1+...` with 20,000 terms parses, 30,000
// crash). So the depth of the tree is estimated from the tokens first and
// a statement deeper than MaxNesting is refused with PostgreSQL's 54001.
//
// The estimate is an upper bound of the tree's depth up to a small factor:
// every open parenthesis, bracket or CASE is a level; inside a level,
// every operator since the last comma, AND, OR, WHEN, THEN or ELSE is one
// more (those separate flat lists: PostgreSQL flattens AND and OR chains,
// argument lists and CASE arms into lists, so they do not nest). Keywords
// that chain like operators (IS, LIKE, IN, BETWEEN, COLLATE, AT, NOT,
// UNION, INTERSECT, EXCEPT, JOIN, OPERATOR) count as operators.

// MaxNesting is the deepest a statement may nest (estimated levels). Real
// SQL stays far below it (hand-written queries under 50; generated ones a
// few hundred); the C parser crashes above about 20,000.
const MaxNesting = 1000

// MaxTokens bounds the tokens of one statement: the Go parse tree of a
// 9-million-token VALUES list took 2.8 GB; this keeps one statement under
// about 300 MB. (Bulk loads belong in COPY or batches of INSERTs.)
const MaxTokens = 1 << 20

// tooManyTokens is checkNesting's 54000.
func tooManyTokens() error {
	return sqlerr.Errorf(sqlerr.ProgramLimitExceeded, "statement is too large: more than %d tokens", MaxTokens).
		WithHint("Load large amounts of data with COPY or with several INSERT statements.")
}

// checkNesting returns 54001 when the tokens nest deeper than MaxNesting
// and 54000 when there are more than MaxTokens.
func checkNesting(toks []*pg_query.ScanToken) error {
	if len(toks) > MaxTokens {
		return tooManyTokens()
	}
	type level struct {
		ops     int // chained operators since the last separator
		between int // BETWEENs still waiting for their AND
	}
	stack := []level{{}}
	depth := 0 // the sum of ops over the stack
	for _, t := range toks {
		top := &stack[len(stack)-1]
		switch t.Token {
		case pg_query.Token_ASCII_40, pg_query.Token_ASCII_91, pg_query.Token_CASE: // ( [ CASE
			stack = append(stack, level{})
		case pg_query.Token_ASCII_41, pg_query.Token_ASCII_93, pg_query.Token_END_P: // ) ] END
			if len(stack) > 1 {
				depth -= top.ops
				stack = stack[:len(stack)-1]
			}
		case pg_query.Token_AND:
			if top.between > 0 {
				top.between--
				continue
			}
			depth -= top.ops
			top.ops = 0
		case pg_query.Token_ASCII_44, pg_query.Token_OR, pg_query.Token_WHEN, pg_query.Token_THEN, pg_query.Token_ELSE: // ,
			depth -= top.ops
			top.ops = 0
		case pg_query.Token_BETWEEN:
			top.between++
			top.ops++
			depth++
		case pg_query.Token_Op, pg_query.Token_TYPECAST, pg_query.Token_LESS_EQUALS, pg_query.Token_GREATER_EQUALS,
			pg_query.Token_NOT_EQUALS, pg_query.Token_EQUALS_GREATER, pg_query.Token_COLON_EQUALS,
			pg_query.Token_ASCII_43, pg_query.Token_ASCII_45, pg_query.Token_ASCII_42, pg_query.Token_ASCII_47, // + - * /
			pg_query.Token_ASCII_37, pg_query.Token_ASCII_94, pg_query.Token_ASCII_60, pg_query.Token_ASCII_62, // % ^ < >
			pg_query.Token_ASCII_61, // =
			pg_query.Token_IS, pg_query.Token_ISNULL, pg_query.Token_NOTNULL, pg_query.Token_LIKE, pg_query.Token_ILIKE,
			pg_query.Token_SIMILAR, pg_query.Token_IN_P, pg_query.Token_COLLATE, pg_query.Token_AT, pg_query.Token_OVERLAPS,
			pg_query.Token_NOT, pg_query.Token_NOT_LA, pg_query.Token_UNION, pg_query.Token_INTERSECT, pg_query.Token_EXCEPT,
			pg_query.Token_JOIN, pg_query.Token_OPERATOR:
			top.ops++
			depth++
		default:
			continue
		}
		if depth+len(stack) > MaxNesting {
			return StackDepthError()
		}
	}
	return nil
}

// StackDepthError is PostgreSQL's 54001 for input nested too deeply to
// process safely.
func StackDepthError() error {
	return sqlerr.New(sqlerr.StatementTooComplex, "stack depth limit exceeded").
		WithHint("The statement nests expressions, subqueries or set operations more than %d levels deep.", MaxNesting)
}

// roughTokens over-estimates the number of tokens in text without the C
// scanner: pg_query.Scan itself allocates some 80 bytes per token, so a
// 64 MB message of "1," would cost gigabytes before checkNesting could
// count. Each run of identifier or number characters, each other
// character, each quoted string, quoted identifier or dollar-quoted string
// counts one; comments count nothing. Where it could read the text
// differently from PostgreSQL's scanner it errs towards more tokens (a
// run of operator characters is one token there), except for a string it
// closes early, which cannot happen: E'...' strings skip backslash escapes,
// and dollar quotes open only where a token starts, as in the scanner.
func roughTokens(text string) int {
	n := 0
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
			continue
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			depth := 0
			for i < len(text) {
				if strings.HasPrefix(text[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(text[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			continue
		case c == '\'' || c == '"':
			i = skipQuoted(text, i, c, false)
		case (c == 'e' || c == 'E') && i+1 < len(text) && text[i+1] == '\'':
			i = skipQuoted(text, i+1, '\'', true)
		case c == '$' && dollarTag(text[i:]) != "":
			tag := dollarTag(text[i:])
			end := strings.Index(text[i+len(tag):], tag)
			if end < 0 {
				i = len(text)
			} else {
				i += 2*len(tag) + end
			}
		case isWordByte(c):
			for i < len(text) && isWordByte(text[i]) {
				i++
			}
		default:
			i++
		}
		n++
	}
	return n
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// skipQuoted returns the offset after the quoted item opening at text[i]
// (doubled quotes stay inside; with backslash, so do escaped characters).
func skipQuoted(text string, i int, q byte, backslash bool) int {
	for i++; i < len(text); i++ {
		switch {
		case backslash && text[i] == '\\':
			i++
		case text[i] == q:
			if i+1 < len(text) && text[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(text)
}

// dollarTag returns the $tag$ opening text, "" if it does not open with one.
func dollarTag(text string) string {
	for j := 1; j < len(text); j++ {
		c := text[j]
		if c == '$' {
			return text[:j+1]
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80 || j > 1 && c >= '0' && c <= '9') {
			return ""
		}
	}
	return ""
}
