package slt

import (
	"errors"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// renderValue prints one result value as sqllogictest files spell it.
func renderValue(v []byte) string {
	switch {
	case v == nil:
		return "NULL"
	case len(v) == 0:
		return "(empty)"
	}
	return string(v)
}

// normalize collapses runs of whitespace, as sqllogictest-rs's default
// normaliser does, so alignment in files does not matter, and spells each
// word in its canonical form (canonicalWord).
func normalize(line string) string {
	f := strings.Fields(line)
	for i, w := range f {
		f[i] = canonicalWord(w)
	}
	return strings.Join(f, " ")
}

var (
	// zeroMinuteOffset is the time part of a timestamptz whose UTC offset
	// has zero minutes, written with them: 02:00:00+00:00.
	zeroMinuteOffset = regexp.MustCompile(`^(\d{2}:\d{2}:\d{2}(?:\.\d+)?[+-]\d{2}):00$`)
	// exponentFloat is a float in exponent notation: 1e-06, -1.5E+20.
	exponentFloat = regexp.MustCompile(`^[+-]?\d+(?:\.\d+)?[eE][+-]?\d+$`)
)

// canonicalWord maps the spellings PostgreSQL and RisingWave print
// differently for the same value to one form, so files written against
// either server compare equal on values, not on print style:
//
//   - a UTC offset with zero minutes: PostgreSQL prints +00, RisingWave
//     +00:00 (2002-02-02 02:00:00+00 vs 2002-02-02 02:00:00+00:00);
//   - a float in exponent notation: PostgreSQL prints 1e-06, RisingWave
//     0.000001 (the same float64).
//
// Anything else is compared as written.
func canonicalWord(w string) string {
	if m := zeroMinuteOffset.FindStringSubmatch(w); m != nil {
		return m[1]
	}
	if exponentFloat.MatchString(w) {
		if f, err := strconv.ParseFloat(w, 64); err == nil && !math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return w
}

// plainDecimal is a decimal number without an exponent: -12, 2.50.
var plainDecimal = regexp.MustCompile(`^-?\d+(?:\.\d+)?$`)

// canonicalDecimal drops trailing fractional zeros (2.50 and
// 2.5000000000000000 are 2.5; 1.000 is 1; -0 is 0), and writes an
// infinite float one way: PostgreSQL prints Infinity and -Infinity,
// RisingWave +Inf and -Inf (the same float64).
func canonicalDecimal(w string) string {
	switch strings.ToLower(w) {
	case "inf", "+inf", "infinity", "+infinity":
		return "Infinity"
	case "-inf", "-infinity":
		return "-Infinity"
	}
	if !plainDecimal.MatchString(w) {
		return w
	}
	if strings.Contains(w, ".") {
		w = strings.TrimRight(strings.TrimRight(w, "0"), ".")
	}
	if w == "-0" {
		w = "0"
	}
	return w
}

// realColumns compares the values of columns typed R (real) by value:
// a decimal printed with more or fewer trailing zeros (PostgreSQL prints
// avg(int) as 2.5000000000000000, RisingWave as 2.50) is the same value,
// and so is an infinity spelled Infinity or +Inf.
// It applies to rows whose values line up with the type string (one word
// per column); other rows are left as they are.
func realColumns(types string, actual [][]string, expected []string) ([][]string, []string) {
	if !strings.Contains(types, "R") {
		return actual, expected
	}
	outA := make([][]string, len(actual))
	for i, row := range actual {
		outA[i] = row
		// One word per value, as the expected line must have to line up.
		if len(row) != len(types) || slices.ContainsFunc(row, func(v string) bool { return len(strings.Fields(v)) != 1 }) {
			continue
		}
		cp := slices.Clone(row)
		for j, v := range cp {
			if types[j] == 'R' {
				cp[j] = canonicalDecimal(strings.TrimSpace(v))
			}
		}
		outA[i] = cp
	}
	outE := make([]string, len(expected))
	for i, l := range expected {
		outE[i] = l
		f := strings.Fields(l)
		if len(f) != len(types) {
			continue
		}
		for j := range f {
			if types[j] == 'R' {
				f[j] = canonicalDecimal(f[j])
			}
		}
		outE[i] = strings.Join(f, " ")
	}
	return outA, outE
}

// compareRows compares actual rows with the expected lines under a sort
// mode; it returns the two sides as compared, for the failure message.
func compareRows(actual [][]string, expected []string, mode sortMode) (bool, []string, []string) {
	var got, want []string
	switch mode {
	case valueSort:
		for _, row := range actual {
			for _, v := range row {
				got = append(got, strings.Fields(normalize(v))...)
			}
		}
		for _, l := range expected {
			want = append(want, strings.Fields(normalize(l))...)
		}
		slices.Sort(got)
		slices.Sort(want)
	default:
		for _, row := range actual {
			got = append(got, normalize(strings.Join(row, " ")))
		}
		for _, l := range expected {
			want = append(want, normalize(l))
		}
		if mode == rowSort {
			slices.Sort(got)
			slices.Sort(want)
		}
	}
	return slices.Equal(got, want), got, want
}

// errorText renders a server error the way RisingWave's test driver does:
// "db error: ERROR: message", then DETAIL and HINT lines.
func errorText(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		var b strings.Builder
		b.WriteString("db error: ")
		b.WriteString(pe.Severity)
		b.WriteString(": ")
		b.WriteString(pe.Message)
		if pe.Detail != "" {
			b.WriteString("\nDETAIL: ")
			b.WriteString(pe.Detail)
		}
		if pe.Hint != "" {
			b.WriteString("\nHINT: ")
			b.WriteString(pe.Hint)
		}
		return b.String()
	}
	return "db error: " + err.Error()
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// errorMatchesRegex searches the error text for re, or matches the SQLSTATE.
func errorMatchesRegex(err error, re *regexp.Regexp) bool {
	if re.MatchString(errorText(err)) {
		return true
	}
	code := sqlState(err)
	return code != "" && re.String() == code
}

const ignoreMarker = "<slt:ignore>"

// errorTextMatches compares an error (or command output) with an expected
// text exactly, after trimming surrounding whitespace and trailing spaces
// on each line; <slt:ignore> in the expected text matches anything.
func textMatches(actual, expected string) bool {
	a, e := trimLines(actual), trimLines(expected)
	if !strings.Contains(e, ignoreMarker) {
		return a == e
	}
	parts := strings.Split(e, ignoreMarker)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re, err := regexp.Compile(`^(?s:` + strings.Join(parts, `.*`) + `)$`)
	return err == nil && re.MatchString(a)
}

func trimLines(s string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}
