package slt

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseRecords(t *testing.T) {
	src := `# comment
statement ok
CREATE TABLE t (a int);

statement error relation "x y" does not exist
SELECT * FROM "x y";

query IT rowsort mylabel retry 3 backoff 2s
SELECT 1,
  'a';
----
1    a

skipif postgres
onlyif runnel
connection c2
statement count 3
INSERT INTO t VALUES (1), (2), (3);

statement error
SELECT 1/0;
----
db error: ERROR: line one

line three after a single blank line

statement ok
SELECT 'after one blank and a keyword';

system ok
echo hi
----
hi


retry 2 backoff 500ms
query error
SELECT x;
----
boom

sleep 1sec

include other/*.slt

control substitution on

halt
`
	recs, err := parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 12 {
		t.Fatalf("%d records; want 12", len(recs))
	}
	check := func(i int, cond bool, what string) {
		t.Helper()
		if !cond {
			t.Errorf("record %d (line %d): %s; got %+v", i, recs[i].line, what, recs[i])
		}
	}
	check(0, recs[0].kind == kindStatement && recs[0].line == 2 && recs[0].text == "CREATE TABLE t (a int);", "statement ok")
	check(1, recs[1].expectErr && recs[1].errRegex.String() == `relation "x y" does not exist`, "error regex with spaces and quotes")
	check(2, recs[2].kind == kindQuery && recs[2].types == "IT" && recs[2].sort == rowSort && recs[2].retries == 3 && recs[2].backoff == 2*time.Second, "query header")
	check(2, recs[2].text == "SELECT 1,\n  'a';" && len(recs[2].results) == 1, "query body and results")
	check(3, recs[3].hasCount && recs[3].count == 3 && recs[3].connection == "c2" && len(recs[3].conditions) == 2 && recs[3].line == 17, "conditions, connection, count")
	check(4, recs[4].hasErrText && recs[4].errText == "db error: ERROR: line one\n\nline three after a single blank line", "multi-line error with an inner blank line")
	check(5, recs[5].kind == kindStatement && recs[5].line == 27, "record right after a single blank line ends the block")
	check(6, recs[6].kind == kindSystem && recs[6].hasOutput && recs[6].output == "hi", "system output")
	check(7, recs[7].kind == kindQuery && recs[7].expectErr && recs[7].retries == 2 && recs[7].backoff == 500*time.Millisecond && recs[7].errText == "boom", "standalone retry line and query error text")
	check(8, recs[8].kind == kindSleep && recs[8].dur == time.Second, "sleep 1sec")
	check(9, recs[9].kind == kindInclude && recs[9].text == "other/*.slt", "include")
	check(10, recs[10].kind == kindControl && recs[10].control == "substitution" && recs[10].text == "on", "control")
	check(11, recs[11].kind == kindHalt, "halt")
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"statment ok\nSELECT 1\n", `line 1: unknown directive "statment"`},
		{"statement maybe\nSELECT 1\n", "line 1: unknown statement kind"},
		{"statement ok\n", "line 1: record has no SQL"},
		{"\n\nquery I sorted extra\nSELECT 1\n", "line 3: unknown sort mode"},
		{"query I1\nSELECT 1\n", "line 1: bad column types"},
		{"statement ok\nSELECT 1\n----\n1\n", "line 1: ---- after a statement"},
		{"statement error (\nSELECT 1\n", "line 1: bad error regex"},
		{"statement ok retry x backoff 1s\nSELECT 1\n", "line 1: retry count"},
		{"statement ok retry 1 backoff soon\nSELECT 1\n", "line 1: bad duration"},
		{"statement ok\nSELECT 1\n\nskipif x\n", "skipif/onlyif/connection/retry at the end"},
		{"control substitution maybe\n", "line 1: unknown control"},
		{"control sortmode shuffled\n", "line 1: unknown sort mode"},
	} {
		_, err := parse(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parse(%q) = %v; want an error containing %q", c.src, err, c.want)
		}
	}
}

func TestParseRisingWaveSpellings(t *testing.T) {
	recs, err := parse("query iiI\nSELECT 1, 2, 3\n----\n1 2 3\n\nstatement err\nSELECT x\n\nstatement err no such\nSELECT x\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].types != "iiI" {
		t.Fatalf("lower-case column types: %+v", recs)
	}
	if !recs[1].expectErr || recs[1].errRegex != nil {
		t.Errorf("statement err: %+v", recs[1])
	}
	if !recs[2].expectErr || recs[2].errRegex == nil || recs[2].errRegex.String() != "no such" {
		t.Errorf("statement err <regex>: %+v", recs[2])
	}
}

