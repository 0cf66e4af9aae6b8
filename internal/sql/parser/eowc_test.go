package parser

import "testing"

// EMIT ON WINDOW CLOSE is cut from the end of CREATE MATERIALIZED VIEW (and
// its EXPLAIN) only: not from other statements, not from inside a string
// literal, and comments around it do not hide it.
func TestEmitOnWindowClose(t *testing.T) {
	cases := []struct {
		sql  string
		eowc bool
		text string
	}{
		{"CREATE MATERIALIZED VIEW v AS SELECT 1 EMIT ON WINDOW CLOSE", true, "CREATE MATERIALIZED VIEW v AS SELECT 1"},
		{"explain create materialized view v as select 1 emit /* c */ on window\n close -- done", true, "explain create materialized view v as select 1"},
		{"CREATE MATERIALIZED VIEW v AS SELECT 'EMIT ON WINDOW CLOSE'", false, "CREATE MATERIALIZED VIEW v AS SELECT 'EMIT ON WINDOW CLOSE'"},
		{"CREATE MATERIALIZED VIEW v AS SELECT 1", false, "CREATE MATERIALIZED VIEW v AS SELECT 1"},
		{"CREATE OR REPLACE VIEW v AS SELECT 1 EMIT ON WINDOW CLOSE", true, "CREATE OR REPLACE VIEW v AS SELECT 1"}, // the binder refuses it
		// RisingWave's other place for the clause: before AS, blanked out.
		{"CREATE MATERIALIZED VIEW v\nemit on window close\nAS SELECT 1", true, "CREATE MATERIALIZED VIEW v\n                    \nAS SELECT 1"},
		{"CREATE MATERIALIZED VIEW v AS SELECT 1 AS emit", false, "CREATE MATERIALIZED VIEW v AS SELECT 1 AS emit"},
	}
	for _, c := range cases {
		st, err := ParseOne(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		if st.EmitOnWindowClose != c.eowc || st.Text != c.text {
			t.Errorf("%s: EmitOnWindowClose %v, Text %q; want %v, %q", c.sql, st.EmitOnWindowClose, st.Text, c.eowc, c.text)
		}
	}
	for _, bad := range []string{"SELECT 1 EMIT ON WINDOW CLOSE", "CREATE TABLE t AS SELECT 1 EMIT ON WINDOW CLOSE"} {
		if _, err := ParseOne(bad); err == nil {
			t.Errorf("%s: parsed; want a syntax error", bad)
		}
	}
}
