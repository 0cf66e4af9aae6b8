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
	word := func(i int) string {
		if i < 0 || i >= n {
			return ""
		}
		return strings.ToLower(text[toks[i].Start:toks[i].End])
	}
	tail := []string{"emit", "on", "window", "close"}
	clauseAt := func(j int) bool {
		for k, w := range tail {
			if word(j+k) != w {
				return false
			}
		}
		return true
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
	if clauseAt(n - len(tail)) {
		return strings.TrimRight(text[:toks[n-len(tail)].Start], " \t\r\n\f"), true
	}
	// RisingWave also takes the clause before AS: CREATE MATERIALIZED VIEW
	// mv EMIT ON WINDOW CLOSE AS SELECT ... It is blanked out with spaces,
	// so the text keeps its length and AST locations stay offsets into it.
	for j := i + 1; j+len(tail) < n; j++ {
		if word(j) == "as" {
			break
		}
		if clauseAt(j) && word(j+len(tail)) == "as" {
			b := []byte(text)
			for k := toks[j].Start; k < toks[j+len(tail)-1].End; k++ {
				b[k] = ' '
			}
			return string(b), true
		}
	}
	return text, false
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
