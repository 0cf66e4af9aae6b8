package parser

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// cutForSystemTime recognises RisingWave's temporal join clause after a
// table name in FROM — `version FOR SYSTEM_TIME AS OF PROCTIME() [AS] v`
// — which PostgreSQL's grammar lacks. It returns text with every such
// clause blanked out with spaces (the text keeps its length, so AST
// locations stay offsets into the statement as written) and the byte
// offsets of the table names the clauses followed: the Location of the
// RangeVar each one marks. Statements without the clause come back
// unchanged with no offsets.
func cutForSystemTime(text string) (string, []int32) {
	if !containsFold(text, "system_time") {
		return text, nil // every other statement: no scan (a cgo call)
	}
	toks := significant(text)
	word := func(i int) string {
		if i < 0 || i >= len(toks) {
			return ""
		}
		return strings.ToLower(text[toks[i].Start:toks[i].End])
	}
	clause := []string{"for", "system_time", "as", "of", "proctime", "(", ")"}
	var b []byte
	var at []int32
	for i := 1; i+len(clause) <= len(toks); i++ {
		match := true
		for k, w := range clause {
			if word(i+k) != w {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		// The name before it: ident or schema.ident (quoted or not).
		j := i - 1
		if !isNameToken(text, toks[j]) {
			continue
		}
		for j >= 2 && toks[j-1].Token == pg_query.Token_ASCII_46 && isNameToken(text, toks[j-2]) {
			j -= 2
		}
		if b == nil {
			b = []byte(text)
		}
		for k := toks[i].Start; k < toks[i+len(clause)-1].End; k++ {
			b[k] = ' '
		}
		at = append(at, toks[j].Start)
		i += len(clause) - 1
	}
	if b == nil {
		return text, nil
	}
	return string(b), at
}

// isNameToken reports whether a token can be (part of) a relation name: an
// identifier or keyword, quoted or not.
func isNameToken(text string, t *pg_query.ScanToken) bool {
	if t.End <= t.Start {
		return false
	}
	c := text[t.Start]
	return c == '"' || c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') || c >= 0x80
}
