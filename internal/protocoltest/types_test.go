package protocoltest

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// typeCases lists every supported type with text inputs that stress it:
// limits, special values, non-canonical spellings, unicode, empty values.
// PostgreSQL decides what each must print as, in text and in binary.
var typeCases = []struct {
	typ    string
	inputs []string
}{
	{"boolean", []string{"true", "f", "yes", "OFF", "1", " t "}},
	{"smallint", []string{"0", "-32768", "32767", " 42 ", "+7"}},
	{"integer", []string{"0", "-2147483648", "2147483647", "-1"}},
	{"bigint", []string{"0", "-9223372036854775808", "9223372036854775807", "1000000000000"}},
	{"real", []string{"1.5", "-0", "0.1", "NaN", "Infinity", "-Infinity", "3.4028235e+38", "1e-45", "123456.79"}},
	{"double precision", []string{"0.1", "-0", "NaN", "Infinity", "-Infinity", "1.7976931348623157e+308", "5e-324", "1e+100", "123456789012345680"}},
	{"numeric", []string{"0", "-0.000000001", "1.10", "-123.450",
		"12345678901234567890123456789012345678901234567890.123456789012345678901234567890",
		"NaN", "1e-20", "99999999999999999999", "0.00", "Infinity", "-Infinity"}},
	{"numeric(10,2)", []string{"0", "1.005", "-12345678.99", "3"}},
	{"varchar", []string{"", "héllo ☃", "tab\there", "quote's \"q\"", "back\\slash", strings.Repeat("long ", 300)}},
	{"varchar(5)", []string{"", "abc", "héllo"}},
	{"text", []string{"", "line\nbreak", "🦀 crab", "NULL", "\\N", "日本語"}},
	{"bytea", []string{`\x`, `\x00ff10`, `abc`, `\001\002`, `\\`, `\xDEADBEEF`}},
	{"date", []string{"2024-02-29", "1970-01-01", "0001-01-01", "9999-12-31", "infinity", "-infinity", "2000-1-2"}},
	{"time", []string{"00:00:00", "23:59:59.999999", "24:00:00", "12:34:56.5", "1:2:3"}},
	// Runnel's timestamps end 30 years before PostgreSQL's (294247-01-01,
	// see internal/types/datetime.go), so the last value is Runnel's.
	{"timestamp", []string{"2001-09-09 01:46:40.5", "1970-01-01 00:00:00", "0001-01-01 00:00:00", "2000-02-29 12:00:00.000001",
		"294246-12-31 23:59:59.999999", "infinity", "-infinity", "2024-01-01T10:00:00"}},
	{"timestamptz", []string{"2001-09-09 01:46:40.5+02", "1970-01-01 00:00:00+00", "2024-06-01 12:00:00-07:30",
		"infinity", "-infinity", "2000-01-01 00:00:00"}},
	{"interval", []string{"1 year 2 mons 3 days 04:05:06.7", "-1 year -2 days +03:00:00", "00:00:00", "-00:00:01",
		"P1Y2M3DT4H5M6S", "1 day -1 second", "178000000 years", "0.5 seconds", "-2 mons"}},
	{"jsonb", []string{`{"a": [1, 2, {"b": null}], "c": "d"}`, `[]`, `{}`, `"ü"`, `1.50`, `null`, `true`,
		`{"b":1,"a":2,"a":3}`, `"\u00e9\n"`, `[1e3, -0.0]`}},
}

