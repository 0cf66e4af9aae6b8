package parser

import "strings"

// cutEmitOnWindowClose recognises RisingWave's EMIT ON WINDOW CLOSE at the
// end of CREATE [OR REPLACE] [MATERIALIZED] VIEW (possibly under EXPLAIN),
// which PostgreSQL's grammar lacks: it returns the statement without the
// clause (a prefix of text, so AST locations stay offsets into the same
// text) and true; the binder refuses it on a plain view. Anywhere else the
// clause is left for pg_query to refuse.
func cutEmitOnWindowClose(text string) (string, bool) {
	if !containsFold(text, "window") {
		return text, false // every other statement: no scan (a cgo call)
	}
	toks := significant(text)
	n := len(toks)
	if n < 8 {
		return text, false
	}
	word := func(i int) string { return strings.ToLower(text[toks[i].Start:toks[i].End]) }
	tail := []string{"emit", "on", "window", "close"}
	for i, w := range tail {
		if word(n-len(tail)+i) != w {
			return text, false
		}
	}
	i := 0
	if word(0) == "explain" {
		i++
	}
	if word(i) != "create" {
		return text, false
	}
	i++
	if word(i) == "or" && word(i+1) == "replace" {
		i += 2
	}
	if word(i) == "materialized" {
		i++
	}
	if word(i) != "view" {
		return text, false
	}
	return strings.TrimRight(text[:toks[n-len(tail)].Start], " \t\r\n\f"), true
}

// containsFold reports whether text contains word (lower case ASCII) in
// any letter case, without allocating.
func containsFold(text, word string) bool {
	for i := 0; i+len(word) <= len(text); i++ {
		if text[i]|0x20 == word[0] && strings.EqualFold(text[i:i+len(word)], word) {
			return true
		}
	}
	return false
}
