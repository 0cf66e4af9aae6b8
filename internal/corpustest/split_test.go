package corpustest

import (
	"reflect"
	"testing"
)

func TestSplitSQL(t *testing.T) {
	script := `-- a comment; not a statement
SELECT 1; SELECT 'a;b' AS "x;y";
\set VERBOSITY terse
CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
SELECT E'it\'s; here', /* nested /* ; */ comment */ 2;
CREATE RULE r AS ON INSERT TO t DO (SELECT 1; SELECT 2);
COPY t FROM STDIN;
1	a;b
2	\N
\.
SELECT 3 \gset
SELECT $1::int
`
	got := SplitSQL(script)
	want := []Stmt{
		{SQL: "SELECT 1", Line: 2},
		{SQL: `SELECT 'a;b' AS "x;y"`, Line: 2},
		{SQL: "CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql", Line: 4},
		{SQL: `SELECT E'it\'s; here', /* nested /* ; */ comment */ 2`, Line: 5},
		{SQL: "CREATE RULE r AS ON INSERT TO t DO (SELECT 1; SELECT 2)", Line: 6},
		{SQL: "COPY t FROM STDIN", Line: 7, Copy: []byte("1\ta;b\n2\t\\N\n")},
		{SQL: "SELECT 3", Line: 11},
		{SQL: "SELECT $1::int", Line: 12},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%#v\nwant\n%#v", got, want)
	}
}

func TestSplitSLT(t *testing.T) {
	file := `# comment
statement ok
CREATE TABLE t (x int)

query I rowsort
SELECT x
FROM t
----
1
2

statement error
SELECT 1/0
----
db error: division by zero

skipif postgres
statement ok
INSERT INTO t VALUES (1)
`
	got := SplitSLT(file)
	want := []Stmt{
		{SQL: "CREATE TABLE t (x int)", Line: 3},
		{SQL: "SELECT x\nFROM t", Line: 6},
		{SQL: "SELECT 1/0", Line: 13},
		{SQL: "INSERT INTO t VALUES (1)", Line: 19},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%#v\nwant\n%#v", got, want)
	}
}
