package slt

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

type recordKind int

const (
	kindStatement recordKind = iota
	kindQuery
	kindSystem
	kindInclude
	kindControl
	kindSleep
	kindHalt
)

// counted reports whether records of this kind are tests that pass or fail.
func (k recordKind) counted() bool { return k == kindStatement || k == kindQuery || k == kindSystem }

type sortMode int

const (
	sortUnset sortMode = iota
	noSort
	rowSort
	valueSort
)

func parseSortMode(s string) (sortMode, bool) {
	switch s {
	case "nosort":
		return noSort, true
	case "rowsort":
		return rowSort, true
	case "valuesort":
		return valueSort, true
	}
	return sortUnset, false
}

type condition struct {
	only  bool // onlyif; otherwise skipif
	label string
}

// record is one parsed directive with what it expects.
type record struct {
	kind recordKind
	line int // 1-based line of the header

	text string // SQL, shell command, include glob, control value

	// statement / query
	expectErr  bool
	errRegex   *regexp.Regexp // nil: any error (unless errText set)
	errText    string
	hasErrText bool
	count      int
	hasCount   bool
	types      string
	sort       sortMode
	results    []string
	hasResults bool

	// system
	output    string
	hasOutput bool

	// control
	control string

	// sleep
	dur time.Duration

	retries int
	backoff time.Duration

	conditions []condition
	connection string
}

// parseError is a malformed file; it is reported at its line.
type parseError struct {
	line int
	msg  string
}

func (e *parseError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// recordKeywords start a record; a single blank line followed by one of
// them ends a multi-line error or output block.
var recordKeywords = map[string]bool{
	"statement": true, "query": true, "system": true, "include": true, "control": true,
	"sleep": true, "halt": true, "skipif": true, "onlyif": true, "connection": true,
	"retry": true, "subtest": true, "hash-threshold": true,
}

func startsRecord(line string) bool {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "#") {
		return true
	}
	f := strings.Fields(t)
	return len(f) > 0 && recordKeywords[f[0]]
}

// parse splits a file into records.
func parse(src string) ([]*record, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	p := &parser{lines: lines}
	return p.parse()
}

