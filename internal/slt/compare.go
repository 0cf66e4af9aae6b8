package slt

import (
	"errors"
	"regexp"
	"slices"
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
// normaliser does, so alignment in files does not matter.
func normalize(line string) string { return strings.Join(strings.Fields(line), " ") }

// compareRows compares actual rows with the expected lines under a sort
// mode; it returns the two sides as compared, for the failure message.
func compareRows(actual [][]string, expected []string, mode sortMode) (bool, []string, []string) {
	var got, want []string
	switch mode {
	case valueSort:
		for _, row := range actual {
			for _, v := range row {
				got = append(got, strings.Fields(v)...)
			}
		}
		for _, l := range expected {
			want = append(want, strings.Fields(l)...)
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