// TestEveryTypeRoundTrip writes every value of every type through a
// prepared INSERT, once as a text parameter and once as a binary one (the
// binary encoding taken from PostgreSQL), plus NULL in both formats, then
// reads the table back in text and binary result formats over the
// extended protocol and in text over the simple protocol. Runnel's bytes
// must equal PostgreSQL's, as must the parameter and column types.
func TestEveryTypeRoundTrip(t *testing.T) {
	p := newPair(t)
	ctx := testCtx(t)
	servertest.Exec(t, p.rw, "SET RW_IMPLICIT_FLUSH TO true")
	for i, tc := range typeCases {
		t.Run(strings.ReplaceAll(tc.typ, " ", "_"), func(t *testing.T) {
			table := fmt.Sprintf("rt%d", i)
			p.exec(t, fmt.Sprintf("CREATE TABLE %s (id int PRIMARY KEY, v %s)", table, tc.typ))

			// PostgreSQL's binary encoding of each input.
			bins := make([][]byte, len(tc.inputs))
			for j, in := range tc.inputs {
				res := p.pg.PgConn().ExecParams(ctx, "SELECT $1::"+tc.typ, [][]byte{[]byte(in)}, nil, []int16{0}, []int16{1}).Read()
				if res.Err != nil {
					t.Fatalf("postgresql rejects input %q: %v", in, res.Err)
				}
				bins[j] = res.Rows[0][0]
			}

			insert := "INSERT INTO " + table + " (id, v) VALUES ($1, $2)"
			var paramOIDs [2][]uint32
			for side, c := range []*pgconn.PgConn{p.rw.PgConn(), p.pg.PgConn()} {
				name := "ins_" + table
				sd, err := c.Prepare(ctx, name, insert, nil)
				if err != nil {
					t.Fatalf("%s: prepare %s: %v", serverName(side), insert, err)
				}
				paramOIDs[side] = sd.ParamOIDs
				for j, in := range tc.inputs {
					for f, val := range [][]byte{[]byte(in), bins[j]} {
						id := []byte(strconv.Itoa(10*j + f))
						res := c.ExecPrepared(ctx, name, [][]byte{id, val}, []int16{0, int16(f)}, nil).Read()
						if res.Err != nil {
							t.Fatalf("%s: insert %q as %s parameter: %v", serverName(side), in, formatName(f), res.Err)
						}
					}
				}
				for f := range 2 {
					id := []byte(strconv.Itoa(1000 + f))
					if res := c.ExecPrepared(ctx, name, [][]byte{id, nil}, []int16{0, int16(f)}, nil).Read(); res.Err != nil {
						t.Fatalf("%s: insert NULL as %s parameter: %v", serverName(side), formatName(f), res.Err)
					}
				}
				if err := c.Deallocate(ctx, name); err != nil {
					t.Fatalf("%s: deallocate: %v", serverName(side), err)
				}
			}
			if fmt.Sprint(paramOIDs[0]) != fmt.Sprint(paramOIDs[1]) {
				t.Errorf("parameter types of %q: runnel %v; postgresql %v", insert, paramOIDs[0], paramOIDs[1])
			}

			sel := "SELECT id, v FROM " + table + " ORDER BY id"
			for f := range 2 {
				got := renderResult(p.rw.PgConn().ExecParams(ctx, sel, nil, nil, nil, []int16{int16(f)}).Read())
				want := renderResult(p.pg.PgConn().ExecParams(ctx, sel, nil, nil, nil, []int16{int16(f)}).Read())
				if got != want {
					t.Errorf("%s results differ, %s\nrunnel:\n%s\npostgresql:\n%s", formatName(f), diffLines(got, want), got, want)
				}
			}
			got := renderMulti(p.rw.PgConn().Exec(ctx, sel))
			want := renderMulti(p.pg.PgConn().Exec(ctx, sel))
			if got != want {
				t.Errorf("simple-protocol results differ, %s", diffLines(got, want))
			}

			// Binary parameters in a predicate: each value finds its rows.
			cmp := "SELECT count(*) FROM " + table + " WHERE v = $1"
			for j, in := range tc.inputs {
				g := renderResult(p.rw.PgConn().ExecParams(ctx, cmp, [][]byte{bins[j]}, []uint32{paramOIDs[1][1]}, []int16{1}, nil).Read())
				w := renderResult(p.pg.PgConn().ExecParams(ctx, cmp, [][]byte{bins[j]}, []uint32{paramOIDs[1][1]}, []int16{1}, nil).Read())
				if g != w {
					t.Errorf("WHERE v = %q (binary): %s", in, diffLines(g, w))
				}
			}
		})
	}
}

