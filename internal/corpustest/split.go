// Package corpustest replays directories of SQL files (psql-style .sql
// scripts and sqllogictest .slt files) statement by statement against a
// `runnel serve` subprocess and reports every statement that kills,
// hangs or confuses the server (ARCHITECTURE.md I9): a process exit, a
// statement still running past its timeout, a server that stops
// answering, an internal error (SQLSTATE XX000) or an error whose text
// shows a recovered panic, and a resident set past a bound.
//
// The corpus is local input (see docs/testing.md): nothing is fetched.
// TestReplayCorpus is skipped unless RUNNEL_CORPUS_DIR names a directory.
package corpustest

import (
	"bufio"
	"regexp"
	"strings"
)

// Stmt is one statement of a corpus file.
type Stmt struct {
	SQL  string
	Line int // 1-based line where the statement starts
	// Copy is the data of a COPY ... FROM STDIN (psql scripts give it
	// inline, ended by a line `\.`); nil for other statements.
	Copy []byte
}

var copyFromStdin = regexp.MustCompile(`(?is)^\s*COPY\b.*\bFROM\s+STDIN\b`)

// lexState is where a psql-style scanner is between lines.
type lexState struct {
	quote   byte   // '\'' or '"' while inside one
	escapes bool   // the single-quoted string is E'...' (backslash escapes)
	dollar  string // the $tag$ of a dollar-quoted string, while inside one
	comment int    // depth of /* */ comments
	parens  int
}

// SplitSQL splits a psql script into statements the way psql does for
// the constructs that matter here: semicolons end a statement outside
// quotes, dollar quotes, comments and parentheses; lines that begin with a
// backslash are meta-commands and are dropped (a \g... meta-command sends
// the statement before it); the data lines after a COPY ... FROM STDIN up
// to `\.` belong to that statement.
func SplitSQL(text string) []Stmt {
	var out []Stmt
	var buf strings.Builder
	start := 0
	var st lexState
	emit := func() bool {
		s := strings.TrimSpace(buf.String())
		buf.Reset()
		st.parens = 0
		if s == "" || onlyComments(s) {
			return false
		}
		out = append(out, Stmt{SQL: s, Line: start})
		return true
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	lineNo := 0
	var copyData *strings.Builder
	for sc.Scan() {
		line := sc.Text()
		lineNo++
		if copyData != nil {
			if line == `\.` {
				out[len(out)-1].Copy = []byte(copyData.String())
				copyData = nil
				continue
			}
			copyData.WriteString(line)
			copyData.WriteByte('\n')
			continue
		}
		normal := st.quote == 0 && st.dollar == "" && st.comment == 0
		if normal && strings.HasPrefix(strings.TrimLeft(line, " \t"), `\`) {
			if strings.HasPrefix(strings.TrimLeft(line, " \t"), `\g`) {
				emit()
			}
			continue
		}
		if strings.TrimSpace(buf.String()) == "" {
			start = lineNo
		}
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case st.comment > 0:
				if c == '*' && i+1 < len(line) && line[i+1] == '/' {
					st.comment--
					buf.WriteString("*/")
					i++
					continue
				}
				if c == '/' && i+1 < len(line) && line[i+1] == '*' {
					st.comment++
					buf.WriteString("/*")
					i++
					continue
				}
				buf.WriteByte(c)
			case st.dollar != "":
				if c == '$' && strings.HasPrefix(line[i:], st.dollar) {
					buf.WriteString(st.dollar)
					i += len(st.dollar) - 1
					st.dollar = ""
					continue
				}
				buf.WriteByte(c)
			case st.quote != 0:
				buf.WriteByte(c)
				if st.escapes && c == '\\' && i+1 < len(line) {
					buf.WriteByte(line[i+1])
					i++
					continue
				}
				if c == st.quote {
					if i+1 < len(line) && line[i+1] == st.quote {
						buf.WriteByte(c)
						i++
						continue
					}
					st.quote = 0
				}
			default:
				switch {
				case c == '-' && i+1 < len(line) && line[i+1] == '-':
					i = len(line) // the rest of the line is a comment
				case c == '/' && i+1 < len(line) && line[i+1] == '*':
					st.comment++
					buf.WriteString("/*")
					i++
				case c == '\'':
					st.quote = '\''
					st.escapes = i > 0 && (line[i-1] == 'E' || line[i-1] == 'e') && (i == 1 || !isIdent(line[i-2]))
					buf.WriteByte(c)
				case c == '"':
					st.quote = '"'
					st.escapes = false
					buf.WriteByte(c)
				case c == '$' && (i == 0 || !isIdent(line[i-1])):
					if tag, ok := dollarTag(line[i:]); ok {
						st.dollar = tag
						buf.WriteString(tag)
						i += len(tag) - 1
					} else {
						buf.WriteByte(c)
					}
				case c == '(':
					st.parens++
					buf.WriteByte(c)
				case c == ')':
					if st.parens > 0 {
						st.parens--
					}
					buf.WriteByte(c)
				case c == ';' && st.parens == 0:
					if emit() && copyFromStdin.MatchString(out[len(out)-1].SQL) {
						copyData = &strings.Builder{}
					}
					start = lineNo
				case c == '\\':
					// A meta-command after SQL on the same line: \g sends it.
					if strings.HasPrefix(line[i:], `\g`) {
						emit()
					}
					i = len(line)
				default:
					buf.WriteByte(c)
				}
			}
		}
		buf.WriteByte('\n')
	}
	emit()
	return out
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// dollarTag returns the $tag$ s starts with.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		if s[j] == '$' {
			return s[:j+1], true
		}
		if !isIdent(s[j]) || (j == 1 && s[j] >= '0' && s[j] <= '9') {
			return "", false
		}
	}
	return "", false
}

func onlyComments(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "--") {
			return false
		}
	}
	return true
}

// SplitSLT returns the SQL of the statement and query records of a
// sqllogictest file; expected results, conditions and other directives
// are ignored (the replay checks survival, not answers).
func SplitSLT(text string) []Stmt {
	var out []Stmt
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		if len(f) == 0 || (f[0] != "statement" && f[0] != "query") {
			continue
		}
		start := i + 2
		var sql []string
		for i++; i < len(lines); i++ {
			l := lines[i]
			if strings.TrimSpace(l) == "" || strings.TrimSpace(l) == "----" {
				break
			}
			sql = append(sql, l)
		}
		// Skip the expected output up to the blank line ending the record.
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			i++
		}
		if s := strings.TrimSpace(strings.Join(sql, "\n")); s != "" {
			out = append(out, Stmt{SQL: s, Line: start})
		}
	}
	return out
}