// TestCompareCanonicalWords: values PostgreSQL and RisingWave print
// differently compare equal; different values still differ.
func TestCompareCanonicalWords(t *testing.T) {
	for _, c := range []struct {
		actual, expected string
		ok               bool
	}{
		{"2002-02-02 02:00:00+00", "2002-02-02 02:00:00+00:00", true},
		{"2002-02-02 02:00:00.5-08", "2002-02-02 02:00:00.5-08:00", true},
		{"2002-02-02 02:00:00+05:30", "2002-02-02 02:00:00+05:30", true},
		{"2002-02-02 02:00:00+05", "2002-02-02 02:00:00+05:30", false},
		{"2002-02-02 02:00:00+01", "2002-02-02 02:00:00+00:00", false},
		{"1e-06", "0.000001", true},
		{"-1.5e+20", "-150000000000000000000", true},
		{"1e-06", "0.00001", false},
		{"2.50", "2.5", false},
		{"1e400", "1e400", true},
	} {
		for _, mode := range []sortMode{noSort, rowSort, valueSort} {
			ok, got, want := compareRows([][]string{{c.actual}}, []string{c.expected}, mode)
			if ok != c.ok {
				t.Errorf("compare %q with %q (mode %d) = %v (got %q want %q); want %v", c.actual, c.expected, mode, ok, got, want, c.ok)
			}
		}
	}
}

// TestRealColumns: R columns compare decimals by value; other columns and
// rows that do not line up with the types compare as written.
func TestRealColumns(t *testing.T) {
	for _, c := range []struct {
		types    string
		actual   []string
		expected string
		ok       bool
	}{
		{"IR", []string{"1", "2.5000000000000000"}, "1 2.50", true},
		{"IR", []string{"1", "1.00000000000000000000"}, "1 1", true},
		{"IR", []string{"1", "-0.0"}, "1 0", true},
		{"IR", []string{"1", "2.51"}, "1 2.5", false},
		{"II", []string{"1", "2.50"}, "1 2.5", false},
		{"RR", []string{"10", "100"}, "10 1", false},
		{"IR", []string{"1", "NULL"}, "1 NULL", true},
		{"RR", []string{"Infinity", "-Infinity"}, "+Inf -Inf", true},
		{"RR", []string{"-Infinity", "NaN"}, "-inf NaN", true},
		{"RR", []string{"Infinity", "1"}, "-Inf 1", false},
		{"TR", []string{"Infinity", "1"}, "+Inf 1", false}, // a text column compares as written
		{"TR", []string{"a b", "2.5"}, "a b 2.50", false},  // the expected words do not line up
	} {
		a, e := realColumns(c.types, [][]string{c.actual}, []string{c.expected})
		ok, got, want := compareRows(a, e, noSort)
		if ok != c.ok {
			t.Errorf("%s %q vs %q = %v (got %q want %q); want %v", c.types, c.actual, c.expected, ok, got, want, c.ok)
		}
	}
}

func TestCompareRows(t *testing.T) {
	actual := [][]string{{"2", "b"}, {"1", "a  z"}}
	for _, c := range []struct {
		expected []string
		mode     sortMode
		ok       bool
	}{
		{[]string{"2 b", "1 a z"}, noSort, true},
		{[]string{"1 a z", "2 b"}, noSort, false},
		{[]string{"1   a z", "2\tb"}, rowSort, true},
		{[]string{"a", "b", "1", "2", "z"}, valueSort, true},
		{[]string{"2 b"}, rowSort, false},
	} {
		ok, got, want := compareRows(actual, c.expected, c.mode)
		if ok != c.ok {
			t.Errorf("compareRows(%v, mode %d) = %v (got %q want %q); want %v", c.expected, c.mode, ok, got, want, c.ok)
		}
	}
	if renderValue(nil) != "NULL" || renderValue([]byte{}) != "(empty)" || renderValue([]byte("t")) != "t" {
		t.Error("renderValue")
	}
}

func TestTextMatches(t *testing.T) {
	if !textMatches("  a\nb  \n", "a\nb") {
		t.Error("surrounding and trailing whitespace must not matter")
	}
	if !textMatches(`ERROR: constraint "t_pkey" violated`, `ERROR: constraint "<slt:ignore>" violated`) {
		t.Error("<slt:ignore> must match a variable part")
	}
	if textMatches("ERROR: x.y", "ERROR: x<slt:ignore>z") || textMatches("a", "b") {
		t.Error("mismatch accepted")
	}
	if textMatches("a+b", "a<slt:ignore>+c") {
		t.Error("regex metacharacters in the expected text must be literal")
	}
}

func TestSubstitute(t *testing.T) {
	t.Setenv("SLT_X", "ex")
	r := &fileRun{url: "postgres://u@h:1/mydb"}
	defer func() {
		if r.testDir != "" {
			os.RemoveAll(r.testDir)
		}
	}()
	for _, c := range []struct{ in, want string }{
		{"$SLT_X ${SLT_X} ${SLT_NOPE:def} ${SLT_NOPE:$SLT_X-d}", "ex ex def ex-d"},
		{`\$SLT_X \\ $1 $$ $`, `$SLT_X \ $1 $$ $`},
		{"$__DATABASE__", "mydb"},
		{"x$SLT_X.y", "xex.y"},
	} {
		got, err := r.substitute("f", c.in)
		if err != nil || got != c.want {
			t.Errorf("substitute(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := r.substitute("f", "$SLT_NOT_SET_AT_ALL"); err == nil {
		t.Error("undefined variable accepted")
	}
	got := r.replaceSpecial("cat $__TEST_DIR__/x ${__DATABASE__} $HOME")
	if r.testDir == "" || got != "cat "+r.testDir+"/x mydb $HOME" {
		t.Errorf("replaceSpecial = %q", got)
	}
}