// TestPgxGoValues round-trips Go values through pgx's own encoders and
// decoders (an implementation independent of Runnel's) in both of pgx's
// extended-protocol modes.
func TestPgxGoValues(t *testing.T) {
	srv := servertest.Start(t)
	conn := srv.Connect(t)
	ctx := testCtx(t)
	servertest.Exec(t, conn, "SET RW_IMPLICIT_FLUSH TO true")
	servertest.Exec(t, conn, `CREATE TABLE g (id int PRIMARY KEY, b boolean, s smallint, i integer, l bigint,
		r real, d double precision, n numeric, v varchar, x text, y bytea, dt date, tm time, ts timestamp,
		tz timestamptz, iv interval, j jsonb)`)
	ts := time.Date(2001, 9, 9, 1, 46, 40, 500000000, time.UTC)
	vals := []any{true, int16(-32768), int32(2147483647), int64(-9223372036854775808), float32(1.5), -2.25e100,
		pgtype.Numeric{Int: big.NewInt(-1234567890123456789), Exp: -30, Valid: true}, "héllo ☃", "", []byte{},
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), pgtype.Time{Microseconds: 86399999999, Valid: true},
		pgtype.Timestamp{InfinityModifier: pgtype.Infinity, Valid: true}, ts,
		pgtype.Interval{Months: -14, Days: -3, Microseconds: 10800000000, Valid: true}, map[string]any{"a": []any{1.0, nil}}}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec}
	for m, mode := range modes {
		args := append([]any{mode, m}, vals...)
		if _, err := conn.Exec(ctx, "INSERT INTO g VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)", args...); err != nil {
			t.Fatalf("mode %v: insert: %v", mode, err)
		}
		nulls := append([]any{mode, 100 + m}, make([]any, len(vals))...)
		if _, err := conn.Exec(ctx, "INSERT INTO g VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)", nulls...); err != nil {
			t.Fatalf("mode %v: insert NULLs: %v", mode, err)
		}
	}
	for m, mode := range modes {
		var (
			b    bool
			s    int16
			i    int32
			l    int64
			r    float32
			d    float64
			n    pgtype.Numeric
			v, x string
			y    []byte
			dt   time.Time
			tm   pgtype.Time
			tsv  pgtype.Timestamp
			tz   time.Time
			iv   pgtype.Interval
			j    map[string]any
		)
		err := conn.QueryRow(ctx, "SELECT b, s, i, l, r, d, n, v, x, y, dt, tm, ts, tz, iv, j FROM g WHERE id = $1", mode, m).
			Scan(&b, &s, &i, &l, &r, &d, &n, &v, &x, &y, &dt, &tm, &tsv, &tz, &iv, &j)
		if err != nil {
			t.Fatalf("mode %v: select: %v", mode, err)
		}
		got := fmt.Sprint(b, s, i, l, r, d, n.Int, n.Exp, v, x, y == nil, len(y), dt.Format(time.DateOnly), tm.Microseconds,
			tsv.InfinityModifier, tz.UTC().Format(time.RFC3339Nano), iv.Months, iv.Days, iv.Microseconds, j)
		want := fmt.Sprint(true, -32768, 2147483647, int64(-9223372036854775808), 1.5, -2.25e100, -1234567890123456789, -30,
			"héllo ☃", "", false, 0, "2024-02-29", 86399999999, pgtype.Infinity, ts.Format(time.RFC3339Nano), -14, -3, 10800000000,
			map[string]any{"a": []any{1.0, nil}})
		if got != want {
			t.Errorf("mode %v:\n got  %s\n want %s", mode, got, want)
		}
		row, err := conn.Query(ctx, "SELECT b, s, i, l, r, d, n, v, x, y, dt, tm, ts, tz, iv, j FROM g WHERE id = $1", mode, 100+m)
		if err != nil {
			t.Fatal(err)
		}
		for row.Next() {
			vs, err := row.Values()
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range vs {
				if v != nil {
					t.Errorf("mode %v: column %d of the NULL row is %v", mode, k, v)
				}
			}
		}
		if row.Err() != nil {
			t.Fatal(row.Err())
		}
	}
}

// renderMulti renders the results of a simple-protocol exchange.
func renderMulti(mrr *pgconn.MultiResultReader) string {
	results, err := mrr.ReadAll()
	var b strings.Builder
	for _, r := range results {
		b.WriteString(renderResult(r))
	}
	if err != nil {
		fmt.Fprintf(&b, "error %s\n", sqlstate(err))
	}
	return b.String()
}

func serverName(side int) string { return [...]string{"runnel", "postgresql"}[side] }

func formatName(f int) string { return [...]string{"text", "binary"}[f] }
