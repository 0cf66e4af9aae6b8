package parser

import (
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Statement is one parsed statement. Exactly one of AST and Runnel is set.
type Statement struct {
	// Text is the statement's own text (without the trailing semicolon).
	Text string
	// Offset is the byte offset of Text in the string given to Parse.
	Offset int
	// CharOffset is the same offset counted in characters (for error
	// positions, which PostgreSQL reports in characters).
	CharOffset int
	// AST is the PostgreSQL parse tree (the RawStmt's Stmt); its locations
	// are byte offsets into Text.
	AST *pg_query.Node
	// Runnel is a statement PostgreSQL's grammar does not have.
	Runnel RunnelStmt
	// EmitOnWindowClose is RisingWave's EMIT ON WINDOW CLOSE ending a
	// CREATE MATERIALIZED VIEW; Text and AST are the statement without it.
	EmitOnWindowClose bool
	// ProcTime holds the byte offsets (in Text) of the relation names in
	// FROM followed by RisingWave's FOR SYSTEM_TIME AS OF PROCTIME() (a
	// temporal join's lookup side): the Locations of their RangeVars.
	// The clause itself is blanked out of the text pg_query parsed; Text
	// keeps it (a view's stored definition must).
	ProcTime []int32
}

// Position converts a byte location inside Text (as found in AST nodes; -1
// when unknown) into the 1-based character position in the original string
// that sqlerr.Error.Position expects (0 when unknown).
func (s *Statement) Position(loc int32) int {
	if loc < 0 || int(loc) > len(s.Text) {
		return 0
	}
	return s.CharOffset + utf8.RuneCountInString(s.Text[:loc]) + 1
}

// Parse splits text into statements and parses each. Empty statements
// (stray semicolons, comments only) are dropped.
func Parse(text string) ([]*Statement, error) {
	pieces, err := split(text)
	if err != nil {
		return nil, err
	}
	var out []*Statement
	for _, p := range pieces {
		if p.nestErr != nil {
			return nil, p.nestErr
		}
		st, err := parseOne(text, p.start, p.end)
		if err != nil {
			return nil, err
		}
		if st != nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// ParseOne parses text that must hold exactly one statement.
func ParseOne(text string) (*Statement, error) {
	sts, err := Parse(text)
	if err != nil {
		return nil, err
	}
	if len(sts) != 1 {
		return nil, sqlerr.Errorf(sqlerr.SyntaxError, "expected one statement, got %d", len(sts))
	}
	return sts[0], nil
}

type span struct {
	start, end int
	// nestErr is checkNesting's verdict on the piece's tokens.
	nestErr error
}

// split cuts text at top-level semicolons using PostgreSQL's scanner. When
// the scanner itself fails (an unterminated quoted string) the whole text
// is one piece, so that the parser reports the error with its position
// (the parser stops at the same scanner error before building a tree).
func split(text string) ([]span, error) {
	// Text too large to scan cheaply is refused before the scanner's
	// per-token allocations (see roughTokens; several statements share
	// the bound).
	if len(text) > MaxTokens && roughTokens(text) > 2*MaxTokens {
		return nil, tooManyTokens()
	}
	res, err := pg_query.Scan(text)
	if err != nil {
		return []span{{0, len(text), nil}}, nil
	}
	var out []span
	start, first := 0, 0
	for i, tok := range res.Tokens {
		if tok.Token == pg_query.Token_ASCII_59 {
			out = append(out, span{start, int(tok.Start), checkNesting(res.Tokens[first:i])})
			start, first = int(tok.End), i+1
		}
	}
	out = append(out, span{start, len(text), checkNesting(res.Tokens[first:])})
	return out, nil
}

// parseTree is the one way text reaches pg_query's parser: tokens first,
// bounded by checkNesting, so that the C code never sees a statement deep
// enough to overflow its stack (I9).
func parseTree(text string) (*pg_query.ParseResult, error) {
	res, err := pg_query.Scan(text)
	if err == nil {
		if err := checkNesting(res.Tokens); err != nil {
			return nil, err
		}
	}
	return pg_query.Parse(text)
}

func parseOne(full string, start, end int) (*Statement, error) {
	raw := full[start:end]
	// Trim leading whitespace so offsets of AST locations stay exact.
	trimmed := strings.TrimLeft(raw, " \t\r\n\f")
	start += len(raw) - len(trimmed)
	text := strings.TrimRight(trimmed, " \t\r\n\f")
	st := &Statement{Text: text, Offset: start, CharOffset: utf8.RuneCountInString(full[:start])}
	if text == "" {
		return nil, nil
	}
	if rs, ok, err := parseRunnel(text); err != nil {
		return nil, err
	} else if ok {
		st.Runnel = rs
		return st, nil
	}
	if cut, ok := cutEmitOnWindowClose(text); ok {
		st.Text, st.EmitOnWindowClose, text = cut, true, cut
	}
	parsed, procTime := cutForSystemTime(text)
	st.ProcTime = procTime
	tree, err := pg_query.Parse(dropSourceAsForeignTable(parsed)) // split bounded its nesting
	if err != nil {
		return nil, syntaxError(err, st)
	}
	switch len(tree.Stmts) {
	case 0:
		return nil, nil // only comments
	case 1:
		st.AST = tree.Stmts[0].Stmt
		return st, nil
	}
	return nil, sqlerr.New(sqlerr.SyntaxError, "cannot parse several statements as one")
}

func syntaxError(err error, st *Statement) error {
	if pe, ok := err.(*pgparser.Error); ok {
		e := sqlerr.New(sqlerr.SyntaxError, pe.Message)
		if pe.Cursorpos > 0 {
			e = e.WithPosition(st.CharOffset + pe.Cursorpos)
		}
		return e
	}
	return sqlerr.Wrap(err, sqlerr.SyntaxError, "syntax error")
}
