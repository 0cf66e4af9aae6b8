package difftest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMinimize shrinks a failing view trace (the file a view mismatch
// names) to a minimal statement list that still shows the mismatch:
//
//	RUNNEL_DIFF_MINIMIZE=/tmp/difftest-123.sql RUNNEL_DIFF_VIEW=v3 \
//	  go test -run TestMinimize -v ./internal/difftest/
//
// Multi-row INSERTs are split into single rows first; then statements are
// removed greedily, in halving chunks, while the mismatch persists.
func TestMinimize(t *testing.T) {
	file := os.Getenv("RUNNEL_DIFF_MINIMIZE")
	view := os.Getenv("RUNNEL_DIFF_VIEW")
	if file == "" || view == "" {
		t.Skip("set RUNNEL_DIFF_MINIMIZE=<trace file> and RUNNEL_DIFF_VIEW=<view name>")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	stmts := parseTrace(string(data))
	q := "SELECT * FROM " + view
	if !reproduces(t, stmts, q) {
		t.Fatalf("the full trace (%d statements) does not reproduce the mismatch", len(stmts))
	}
	for chunk := len(stmts) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i < len(stmts); {
			cand := append(append([]string{}, stmts[:i]...), stmts[min(i+chunk, len(stmts)):]...)
			if reproduces(t, cand, q) {
				stmts = cand
				continue
			}
			i += chunk
		}
	}
	t.Logf("minimal reproduction (%d statements), then FLUSH and %s:\n%s", len(stmts), q, strings.Join(stmts, ";\n")+";")
}

// parseTrace turns a trace file back into statements, splitting
// multi-row INSERTs and dropping comments.
func parseTrace(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		if i := strings.Index(line, "; --"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSuffix(line, ";")
		if strings.HasPrefix(line, "INSERT INTO ") {
			at := strings.Index(line, " VALUES ")
			for _, row := range splitTop(line[at+len(" VALUES "):]) {
				out = append(out, line[:at]+" VALUES "+row)
			}
			continue
		}
		out = append(out, line)
	}
	return out
}

// reproduces runs stmts on a fresh pair and reports whether q differs.
// Statements that either system refuses make the candidate invalid.
func reproduces(t *testing.T, stmts []string, q string) bool {
	found := false
	t.Run(fmt.Sprintf("try%d", len(stmts)), func(t *testing.T) {
		// Logged so a candidate that hangs Runnel can be recovered.
		t.Logf("candidate:\n%s;", strings.Join(stmts, ";\n"))
		p := newPair(t)
		for _, s := range stmts {
			if s == "FLUSH" {
				// A single session's FLUSH fails only when Runnel
				// recovered from an actor failure: that reproduces a
				// failure too.
				if err := execOn(p.rw, "FLUSH"); err != nil {
					found = true
					return
				}
				continue
			}
			pgSQL := s
			if strings.HasPrefix(s, "CREATE MATERIALIZED VIEW ") {
				pgSQL = "CREATE VIEW " + strings.TrimPrefix(s, "CREATE MATERIALIZED VIEW ")
			}
			if execOn(p.pg, pgSQL) != nil || execOn(p.rw, s) != nil {
				return
			}
		}
		if execOn(p.rw, "FLUSH") != nil {
			found = true
			return
		}
		want := query(p.pg, q, canon{})
		got := query(p.rw, q, canon{})
		if want.err != nil {
			return
		}
		ok, _ := sameMultiset(want.rows, got.rows)
		found = got.err != nil || !ok
	})
	return found
}

// splitTop splits a comma-separated SQL list at top-level commas.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	inStr := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\'':
			inStr = !inStr
		case inStr:
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case ch == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
