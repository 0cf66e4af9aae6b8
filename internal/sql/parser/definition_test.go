package parser

import (
	"strings"
	"testing"
)

func TestViewQueryText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE VIEW v AS SELECT 1", "SELECT 1"},
		{"create materialized view mv (a, b) with (x = 'as') as select x as a, y from t", "select x as a, y from t"},
		{`CREATE VIEW "as" AS (SELECT 1) WITH LOCAL CHECK OPTION`, "(SELECT 1)"},
		{"CREATE VIEW v AS SELECT 1 /* c */ WITH CASCADED CHECK OPTION", "SELECT 1"},
		{"CREATE MATERIALIZED VIEW v AS SELECT 1 WITH NO DATA", "SELECT 1"},
		{"EXPLAIN (VERBOSE) CREATE MATERIALIZED VIEW v AS SELECT * FROM (SELECT 1) WITH DATA", "SELECT * FROM (SELECT 1)"},
		{"CREATE VIEW v AS -- c\n SELECT 'a' AS b -- end", "SELECT 'a' AS b"},
	} {
		got, ok := ViewQueryText(c.in)
		if !ok || got != c.want {
			t.Errorf("ViewQueryText(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	if got, ok := ViewQueryText("CREATE VIEW v"); ok {
		t.Errorf("no AS: got %q", got)
	}
}

func TestColumnExprText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE TABLE t (a int DEFAULT (1 + 2) * 3 NOT NULL, b int)", "(1 + 2) * 3"},
		{"CREATE TABLE t (a text DEFAULT 'a,b' COLLATE \"C\")", "'a,b'"},
		{"CREATE TABLE t (a int CONSTRAINT d DEFAULT f(1, 2), b int)", "f(1, 2)"},
		{"CREATE TABLE t (a int[] DEFAULT ARRAY[1, 2])", "ARRAY[1, 2]"},
		{"CREATE TABLE t (a int DEFAULT 1 PRIMARY KEY)", "1"},
	} {
		from := strings.Index(strings.ToUpper(c.in), "DEFAULT")
		if i := strings.Index(c.in, "CONSTRAINT"); i >= 0 {
			from = i
		}
		limit := -1
		if i := strings.Index(c.in, " NOT NULL"); i >= 0 {
			limit = i + 1
		}
		if i := strings.Index(c.in, " PRIMARY"); i >= 0 {
			limit = i + 1
		}
		got, ok := ColumnExprText(c.in, from, limit)
		if !ok || got != c.want {
			t.Errorf("ColumnExprText(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}
