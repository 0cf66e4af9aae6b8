package parser

import (
	"testing"

	"github.com/runneldb/runnel/internal/sqlerr"
)

func TestTQL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want TQL
	}{
		{`TQL EVAL (0, 100, '10s') sum by (job) (rate(http_requests_total{code=~"5.."}[5m]))`,
			TQL{"0", "100", "10s", `sum by (job) (rate(http_requests_total{code=~"5.."}[5m]))`}},
		{"tql evaluate('2026-01-01T00:00:00Z','2026-01-01T01:00:00Z',60)up;",
			TQL{"2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", "60", "up"}},
		{"TQL EVAL (1.5, 2, '1''m') label_replace(up, 'a', '$1', 'b', '(.*)')",
			TQL{"1.5", "2", "1'm", "label_replace(up, 'a', '$1', 'b', '(.*)')"}},
	} {
		sts, err := Parse(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		got, ok := sts[0].Runnel.(*TQL)
		if len(sts) != 1 || !ok || *got != c.want {
			t.Fatalf("%s: got %+v, want %+v", c.in, sts[0].Runnel, c.want)
		}
	}
	for _, c := range []struct{ in, code string }{
		{"TQL EVAL (0, 1) up", sqlerr.SyntaxError},
		{"TQL EVAL (0, 1, 2)", sqlerr.SyntaxError},
		{"TQL EVAL 0, 1, 2 up", sqlerr.SyntaxError},
		{"TQL EVAL ('0, 1, 2) up", sqlerr.SyntaxError},
		{"TQL EXPLAIN (0, 1, 2) up", sqlerr.FeatureNotSupported},
	} {
		if _, err := Parse(c.in); sqlerr.Code(err) != c.code {
			t.Errorf("%s: got %v, want %s", c.in, err, c.code)
		}
	}
	// Not TQL: a table named tql_x.
	if sts, err := Parse("select * from tql_x"); err != nil || sts[0].Runnel != nil {
		t.Fatalf("select from tql_x: %v", err)
	}
}
