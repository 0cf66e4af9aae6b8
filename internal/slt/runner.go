package slt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options configure a run. The zero value is usable.
type Options struct {
	// Labels in force for skipif/onlyif; nil means {"runnel"}.
	Labels []string
	// StrictTypes fails a query whose type string has a different number
	// of letters than the result has columns (sqllogictest-rs, as RisingWave
	// runs it, does not check).
	StrictTypes bool
	// RecordTimeout bounds each attempt of a record (0: none).
	RecordTimeout time.Duration
	// FailFast stops the run at the first failure.
	FailFast bool
	// Log, when set, receives one line per file started and per failure as
	// it happens.
	Log io.Writer
}

// Failure is one record that did not pass (or a file that could not run).
type Failure struct {
	File    string
	Line    int
	Message string // may span several lines
	SQL     string // the record's SQL or command, if any
}

func (f Failure) String() string { return fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Message) }

// Result is the outcome of a run.
type Result struct {
	Passed   int
	Failed   int
	Skipped  int
	Failures []Failure
}

// Summary is the closing line: "N passed, M failed" with ", K skipped"
// when records were skipped.
func (r Result) Summary() string {
	s := fmt.Sprintf("%d passed, %d failed", r.Passed, r.Failed)
	if r.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", r.Skipped)
	}
	return s
}

// maxIncludeDepth stops include cycles.
const maxIncludeDepth = 16

// RunFiles runs each file in its own session against the server at url (a
// postgres:// URL). Failures of records are in the Result; the error is
// non-nil only when the run itself could not go on (ctx ended).
func RunFiles(ctx context.Context, url string, files []string, opts Options) (Result, error) {
	if opts.Labels == nil {
		opts.Labels = []string{"runnel"}
	}
	var res Result
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r := &fileRun{opts: opts, url: url, res: &res, conns: map[string]*pgx.Conn{}}
		r.run(ctx, f)
		if opts.FailFast && res.Failed > 0 {
			break
		}
	}
	return res, ctx.Err()
}

// fileRun is the state of one top-level file: its sessions, its
// $__TEST_DIR__ and the controls in force.
type fileRun struct {
	opts  Options
	url   string
	res   *Result
	conns map[string]*pgx.Conn

	testDir      string
	substitution bool
	defaultSort  sortMode
	halted       bool
	stopped      bool // fail-fast or a lost session: skip the rest
}

func (r *fileRun) logf(format string, args ...any) {
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, format+"\n", args...)
	}
}

func (r *fileRun) fail(file string, line int, sql, format string, args ...any) {
	f := Failure{File: file, Line: line, SQL: sql, Message: fmt.Sprintf(format, args...)}
	r.res.Failed++
	r.res.Failures = append(r.res.Failures, f)
	r.logf("FAIL %s", f)
	if r.opts.FailFast {
		r.stopped = true
	}
}

func (r *fileRun) run(ctx context.Context, file string) {
	r.logf("running %s", file)
	defer func() {
		for _, c := range r.conns {
			c.Close(context.Background())
		}
		if r.testDir != "" {
			os.RemoveAll(r.testDir)
		}
	}()
	r.runFile(ctx, file, 0)
}

func (r *fileRun) runFile(ctx context.Context, file string, depth int) {
	src, err := os.ReadFile(file)
	if err != nil {
		r.fail(file, 0, "", "cannot read: %v", err)
		return
	}
	recs, err := parse(string(src))
	if err != nil {
		line := 0
		var pe *parseError
		if errors.As(err, &pe) {
			line = pe.line
			err = errors.New(pe.msg)
		}
		r.fail(file, line, "", "parse error: %v", err)
		return
	}
	for _, rec := range recs {
		if r.halted || r.stopped || ctx.Err() != nil {
			return
		}
		if !r.conditionsHold(rec) {
			if rec.kind.counted() {
				r.res.Skipped++
			}
			continue
		}
		switch rec.kind {
		case kindHalt:
			r.halted = true
		case kindControl:
			switch rec.control {
			case "substitution":
				r.substitution = rec.text == "on"
			case "sortmode":
				r.defaultSort, _ = parseSortMode(rec.text)
			}
		case kindSleep:
			select {
			case <-ctx.Done():
			case <-time.After(rec.dur):
			}
		case kindInclude:
			r.include(ctx, file, rec, depth)
		default:
			r.runRecord(ctx, file, rec)
		}
	}
}

func (r *fileRun) conditionsHold(rec *record) bool {
	for _, c := range rec.conditions {
		has := false
		for _, l := range r.opts.Labels {
			if l == c.label {
				has = true
			}
		}
		if c.only != has {
			return false
		}
	}
	return true
}

