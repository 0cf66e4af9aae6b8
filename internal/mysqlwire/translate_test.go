package mysqlwire

import (
	"reflect"
	"testing"
)

func TestTranslate(t *testing.T) {
	for _, tc := range []struct {
		in      string
		prepare bool
		want    []string
		params  []int
	}{
		{in: "SELECT `a b`, `x``y` FROM `t`", want: []string{`SELECT "a b", "x` + "`" + `y" FROM "t"`}},
		{in: `SELECT "str", 'it\'s', 'a''b', 'tab\there', 'pct\%'`, want: []string{`SELECT 'str', 'it''s', 'a''b', 'tab` + "\t" + `here', 'pct\%'`}},
		{in: "SELECT 'a' 'b'  \"c\"", want: []string{`SELECT 'abc'`}},
		{in: "SELECT 1 # comment\n; SELECT 2;", want: []string{"SELECT 1", "SELECT 2"}},
		{in: "/*!40101 SET NAMES utf8 */; SELECT /* keep */ 1 -- end", want: []string{"SELECT /* keep */ 1 -- end"}},
		{in: "SELECT * FROM t WHERE a = ? AND b = '?' LIMIT ?, ?", prepare: true,
			want: []string{"SELECT * FROM t WHERE a = $1 AND b = '?' LIMIT $3 OFFSET $2"}, params: []int{3}},
		{in: "SELECT * FROM t LIMIT 10, 20", want: []string{"SELECT * FROM t LIMIT 20 OFFSET 10"}},
		{in: "SELECT * FROM t LIMIT 10", want: []string{"SELECT * FROM t LIMIT 10"}},
		{in: "SELECT '\"'; SELECT \"'\"", want: []string{`SELECT '"'`, `SELECT ''''`}},
		{in: " ; ; ", want: nil},
		{in: `SELECT _binary'\0a', _utf8mb4'x'`, want: []string{`SELECT '\x0061'::bytea, 'x'`}},
	} {
		got, err := translate(tc.in, tc.prepare)
		if err != nil {
			t.Errorf("translate(%q): %v", tc.in, err)
			continue
		}
		var sqls []string
		var params []int
		for _, g := range got {
			sqls = append(sqls, g.sql)
			params = append(params, g.nparams)
		}
		if !reflect.DeepEqual(sqls, tc.want) {
			t.Errorf("translate(%q) = %q; want %q", tc.in, sqls, tc.want)
		}
		if tc.params != nil && !reflect.DeepEqual(params, tc.params) {
			t.Errorf("translate(%q) params = %v; want %v", tc.in, params, tc.params)
		}
	}
	for _, bad := range []string{"SELECT 'open", "SELECT `open", "SELECT /* open", "SELECT 'nul\\0'", "SELECT * FROM t LIMIT ?, 1"} {
		if _, err := translate(bad, false); err == nil {
			t.Errorf("translate(%q) succeeded; want an error", bad)
		}
	}
}

// FuzzTranslate: no input makes the translator panic (I9).
func FuzzTranslate(f *testing.F) {
	for _, s := range []string{"SELECT `a`, 'b\\'', \"c\" # x", "LIMIT ?, ?", "/*! x */", "'\\", "`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = translate(s, true)
		_, _ = translate(s, false)
	})
}
