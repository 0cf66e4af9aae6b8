package pgwire

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

var copyTestCols = []Column{{Name: "a", Type: types.Int32}, {Name: "b", Type: types.Text}}

func renderRows(rows []types.Row) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, " ")
}

func parseAll(t *testing.T, opts CopyOptions, data string, chunks []int) (string, error) {
	t.Helper()
	p := newCopyParser(opts, copyTestCols, &formatOptions{})
	var all []types.Row
	rest := data
	for _, n := range chunks {
		n = min(n, len(rest))
		rows, err := p.feed([]byte(rest[:n]))
		if err != nil {
			return "", err
		}
		for _, r := range rows {
			all = append(all, r.Copy())
		}
		rest = rest[n:]
	}
	rows, err := p.feed([]byte(rest))
	if err != nil {
		return "", err
	}
	all = append(all, rows...)
	rows, err = p.finish()
	if err != nil {
		return "", err
	}
	all = append(all, rows...)
	return renderRows(all), nil
}

var copyParseCases = []struct {
	name string
	opts CopyOptions
	in   string
	want string // rendered rows, or "ERR <code>"
}{
	{"text basic", DefaultCopyOptions(CopyText), "1\tx\n2\t\\N\n", "(1, x) (2, NULL)"},
	{"text escapes", DefaultCopyOptions(CopyText), "1\ta\\tb\\nc\\\\d\\101\\x41\\q\n", "(1, a\tb\nc\\dAAq)"},
	{"text escaped delimiter", DefaultCopyOptions(CopyText), "1\ta\\\tb\n", "(1, a\tb)"},
	{"text crlf and no final newline", DefaultCopyOptions(CopyText), "1\tx\r\n2\ty", "(1, x) (2, y)"},
	{"text end marker", DefaultCopyOptions(CopyText), "1\tx\n\\.\n2\tgarbage\n", "(1, x)"},
	{"text empty string is not null", DefaultCopyOptions(CopyText), "1\t\n", "(1, )"},
	{"text header", CopyOptions{Format: CopyText, Delimiter: '\t', Null: `\N`, Header: true}, "a\tb\n1\tx\n", "(1, x)"},
	{"text custom delimiter and null", CopyOptions{Format: CopyText, Delimiter: '|', Null: "NULL"}, "1|NULL\n2|\\N\n", `(1, NULL) (2, N)`},
	{"text missing column", DefaultCopyOptions(CopyText), "1\n", "ERR 22P04"},
	{"text extra column", DefaultCopyOptions(CopyText), "1\tx\ty\n", "ERR 22P04"},
	{"text bad int", DefaultCopyOptions(CopyText), "one\tx\n", "ERR 22P02"},
	{"text trailing backslash", DefaultCopyOptions(CopyText), "1\tx\\\n", "ERR 22P04"},
	{"csv basic", DefaultCopyOptions(CopyCSV), "1,x\n2,\n3,\"\"\n", "(1, x) (2, NULL) (3, )"},
	{"csv quoting", DefaultCopyOptions(CopyCSV), "1,\"a,b\"\"c\"\n2,\"line1\nline2\"\n", "(1, a,b\"c) (2, line1\nline2)"},
	{"csv header", CopyOptions{Format: CopyCSV, Delimiter: ',', Quote: '"', Escape: '"', Header: true}, "a,b\n1,x\n", "(1, x)"},
	{"csv escape char", CopyOptions{Format: CopyCSV, Delimiter: ',', Quote: '"', Escape: '\\'}, "1,\"a\\\"b\\\\c\"\n", "(1, a\"b\\c)"},
	{"csv backslash is data", DefaultCopyOptions(CopyCSV), "1,a\\N\n", "(1, a\\N)"},
	{"csv null string quoted", CopyOptions{Format: CopyCSV, Delimiter: ',', Quote: '"', Escape: '"', Null: "NA"}, "1,NA\n2,\"NA\"\n", "(1, NULL) (2, NA)"},
	{"csv end marker", DefaultCopyOptions(CopyCSV), "1,x\n\\.\n", "(1, x)"},
	{"csv unterminated quote", DefaultCopyOptions(CopyCSV), "1,\"abc\n", "ERR 22P04"},
	{"csv crlf", DefaultCopyOptions(CopyCSV), "1,x\r\n2,y\r\n", "(1, x) (2, y)"},
}

func TestCopyParser(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, tc := range copyParseCases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(chunks []int) {
				got, err := parseAll(t, tc.opts, tc.in, chunks)
				if err != nil {
					got = "ERR " + sqlerr.Code(err)
				}
				if got != tc.want {
					t.Fatalf("chunks %v (seed %d): got %q; want %q", chunks, seed, got, tc.want)
				}
			}
			check(nil)
			// one byte at a time
			ones := make([]int, len(tc.in))
			for i := range ones {
				ones[i] = 1
			}
			check(ones)
			// random splits
			for k := 0; k < 20; k++ {
				var chunks []int
				for left := len(tc.in); left > 0; {
					n := 1 + rng.IntN(max(1, left))
					chunks = append(chunks, n)
					left -= n
				}
				check(chunks)
			}
		})
	}
}

// TestCopyRoundTrip formats random rows with the formatter and parses them
// back, in both formats.
func TestCopyRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	alphabet := []string{"a", ",", "\"", "\\", "\t", "\n", "\r", "N", "é", " ", ".", "|"}
	for _, opts := range []CopyOptions{DefaultCopyOptions(CopyText), DefaultCopyOptions(CopyCSV),
		{Format: CopyCSV, Delimiter: '|', Quote: '\'', Escape: '\\', Null: `\N`, Header: true},
		{Format: CopyText, Delimiter: ',', Null: "", Header: true}} {
		var rows []types.Row
		for i := 0; i < 200; i++ {
			var b strings.Builder
			for j := rng.IntN(6); j > 0; j-- {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			r := types.Row{types.DInt32(int32(rng.Int32())), types.DVarchar(b.String())}
			if rng.IntN(5) == 0 {
				r[1] = types.NullDatum
			}
			if opts.Null == "" && opts.Format == CopyText && !r[1].IsNull() && r[1].Str() == "" {
				r[1] = types.NullDatum // indistinguishable by definition
			}
			rows = append(rows, r)
		}
		f := &copyFormatter{opts: opts, cols: copyTestCols, fopts: &formatOptions{}}
		var data []byte
		if opts.Header {
			data = f.appendHeader(data)
		}
		for _, r := range rows {
			var err error
			if data, err = f.appendRow(data, r); err != nil {
				t.Fatal(err)
			}
		}
		got, err := parseAll(t, opts, string(data), []int{7, 13, 1, 100})
		if err != nil {
			t.Fatalf("opts %+v (seed %d): %v\n%q", opts, seed, err, data)
		}
		if want := renderRows(rows); got != want {
			t.Fatalf("opts %+v (seed %d):\n got %q\nwant %q\ndata %q", opts, seed, got, want, data)
		}
	}
}
