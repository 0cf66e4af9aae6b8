package slt

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const selftestDir = "../../tests/slt-selftest"

var selftestLabels = []string{"postgres", "selftest"}

func TestPassFileAgainstPostgres(t *testing.T) {
	t.Setenv("SLT_SELFTEST_VAR", "from-env")
	url := pgtest.NewDatabase(t)
	res, err := RunFiles(context.Background(), url, []string{filepath.Join(selftestDir, "pass.slt")},
		Options{Labels: selftestLabels, RecordTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Failures {
		t.Errorf("unexpected failure: %s", f)
	}
	// Two records are skipped by conditions; the one after halt is not
	// counted at all.
	if res.Skipped != 2 {
		t.Errorf("skipped = %d; want 2", res.Skipped)
	}
	if res.Passed != 30 {
		t.Errorf("passed = %d; want every record of pass.slt (30)", res.Passed)
	}
	t.Log(res.Summary())
}

// expectedFailures reads the "# FAIL-NEXT [file:line]" markers of a file.
func expectedFailures(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	pending := ""
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(text, "# FAIL-NEXT"); ok {
			if loc := strings.TrimSpace(rest); loc != "" {
				want = append(want, filepath.Join(filepath.Dir(path), loc))
			} else {
				pending = "here"
			}
			continue
		}
		if pending != "" && text != "" && !strings.HasPrefix(text, "#") {
			want = append(want, fmt.Sprintf("%s:%d", path, line))
			pending = ""
		}
	}
	return want
}

func TestFailFileReportsEachFailureAtItsLine(t *testing.T) {
	url := pgtest.NewDatabase(t)
	path := filepath.Join(selftestDir, "fail.slt")
	res, err := RunFiles(context.Background(), url, []string{path}, Options{Labels: selftestLabels, RecordTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := expectedFailures(t, path)
	var got []string
	for _, f := range res.Failures {
		got = append(got, fmt.Sprintf("%s:%d", f.File, f.Line))
	}
	if !slices.Equal(got, want) {
		var msgs []string
		for _, f := range res.Failures {
			msgs = append(msgs, f.String())
		}
		t.Fatalf("failures at\n  %s\nwant\n  %s\nmessages:\n%s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), strings.Join(msgs, "\n"))
	}
	if res.Failed != len(want) {
		t.Fatalf("Failed = %d; want %d", res.Failed, len(want))
	}
	// Spot-check that messages say what went wrong.
	for _, c := range []struct{ line, contains string }{
		{want[0], "expected:\n    1\n    3\nactual:\n    1\n    2"},
		{want[1], "duplicate key value"},
		{want[2], "succeeded; want an error"},
		{want[3], "does not match /no such thing/"},
		{want[4], "error text differs"},
		{want[5], "affected 2 rows; want 5"},
		{want[7], "exit status 3"},
		{want[8], "command output differs"},
		{want[9], "after 2 retries"},
		{want[10], "SLT_DEFINITELY_UNSET is not set"},
		{want[12], "no file matches"},
		{want[13], "parse error: unknown directive \"bogus\""},
	} {
		for _, f := range res.Failures {
			if fmt.Sprintf("%s:%d", f.File, f.Line) == c.line && !strings.Contains(f.Message, c.contains) {
				t.Errorf("%s: message %q does not contain %q", c.line, f.Message, c.contains)
			}
		}
	}
	// The passing records around the failures were counted.
	if res.Passed != 3 {
		t.Errorf("passed = %d; want 3 (the two setup statements and the count query)", res.Passed)
	}
}

func TestMainPrintsFailuresAndSummary(t *testing.T) {
	url := pgtest.NewDatabase(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "m.slt")
	os.WriteFile(file, []byte("statement ok\nSELECT 1\n\nquery I\nSELECT 2\n----\n3\n"), 0o644)
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--url", url, file}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code %d; want 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if lines[0] != file+":4: query result differs" || lines[len(lines)-1] != "1 passed, 1 failed" {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
	os.WriteFile(file, []byte("statement ok\nSELECT 1\n"), 0o644)
	stdout.Reset()
	if code := Main([]string{"--url", url, filepath.Join(dir, "*.slt")}, &stdout, &stderr); code != 0 || strings.TrimSpace(stdout.String()) != "1 passed, 0 failed" {
		t.Fatalf("exit %d, stdout %q; want 0 and the summary", code, stdout.String())
	}
	if code := Main(nil, &stdout, &stderr); code != 2 {
		t.Fatalf("no files: exit %d; want 2", code)
	}
	if code := Main([]string{"--url", url, filepath.Join(dir, "none-*.slt")}, &stdout, &stderr); code != 2 {
		t.Fatalf("pattern matching nothing: exit %d; want 2", code)
	}
}

func TestConnectionFailureStopsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.slt")
	os.WriteFile(file, []byte("statement ok\nSELECT 1\n\nstatement ok\nSELECT 2\n"), 0o644)
	res, err := RunFiles(context.Background(), "postgres://nobody@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", []string{file}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || res.Passed != 0 || !strings.Contains(res.Failures[0].Message, "cannot connect") || res.Failures[0].Line != 1 {
		t.Fatalf("result %+v; want one 'cannot connect' failure at line 1", res)
	}
}

func TestSessionPerFile(t *testing.T) {
	url := pgtest.NewDatabase(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.slt"), filepath.Join(dir, "b.slt")
	os.WriteFile(a, []byte("statement ok\nCREATE TEMP TABLE tmp (x int)\n\nstatement ok\nSET application_name = 'file_a'\n"), 0o644)
	// b runs in a new session: a's temp table and setting are gone.
	os.WriteFile(b, []byte("statement error does not exist\nSELECT * FROM tmp\n\nquery T\nSHOW application_name\n----\n(empty)\n"), 0o644)
	res, err := RunFiles(context.Background(), url, []string{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 || res.Passed != 4 {
		t.Fatalf("%s; failures %v", res.Summary(), res.Failures)
	}
}

func TestFailFast(t *testing.T) {
	url := pgtest.NewDatabase(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.slt"), filepath.Join(dir, "b.slt")
	os.WriteFile(a, []byte("statement ok\nSELEC 1\n\nstatement ok\nSELECT 1\n"), 0o644)
	os.WriteFile(b, []byte("statement ok\nSELECT 1\n"), 0o644)
	res, _ := RunFiles(context.Background(), url, []string{a, b}, Options{FailFast: true})
	if res.Failed != 1 || res.Passed != 0 {
		t.Fatalf("%s; want 0 passed, 1 failed with fail-fast", res.Summary())
	}
}

func TestRecordTimeout(t *testing.T) {
	url := pgtest.NewDatabase(t)
	file := filepath.Join(t.TempDir(), "slow.slt")
	os.WriteFile(file, []byte("statement ok\nSELECT pg_sleep(30)\n"), 0o644)
	start := time.Now()
	res, _ := RunFiles(context.Background(), url, []string{file}, Options{RecordTimeout: 300 * time.Millisecond})
	if res.Failed != 1 || !strings.Contains(res.Failures[0].Message, "timed out") {
		t.Fatalf("result %+v; want a timeout failure", res)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("timeout took %v", time.Since(start))
	}
}