func (r *fileRun) include(ctx context.Context, file string, rec *record, depth int) {
	if depth+1 > maxIncludeDepth {
		r.fail(file, rec.line, "", "include nested deeper than %d (a cycle?)", maxIncludeDepth)
		return
	}
	pattern := rec.text
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(filepath.Dir(file), pattern)
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		r.fail(file, rec.line, "", "include %s: %v", rec.text, err)
		return
	}
	if len(matches) == 0 {
		r.fail(file, rec.line, "", "include %s: no file matches", rec.text)
		return
	}
	sort.Strings(matches)
	for _, m := range matches {
		r.runFile(ctx, m, depth+1)
		if r.halted || r.stopped {
			return
		}
	}
}

// runRecord runs a statement, query or system record with its retries and
// counts the outcome.
func (r *fileRun) runRecord(ctx context.Context, file string, rec *record) {
	var msg string
	for attempt := 0; ; attempt++ {
		var fatal bool
		msg, fatal = r.attempt(ctx, file, rec)
		if msg == "" {
			r.res.Passed++
			return
		}
		if fatal || attempt >= rec.retries || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(rec.backoff):
		}
	}
	if rec.retries > 0 {
		msg = fmt.Sprintf("%s\n(after %d retries)", msg, rec.retries)
	}
	r.fail(file, rec.line, rec.text, "%s", msg)
}

// attempt runs a record once; it returns "" on success or what went wrong,
// and whether the session is lost (no point in retrying or going on).
func (r *fileRun) attempt(ctx context.Context, file string, rec *record) (string, bool) {
	if r.opts.RecordTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.RecordTimeout)
		defer cancel()
	}
	if rec.kind == kindSystem {
		return r.system(ctx, file, rec), false
	}
	sql := rec.text
	if r.substitution {
		var err error
		if sql, err = r.substitute(file, sql); err != nil {
			return err.Error(), false
		}
	}
	conn, err := r.conn(ctx, rec.connection)
	if err != nil {
		r.stopped = true
		return fmt.Sprintf("cannot connect (rest of the file skipped): %v", err), true
	}
	rows, affected, err := execute(ctx, conn, sql)
	if err != nil && ctx.Err() != nil && r.opts.RecordTimeout > 0 {
		return fmt.Sprintf("timed out after %v: %v", r.opts.RecordTimeout, err), false
	}
	if rec.expectErr {
		return checkError(rec, err), false
	}
	if err != nil {
		return fmt.Sprintf("unexpected error: %s", errorText(err)), false
	}
	if rec.kind == kindStatement {
		if rec.hasCount && affected != int64(rec.count) {
			return fmt.Sprintf("statement affected %d rows; want %d", affected, rec.count), false
		}
		return "", false
	}
	return r.checkQuery(rec, rows), false
}

func checkError(rec *record, err error) string {
	if err == nil {
		return "statement succeeded; want an error"
	}
	text := errorText(err)
	switch {
	case rec.errRegex != nil:
		if !errorMatchesRegex(err, rec.errRegex) {
			return fmt.Sprintf("error does not match /%s/:\n%s", rec.errRegex, indent(text))
		}
	case rec.hasErrText:
		if !textMatches(text, rec.errText) {
			return fmt.Sprintf("error text differs\nexpected:\n%s\nactual:\n%s", indent(rec.errText), indent(text))
		}
	}
	return ""
}

func (r *fileRun) checkQuery(rec *record, rows *resultSet) string {
	if r.opts.StrictTypes && rows.columns > 0 && len(rec.types) != rows.columns {
		return fmt.Sprintf("query returns %d columns; the type string %q says %d", rows.columns, rec.types, len(rec.types))
	}
	mode := rec.sort
	if mode == sortUnset {
		mode = r.defaultSort
	}
	actual, expected := realColumns(rec.types, rows.rows, rec.results)
	ok, got, want := compareRows(actual, expected, mode)
	if ok {
		return ""
	}
	return fmt.Sprintf("query result differs\nexpected:\n%s\nactual:\n%s", indentLines(want), indentLines(got))
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (nothing)"
	}
	return indentLines(strings.Split(s, "\n"))
}

func indentLines(lines []string) string {
	if len(lines) == 0 {
		return "    (no rows)"
	}
	return "    " + strings.Join(lines, "\n    ")
}

// conn returns the named session, connecting on first use (and again if
// the server dropped it).
func (r *fileRun) conn(ctx context.Context, name string) (*pgx.Conn, error) {
	if name == "" {
		name = "default"
	}
	if c := r.conns[name]; c != nil && !c.IsClosed() {
		return c, nil
	}
	c, err := pgx.Connect(ctx, r.url)
	if err != nil {
		return nil, err
	}
	r.conns[name] = c
	return c, nil
}

