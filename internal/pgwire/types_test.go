package pgwire

import (
	"bytes"
	"math/big"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// typeCases are values of every supported type in PostgreSQL's canonical
// text output (so that text in → text out is the identity).
var typeCases = []struct {
	typ, oidName, text string
	oid                uint32
}{
	{"bool", "bool", "t", 16},
	{"int2", "int2", "-32768", 21},
	{"int4", "int4", "2147483647", 23},
	{"int8", "int8", "-9223372036854775808", 20},
	{"float4", "float4", "1.5", 700},
	{"float8", "float8", "-2.25e+100", 701},
	{"numeric", "numeric", "12345678901234567890.0123456789", 1700},
	{"text", "text", "héllo, wörld", 25},
	{"varchar", "varchar", "tab\there", 1043},
	{"bytea", "bytea", `\x00ff10`, 17},
	{"date", "date", "2024-02-29", 1082},
	{"time", "time", "13:45:59.123456", 1083},
	{"timestamp", "timestamp", "2001-09-09 01:46:40.5", 1114},
	{"timestamptz", "timestamptz", "2001-09-09 01:46:40.5+00", 1184},
	{"interval", "interval", "1 year 2 mons 3 days 04:05:06.7", 1186},
	{"jsonb", "jsonb", `{"a": [1, 2, {"b": null}], "c": "d"}`, 3802},
}

// TestParamFormatsAllTypes sends each value as a text and as a binary
// parameter and reads it back in text and binary, with explicit
// parameter OIDs (no cast in the SQL) and with casts.
func TestParamFormatsAllTypes(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	c := ts.connect(t, "")
	ctx := testCtx(t)
	pc := c.PgConn()
	for _, tc := range typeCases {
		t.Run(tc.typ, func(t *testing.T) {
			// text in, text out (types from the Parse OIDs)
			res := pc.ExecParams(ctx, "SELECT $1", [][]byte{[]byte(tc.text)}, []uint32{tc.oid}, []int16{0}, []int16{0}).Read()
			if res.Err != nil {
				t.Fatalf("text/text: %v", res.Err)
			}
			if got := string(res.Rows[0][0]); got != tc.text {
				t.Fatalf("text/text: got %q; want %q", got, tc.text)
			}
			if res.FieldDescriptions[0].DataTypeOID != tc.oid {
				t.Fatalf("result OID %d; want %d", res.FieldDescriptions[0].DataTypeOID, tc.oid)
			}
			// text in, binary out (types from a cast)
			res = pc.ExecParams(ctx, "SELECT $1::"+tc.typ, [][]byte{[]byte(tc.text)}, nil, []int16{0}, []int16{1}).Read()
			if res.Err != nil {
				t.Fatalf("text/binary: %v", res.Err)
			}
			bin := append([]byte(nil), res.Rows[0][0]...)
			// binary in, text out
			res = pc.ExecParams(ctx, "SELECT $1::"+tc.typ, [][]byte{bin}, nil, []int16{1}, []int16{0}).Read()
			if res.Err != nil {
				t.Fatalf("binary/text: %v", res.Err)
			}
			if got := string(res.Rows[0][0]); got != tc.text {
				t.Fatalf("binary/text: got %q; want %q", got, tc.text)
			}
			// binary in, binary out
			res = pc.ExecParams(ctx, "SELECT $1::"+tc.typ, [][]byte{bin}, nil, []int16{1}, []int16{1}).Read()
			if res.Err != nil || !bytes.Equal(res.Rows[0][0], bin) {
				t.Fatalf("binary/binary: %x %v; want %x", res.Rows[0][0], res.Err, bin)
			}
		})
	}
	// A bad text parameter is the type's input error, and the
	// connection recovers.
	res := pc.ExecParams(ctx, "SELECT $1::int4", [][]byte{[]byte("x")}, nil, nil, nil).Read()
	if pgCode(res.Err) != "22P02" {
		t.Fatalf("bad int4 param: %v", res.Err)
	}
	res = pc.ExecParams(ctx, "SELECT $1::int4", [][]byte{{1, 2}}, nil, []int16{1}, nil).Read()
	if pgCode(res.Err) != "22P03" {
		t.Fatalf("bad binary int4 param: %v", res.Err)
	}
}

// TestPgxBinaryDecoding checks our binary encodings against pgx's own
// decoders (an independent implementation), for every type.
func TestPgxBinaryDecoding(t *testing.T) {
	ts := startServer(t, DefaultConfig(), newFakeEngine())
	c := ts.connect(t, "")
	ctx := testCtx(t)
	var (
		b    bool
		i2   int16
		i4   int32
		i8   int64
		f4   float32
		f8   float64
		num  pgtype.Numeric
		s    string
		vc   string
		by   []byte
		d    time.Time
		tm   pgtype.Time
		ts1  time.Time
		tstz time.Time
		iv   pgtype.Interval
		js   map[string]any
	)
	sql := "SELECT $1::bool, $2::int2, $3::int4, $4::int8, $5::float4, $6::float8, $7::numeric, $8::text, " +
		"$9::varchar, $10::bytea, $11::date, $12::time, $13::timestamp, $14::timestamptz, $15::interval, $16::jsonb"
	wantTS := time.Date(2001, 9, 9, 1, 46, 40, 500000000, time.UTC)
	args := []any{true, int16(-7), int32(1 << 30), int64(-1 << 40), float32(1.5), 2.25,
		pgtype.Numeric{Int: big.NewInt(-12345), Exp: -2, Valid: true}, "héllo", "v", []byte{0, 1, 255},
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), pgtype.Time{Microseconds: 49559123456, Valid: true},
		wantTS, wantTS, pgtype.Interval{Months: 14, Days: 3, Microseconds: 14706700000, Valid: true},
		map[string]any{"a": 1.0, "c": "d"}}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec} {
		err := c.QueryRow(ctx, sql, append([]any{mode}, args...)...).Scan(&b, &i2, &i4, &i8, &f4, &f8, &num, &s, &vc, &by, &d, &tm, &ts1, &tstz, &iv, &js)
		if err != nil {
			t.Fatalf("mode %v: %v", mode, err)
		}
		if !b || i2 != -7 || i4 != 1<<30 || i8 != -1<<40 || f4 != 1.5 || f8 != 2.25 || s != "héllo" || vc != "v" ||
			!bytes.Equal(by, []byte{0, 1, 255}) {
			t.Fatalf("mode %v: scalars %v %v %v %v %v %v %q %q %x", mode, b, i2, i4, i8, f4, f8, s, vc, by)
		}
		if num.Int.Int64() != -12345 || num.Exp != -2 {
			t.Fatalf("mode %v: numeric %v e%d", mode, num.Int, num.Exp)
		}
		if !d.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) || tm.Microseconds != 49559123456 ||
			!ts1.Equal(wantTS) || !tstz.Equal(wantTS) {
			t.Fatalf("mode %v: datetimes %v %v %v %v", mode, d, tm, ts1, tstz)
		}
		if iv.Months != 14 || iv.Days != 3 || iv.Microseconds != 14706700000 {
			t.Fatalf("mode %v: interval %+v", mode, iv)
		}
		if js["a"] != 1.0 || js["c"] != "d" {
			t.Fatalf("mode %v: jsonb %v", mode, js)
		}
	}
}