type parser struct {
	lines []string
	i     int
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &parseError{line: line, msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parse() ([]*record, error) {
	var (
		out        []*record
		conds      []condition
		connection string
		retries    int
		backoff    time.Duration
	)
	for p.i < len(p.lines) {
		lineNo := p.i + 1
		t := strings.TrimSpace(p.lines[p.i])
		if t == "" || strings.HasPrefix(t, "#") {
			p.i++
			continue
		}
		f := strings.Fields(t)
		p.i++
		var rec *record
		switch f[0] {
		case "skipif", "onlyif":
			if len(f) < 2 {
				return nil, p.errf(lineNo, "%s needs a label", f[0])
			}
			conds = append(conds, condition{only: f[0] == "onlyif", label: f[1]})
			continue
		case "connection":
			if len(f) != 2 {
				return nil, p.errf(lineNo, "usage: connection <name>")
			}
			connection = f[1]
			continue
		case "retry":
			n, d, err := parseRetry(f)
			if err != nil {
				return nil, p.errf(lineNo, "%v", err)
			}
			retries, backoff = n, d
			continue
		case "subtest", "hash-threshold":
			continue
		case "statement":
			r, err := p.statement(lineNo, f)
			if err != nil {
				return nil, err
			}
			rec = r
		case "query":
			r, err := p.query(lineNo, f)
			if err != nil {
				return nil, err
			}
			rec = r
		case "system":
			r, err := p.system(lineNo, f)
			if err != nil {
				return nil, err
			}
			rec = r
		case "include":
			if len(f) != 2 {
				return nil, p.errf(lineNo, "usage: include <glob>")
			}
			rec = &record{kind: kindInclude, text: f[1]}
		case "control":
			if len(f) != 3 {
				return nil, p.errf(lineNo, "usage: control substitution on|off, or control sortmode <mode>")
			}
			switch {
			case f[1] == "substitution" && (f[2] == "on" || f[2] == "off"):
			case f[1] == "sortmode":
				if _, ok := parseSortMode(f[2]); !ok {
					return nil, p.errf(lineNo, "unknown sort mode %q", f[2])
				}
			default:
				return nil, p.errf(lineNo, "unknown control %q", strings.Join(f[1:], " "))
			}
			rec = &record{kind: kindControl, control: f[1], text: f[2]}
		case "sleep":
			if len(f) != 2 {
				return nil, p.errf(lineNo, "usage: sleep <duration>")
			}
			d, err := parseDuration(f[1])
			if err != nil {
				return nil, p.errf(lineNo, "%v", err)
			}
			rec = &record{kind: kindSleep, dur: d}
		case "halt":
			rec = &record{kind: kindHalt}
		default:
			return nil, p.errf(lineNo, "unknown directive %q", f[0])
		}
		rec.line = lineNo
		rec.conditions, conds = conds, nil
		rec.connection, connection = connection, ""
		if retries > 0 && rec.retries == 0 {
			rec.retries, rec.backoff = retries, backoff
		}
		retries, backoff = 0, 0
		out = append(out, rec)
	}
	if len(conds) > 0 || connection != "" || retries > 0 {
		return nil, p.errf(len(p.lines), "skipif/onlyif/connection/retry at the end of the file applies to no record")
	}
	return out, nil
}

// splitRetry removes a trailing "retry <n> backoff <d>" from header fields.
func splitRetry(f []string) ([]string, int, time.Duration, error) {
	for i, w := range f {
		if w == "retry" && len(f)-i == 4 && f[i+2] == "backoff" {
			n, d, err := parseRetry(f[i:])
			if err != nil {
				return nil, 0, 0, err
			}
			return f[:i], n, d, nil
		}
	}
	return f, 0, 0, nil
}

func parseRetry(f []string) (int, time.Duration, error) {
	if len(f) != 4 || f[0] != "retry" || f[2] != "backoff" {
		return 0, 0, fmt.Errorf("usage: retry <n> backoff <duration>")
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 1 {
		return 0, 0, fmt.Errorf("retry count %q must be a positive integer", f[1])
	}
	d, err := parseDuration(f[3])
	if err != nil {
		return 0, 0, err
	}
	return n, d, nil
}

// parseDuration accepts Go durations ("1.5s", "200ms") and the bare-unit
// spellings of sqllogictest files ("5sec", "1min").
func parseDuration(s string) (time.Duration, error) {
	r := strings.NewReplacer("secs", "s", "sec", "s", "mins", "m", "min", "m", "msec", "ms")
	if d, err := time.ParseDuration(r.Replace(s)); err == nil && d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("bad duration %q", s)
}

// body reads SQL (or a command) up to a blank line or "----"; it reports
// whether "----" followed.
func (p *parser) body(header int) (string, bool, error) {
	var sql []string
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		t := strings.TrimSpace(l)
		if t == "" {
			break
		}
		p.i++
		if t == "----" {
			if len(sql) == 0 {
				return "", false, p.errf(header, "record has no SQL before ----")
			}
			return strings.Join(sql, "\n"), true, nil
		}
		sql = append(sql, l)
	}
	if len(sql) == 0 {
		return "", false, p.errf(header, "record has no SQL")
	}
	return strings.Join(sql, "\n"), false, nil
}

// block reads a multi-line expected text (error message, command output):
// it ends at two consecutive blank lines, at the end of the file, or at a
// single blank line followed by the start of another record.
func (p *parser) block() string {
	var out []string
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if strings.TrimSpace(l) == "" {
			next := p.i + 1
			if next >= len(p.lines) || strings.TrimSpace(p.lines[next]) == "" || startsRecord(p.lines[next]) {
				p.i++
				break
			}
		}
		out = append(out, l)
		p.i++
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// results reads query result lines up to a blank line.
func (p *parser) results() []string {
	var out []string
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if strings.TrimSpace(l) == "" {
			break
		}
		out = append(out, l)
		p.i++
	}
	return out
}

// errorHeader finds the regex after "statement error" or "query error".
var errorHeader = regexp.MustCompile(`^\S+\s+(?:error|err)\s(.*)$`)

// expectError parses what follows "error" in a header.
func (p *parser) expectError(line int, rec *record, rest []string) error {
	rec.expectErr = true
	if len(rest) == 0 {
		return nil
	}
	// The regex is the rest of the header line as written.
	raw := strings.TrimSpace(p.lines[line-1])
	pattern := ""
	if m := errorHeader.FindStringSubmatch(raw); m != nil {
		pattern = strings.TrimSpace(m[1])
	}
	if rec.retries > 0 {
		return p.errf(line, "retry is supported with an error regex only in the ---- form")
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return p.errf(line, "bad error regex %q: %v", pattern, err)
	}
	rec.errRegex = re
	return nil
}

func (p *parser) statement(line int, f []string) (*record, error) {
	f, n, d, err := splitRetry(f)
	if err != nil {
		return nil, p.errf(line, "%v", err)
	}
	rec := &record{kind: kindStatement, retries: n, backoff: d}
	if len(f) < 2 {
		return nil, p.errf(line, "usage: statement ok|error|count")
	}
	switch f[1] {
	case "ok":
		if len(f) != 2 {
			return nil, p.errf(line, "unexpected %q after statement ok", strings.Join(f[2:], " "))
		}
	case "count":
		if len(f) != 3 {
			return nil, p.errf(line, "usage: statement count <n>")
		}
		c, err := strconv.Atoi(f[2])
		if err != nil || c < 0 {
			return nil, p.errf(line, "bad count %q", f[2])
		}
		rec.count, rec.hasCount = c, true
	case "error", "err":
		// "err" is the older spelling some RisingWave files still use.
		if err := p.expectError(line, rec, f[2:]); err != nil {
			return nil, err
		}
	default:
		return nil, p.errf(line, "unknown statement kind %q (want ok, error or count)", f[1])
	}
	sql, dashes, err := p.body(line)
	if err != nil {
		return nil, err
	}
	rec.text = sql
	if dashes {
		if !rec.expectErr || rec.errRegex != nil {
			return nil, p.errf(line, "---- after a statement is only for an expected error text (statement error with no regex)")
		}
		rec.errText, rec.hasErrText = p.block(), true
	}
	return rec, nil
}

func (p *parser) query(line int, f []string) (*record, error) {
	f, n, d, err := splitRetry(f)
	if err != nil {
		return nil, p.errf(line, "%v", err)
	}
	rec := &record{kind: kindQuery, retries: n, backoff: d}
	if len(f) < 2 {
		return nil, p.errf(line, "usage: query <types> [sortmode] [label], or query error")
	}
	if f[1] == "error" {
		if err := p.expectError(line, rec, f[2:]); err != nil {
			return nil, err
		}
	} else {
		rec.types = f[1]
		// sqllogictest-rs takes any letter (an unknown one means "any
		// type"); files use lower case too (query iiiI).
		for _, c := range rec.types {
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '?') {
				return nil, p.errf(line, "bad column types %q (letters such as I, T, R)", rec.types)
			}
		}
		if len(f) >= 3 {
			m, ok := parseSortMode(f[2])
			if !ok && len(f) > 3 {
				return nil, p.errf(line, "unknown sort mode %q", f[2])
			}
			rec.sort = m // not a sort mode: a label, ignored
		}
		if len(f) > 4 {
			return nil, p.errf(line, "unexpected %q in query header", strings.Join(f[4:], " "))
		}
	}
	sql, dashes, err := p.body(line)
	if err != nil {
		return nil, err
	}
	rec.text = sql
	if dashes {
		if rec.expectErr {
			if rec.errRegex != nil {
				return nil, p.errf(line, "---- after query error <regex>: give either a regex or an error text")
			}
			rec.errText, rec.hasErrText = p.block(), true
		} else {
			rec.results, rec.hasResults = p.results(), true
		}
	}
	return rec, nil
}

func (p *parser) system(line int, f []string) (*record, error) {
	f, n, d, err := splitRetry(f)
	if err != nil {
		return nil, p.errf(line, "%v", err)
	}
	if len(f) != 2 || f[1] != "ok" {
		return nil, p.errf(line, "usage: system ok")
	}
	rec := &record{kind: kindSystem, retries: n, backoff: d}
	cmd, dashes, err := p.body(line)
	if err != nil {
		return nil, err
	}
	rec.text = cmd
	if dashes {
		rec.output, rec.hasOutput = p.block(), true
	}
	return rec, nil
}
