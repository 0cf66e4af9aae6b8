package clienttest

import (
	"math/big"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestClientArrays writes and reads array columns with pgx (bound array
// parameters and results in binary, and the simple protocol's text),
// psycopg2 (Python lists both ways) and psql (text output): each reads
// them as arrays, which needs the array type OIDs and both encodings.
func TestClientArrays(t *testing.T) {
	srv := servertest.Start(t)
	c := ctx(t)
	conn := servertest.Connect(t, srv.URL()+"&timezone=UTC&implicit_flush=true")
	if _, err := conn.Exec(c, `CREATE TABLE arr (id INT PRIMARY KEY, i INT[], b BIGINT[], t TEXT[], f FLOAT8[], ts TIMESTAMP[], n NUMERIC[])`); err != nil {
		t.Fatal(err)
	}
	a, b := "a", "b c"
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	row := []any{int32(1), []int32{1, 2, 3}, []int64{-1 << 40}, []*string{&a, nil, &b}, []float64{0.5, -2}, []time.Time{ts},
		[]pgtype.Numeric{{Int: big.NewInt(1234), Exp: -2, Valid: true}}}
	if _, err := conn.Exec(c, `INSERT INTO arr VALUES ($1, $2, $3, $4, $5, $6, $7)`, row...); err != nil {
		t.Fatalf("insert with array parameters: %v", err)
	}
	if _, err := conn.Exec(c, `INSERT INTO arr VALUES (2, '{}', NULL, '{NULL}', '{}', '{}', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(c, "FLUSH"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		var (
			i  []int32
			bb []int64
			tt []*string
			f  []float64
			tv []time.Time
			n  []pgtype.Numeric
		)
		if err := conn.QueryRow(c, `SELECT i, b, t, f, ts, n FROM arr WHERE id = 1`, mode).Scan(&i, &bb, &tt, &f, &tv, &n); err != nil {
			t.Fatalf("%v: scan arrays: %v", mode, err)
		}
		if !reflect.DeepEqual(i, []int32{1, 2, 3}) || !reflect.DeepEqual(bb, []int64{-1 << 40}) || len(tt) != 3 || *tt[0] != a || tt[1] != nil || *tt[2] != b ||
			!reflect.DeepEqual(f, []float64{0.5, -2}) || len(tv) != 1 || !tv[0].Equal(ts) || len(n) != 1 || n[0].Int.Int64() != 1234 || n[0].Exp != -2 {
			t.Errorf("%v: got %v %v %v %v %v %v", mode, i, bb, tt, f, tv, n)
		}
		var contains bool
		if err := conn.QueryRow(c, `SELECT $1::int[] @> ARRAY[2] AND 3 = ANY($1)`, mode, []int32{2, 3}).Scan(&contains); err != nil || !contains {
			t.Errorf("%v: array parameter in expressions: %v, %v", mode, contains, err)
		}
		var empty []int32
		var nulls []*string
		if err := conn.QueryRow(c, `SELECT i, t FROM arr WHERE id = 2`, mode).Scan(&empty, &nulls); err != nil || empty == nil || len(empty) != 0 || len(nulls) != 1 || nulls[0] != nil {
			t.Errorf("%v: empty and NULL-element arrays: %v %v, %v", mode, empty, nulls, err)
		}
	}
	got := servertest.QueryText(t, conn, `SELECT i, b, t, f, ts, n FROM arr ORDER BY id`)
	want := []string{`{1,2,3}|{-1099511627776}|{a,NULL,"b c"}|{0.5,-2}|{"2024-02-29 13:14:15.123456"}|{12.34}`, `{}|NULL|{NULL}|{}|{}|{}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("arrays as text:\ngot  %q\nwant %q", got, want)
	}

	t.Run("psql", func(t *testing.T) {
		need(t, "psql", have("/usr/bin/psql"))
		out := runClient(t, srv, ".", "psql", "-X", "-A", "-t", "-c", "SELECT t, i[2], cardinality(i) FROM arr WHERE id = 1")
		if out != "{a,NULL,\"b c\"}|2|3\n" {
			t.Errorf("psql: %q", out)
		}
	})
	t.Run("psycopg2", func(t *testing.T) {
		const py = "/usr/bin/python3"
		need(t, py, have(py))
		need(t, "psycopg2", exec.Command(py, "-c", "import psycopg2").Run() == nil)
		const script = `
import os, psycopg2
conn = psycopg2.connect(os.environ["RUNNEL_URL"])
conn.autocommit = True
cur = conn.cursor()
cur.execute("INSERT INTO arr (id, i, t) VALUES (%s, %s, %s)", (3, [7, 8], ["x", None]))
cur.execute("FLUSH")
cur.execute("SELECT i, t, f, n FROM arr WHERE id IN (1, 3) ORDER BY id")
rows = cur.fetchall()
assert rows[0][0] == [1, 2, 3] and rows[0][1] == ["a", None, "b c"] and rows[0][2] == [0.5, -2.0], rows
assert str(rows[0][3][0]) == "12.34", rows
assert rows[1][0] == [7, 8] and rows[1][1] == ["x", None], rows
cur.execute("SELECT %s = ANY(%s)", (8, [7, 8]))
assert cur.fetchone()[0] is True
print("ok")
`
		if out := runClient(t, srv, ".", py, "-c", script); out != "ok\n" {
			t.Errorf("psycopg2: %q", out)
		}
	})
}
