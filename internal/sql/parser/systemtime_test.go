package parser

import (
	"slices"
	"strings"
	"testing"
)

func TestCutForSystemTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		at   []string // the text at each offset, up to the next space
		same bool     // no clause: returned unchanged
	}{
		{in: "SELECT * FROM s JOIN v FOR SYSTEM_TIME AS OF PROCTIME() ON s.k = v.k", at: []string{"v"}},
		{in: "select * from s left join public.v for system_time as of proctime() as x on true", at: []string{"public.v"}},
		{in: `SELECT * FROM s, "My V" FOR SYSTEM_TIME AS OF PROCTIME() y, w FOR SYSTEM_TIME AS OF PROCTIME()`, at: []string{`"My`, "w"}},
		{in: "SELECT 'x FOR SYSTEM_TIME AS OF PROCTIME()' FROM t", same: true},
		{in: "SELECT system_time FROM t", same: true},
		{in: "SELECT 1", same: true},
	} {
		out, at := cutForSystemTime(tc.in)
		if len(out) != len(tc.in) {
			t.Errorf("%q: length %d; want %d", tc.in, len(out), len(tc.in))
		}
		if tc.same {
			if out != tc.in || at != nil {
				t.Errorf("%q: changed to %q (at %v)", tc.in, out, at)
			}
			continue
		}
		if strings.Contains(strings.ToLower(out), "system_time") {
			t.Errorf("%q: clause left in %q", tc.in, out)
		}
		var got []string
		for _, a := range at {
			got = append(got, strings.Fields(tc.in[a:])[0])
		}
		if !slices.Equal(got, tc.at) {
			t.Errorf("%q: names at %v; want %v", tc.in, got, tc.at)
		}
		if _, err := ParseOne(tc.in); err != nil {
			t.Errorf("%q: %v", tc.in, err)
		}
	}
}