type resultSet struct {
	columns int
	rows    [][]string
}

// execute runs sql with the simple query protocol, so every value comes
// back in PostgreSQL's text form, and collects the rows of every statement.
func execute(ctx context.Context, conn *pgx.Conn, sql string) (*resultSet, int64, error) {
	results, err := conn.PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, 0, err
	}
	rs := &resultSet{}
	var affected int64
	for _, res := range results {
		if res.Err != nil {
			return nil, 0, res.Err
		}
		if len(res.FieldDescriptions) > 0 {
			rs.columns = len(res.FieldDescriptions)
		}
		for _, row := range res.Rows {
			vals := make([]string, len(row))
			for i, v := range row {
				vals[i] = renderValue(v)
			}
			rs.rows = append(rs.rows, vals)
		}
		affected += res.CommandTag.RowsAffected()
	}
	return rs, affected, nil
}

// system runs a shell command; it returns "" on success.
func (r *fileRun) system(ctx context.Context, file string, rec *record) string {
	dir, err := r.ensureTestDir()
	if err != nil {
		return err.Error()
	}
	// Shell commands get the special variables by plain replacement; the
	// shell expands environment variables itself.
	cmdText := r.replaceSpecial(rec.text)
	shell := "bash"
	if _, err := exec.LookPath(shell); err != nil {
		shell = "sh"
	}
	cmd := exec.CommandContext(ctx, shell, "-c", cmdText)
	cmd.Env = append(os.Environ(), "__TEST_DIR__="+dir, "__DATABASE__="+r.database())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("command failed: %v\nstdout:\n%s\nstderr:\n%s", err, indent(stdout.String()), indent(stderr.String()))
	}
	if rec.hasOutput && !textMatches(stdout.String(), rec.output) {
		return fmt.Sprintf("command output differs\nexpected:\n%s\nactual:\n%s", indent(rec.output), indent(stdout.String()))
	}
	return ""
}

func (r *fileRun) ensureTestDir() (string, error) {
	if r.testDir == "" {
		d, err := os.MkdirTemp("", "slt-test-dir-")
		if err != nil {
			return "", fmt.Errorf("create $__TEST_DIR__: %w", err)
		}
		r.testDir = d
	}
	return r.testDir, nil
}

func (r *fileRun) database() string {
	u, err := url.Parse(r.url)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

func (r *fileRun) special(name string) (string, bool) {
	switch name {
	case "__TEST_DIR__":
		d, err := r.ensureTestDir()
		return d, err == nil
	case "__NOW__":
		return strconv.FormatInt(time.Now().UnixNano(), 10), true
	case "__DATABASE__":
		return r.database(), true
	}
	return "", false
}

var specialRE = regexp.MustCompile(`\$(\{)?(__TEST_DIR__|__NOW__|__DATABASE__)(\})?`)

func (r *fileRun) replaceSpecial(s string) string {
	return specialRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := specialRE.FindStringSubmatch(m)
		if (sub[1] == "") != (sub[3] == "") {
			return m // unbalanced braces: leave it to the shell
		}
		v, _ := r.special(sub[2])
		return v
	})
}

// substitute expands $NAME, ${NAME} and ${NAME:default} from the special
// variables and the environment; \$ and \\ are escapes. An undefined
// variable without a default is an error.
func (r *fileRun) substitute(file, s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && (s[i+1] == '$' || s[i+1] == '\\') {
			b.WriteByte(s[i+1])
			i++
			continue
		}
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("substitution: unclosed ${ in %q", s)
			}
			inner := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(inner, ":")
			v, ok := r.lookup(name)
			if !ok {
				if !hasDef {
					return "", fmt.Errorf("substitution: variable %s is not set", name)
				}
				expanded, err := r.substitute(file, def)
				if err != nil {
					return "", err
				}
				v = expanded
			}
			b.WriteString(v)
			i += 2 + end
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i+1 && s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i+1 { // "$" not followed by a name ($1, $$): literal
			b.WriteByte(c)
			continue
		}
		name := s[i+1 : j]
		v, ok := r.lookup(name)
		if !ok {
			return "", fmt.Errorf("substitution: variable %s is not set", name)
		}
		b.WriteString(v)
		i = j - 1
	}
	return b.String(), nil
}

func (r *fileRun) lookup(name string) (string, bool) {
	if v, ok := r.special(name); ok {
		return v, true
	}
	return os.LookupEnv(name)
}
