// Package ident quotes SQL identifiers the way PostgreSQL's quote_ident
// does: an identifier stays bare only when it is all lower-case letters,
// digits, underscores and dollar signs (not starting with a digit or
// dollar) and is not a keyword other than an unreserved one.
//
// Keyword categories come from pg_query's scanner — PostgreSQL's own
// keyword list — rather than a copy kept here.
package ident

import (
	"strings"
	"sync"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Quote returns s as PostgreSQL's quote_ident would print it.
func Quote(s string) string {
	if isBare(s) && !needsQuotes(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func isBare(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '$'):
		default:
			return false
		}
	}
	return true
}

// maxKeywordLen bounds the scan: no PostgreSQL keyword is longer.
const maxKeywordLen = 24

var (
	kwMu    sync.Mutex
	kwCache = map[string]bool{}
)

// needsQuotes reports whether the bare word s is a keyword that is not
// unreserved (column-name, type/function-name or reserved).
func needsQuotes(s string) bool {
	if len(s) > maxKeywordLen {
		return false
	}
	kwMu.Lock()
	v, ok := kwCache[s]
	kwMu.Unlock()
	if ok {
		return v
	}
	v = scanKeyword(s)
	kwMu.Lock()
	if len(kwCache) >= 4096 {
		clear(kwCache) // identifiers from data are unbounded; keep the cache small
	}
	kwCache[s] = v
	kwMu.Unlock()
	return v
}

func scanKeyword(s string) bool {
	res, err := pg_query.Scan(s)
	if err != nil || len(res.GetTokens()) != 1 {
		return false
	}
	switch res.GetTokens()[0].GetKeywordKind() {
	case pg_query.KeywordKind_COL_NAME_KEYWORD, pg_query.KeywordKind_TYPE_FUNC_NAME_KEYWORD, pg_query.KeywordKind_RESERVED_KEYWORD:
		return true
	}
	return false
}
