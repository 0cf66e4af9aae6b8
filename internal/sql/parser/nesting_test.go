package parser

import (
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Each of these built a parse tree deep enough to overflow the C stack in
// pg_query's protobuf output (30,000 terms killed the process; see
// internal/sqlfuzz for that through a server process) or ran into
// bison's own limit; all must be refused before pg_query parses them.
func TestNestingRefused(t *testing.T) {
	const n = 3000
	for name, sql := range map[string]string{
		"plus":      "SELECT " + strings.Repeat("1+", n) + "1",
		"concat":    "SELECT " + strings.Repeat("'a'||", n) + "'a'",
		"cast":      "SELECT 1" + strings.Repeat("::int", n),
		"is":        "SELECT true" + strings.Repeat(" IS NOT NULL", n),
		"union":     strings.Repeat("SELECT 1 UNION ", n) + "SELECT 1",
		"join":      "SELECT * FROM t" + strings.Repeat(" JOIN t ON true", n),
		"minus":     "SELECT " + strings.Repeat("- ", n) + "1",
		"not":       "SELECT " + strings.Repeat("NOT ", n) + "true",
		"parens":    "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"case":      "SELECT " + strings.Repeat("CASE WHEN true THEN ", n) + "1" + strings.Repeat(" END", n),
		"between":   "SELECT " + strings.Repeat("1 BETWEEN 0 AND ", n) + "1",
		"subquery":  "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", n) + "t" + strings.Repeat(")", n),
		"in parens": "SELECT f(" + strings.Repeat("1+", n) + "1)",
		"mixed":     "SELECT " + strings.Repeat("(1+1+", 400) + "1" + strings.Repeat(")", 400),
		"in view":   "CREATE MATERIALIZED VIEW v AS SELECT " + strings.Repeat("x+", n) + "x FROM t",
		"second":    "SELECT 1; SELECT " + strings.Repeat("1+", n) + "1",
		"source":    "CREATE SOURCE s (a int, ts timestamp, WATERMARK FOR ts AS ts" + strings.Repeat(" - interval '1 s'", n) + ") WITH (connector = 'datagen')",
	} {
		_, err := Parse(sql)
		if e := sqlerr.From(err); e == nil || e.Code != sqlerr.StatementTooComplex {
			t.Errorf("%s: got %v; want 54001", name, err)
		}
	}
}

// Wide but flat statements stay well under the bound.
func TestNestingAllowed(t *testing.T) {
	const n = 2000
	for name, sql := range map[string]string{
		"values":  "INSERT INTO t VALUES " + strings.Repeat("(1 + 2, 'a' || 'b', now() - interval '1 day'), ", n) + "(1, 'a', now())",
		"in":      "SELECT * FROM t WHERE x IN (" + strings.Repeat("1, ", n) + "1)",
		"and":     "SELECT * FROM t WHERE " + strings.Repeat("a.x = b.y + 1 AND ", n) + "true",
		"or":      "SELECT * FROM t WHERE " + strings.Repeat("x = 1 OR x = 2 AND y = 3 OR ", n) + "true",
		"case":    "SELECT CASE " + strings.Repeat("WHEN x = 1 THEN 'a' || 'b' ", n) + "END FROM t",
		"columns": "SELECT " + strings.Repeat("a + b * c, ", n) + "1 FROM t",
		"nested":  "SELECT " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500),
		"chain":   "SELECT " + strings.Repeat("1+", 800) + "1",
	} {
		if _, err := Parse(sql); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTooManyTokens(t *testing.T) {
	_, err := Parse("SELECT " + strings.Repeat("1, ", MaxTokens/2) + "1")
	if e := sqlerr.From(err); e == nil || e.Code != sqlerr.ProgramLimitExceeded {
		t.Fatalf("got %v; want 54000", err)
	}
}

// roughTokens must not under-estimate the scanner by more than the factor
// split allows, whatever the quoting.
func TestRoughTokens(t *testing.T) {
	for _, s := range []string{
		"SELECT a, b::int, 1.5e3, x'ff', $1 FROM t WHERE c <= 'it''s' -- comment 'x\n AND d = E'\\'' || $$a'b$$ || $q$ $$ $q$",
		`SELECT "a""b", /* c /* nested */ 'd' */ e FROM f$1$ WHERE g$$ = 1`,
		"SELECT 0x1F, 1_000, U&'\\0041', n'x', b'01', E'\\\\' , 'a' 'b'",
		"SELECT a+-b, c!=d, e->>'f', g::text[], h[1:2]",
	} {
		res, err := pg_query.Scan(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := roughTokens(s); 2*got < len(res.Tokens) {
			t.Errorf("%s: roughTokens %d, scanner %d", s, got, len(res.Tokens))
		}
	}
	// A literal of many megabytes is one token; a list of as many bytes is
	// refused before the scanner allocates for each of its tokens.
	if _, err := Parse("SELECT length('" + strings.Repeat("1,", 4*MaxTokens) + "')"); err != nil {
		t.Fatalf("big literal: %v", err)
	}
	_, err := Parse("SELECT " + strings.Repeat("1,", 4*MaxTokens) + "1")
	if e := sqlerr.From(err); e == nil || e.Code != sqlerr.ProgramLimitExceeded {
		t.Fatalf("big list: got %v; want 54000", err)
	}
}
