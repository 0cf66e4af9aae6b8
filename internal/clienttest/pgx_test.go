package clienttest

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// pgxRow1 is row 1 as pgx binds and scans it.
func pgxRow1() []any {
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	return []any{
		int32(1), true, int16(math.MinInt16), int32(math.MaxInt32), int64(math.MinInt64),
		float32(1.5), float64(-2.25),
		pgtype.Numeric{Int: big.NewInt(12345678), Exp: -3, Valid: true},
		"héllo\tworld", "varchar", []byte{0, 0xff, 0x10},
		pgtype.Date{Time: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Valid: true},
		pgtype.Time{Microseconds: (13*3600+14*60+15)*1e6 + 123456, Valid: true},
		pgtype.Timestamp{Time: ts, Valid: true},
		ts,
		pgtype.Interval{Months: 14, Days: 3, Microseconds: (4*3600 + 5*60 + 6) * 1e6, Valid: true},
		map[string]any{"a": []any{float64(1), float64(2), nil}},
		[16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11},
	}
}

func testPgx(t *testing.T, srv *servertest.Server) {
	c := ctx(t)
	conn := servertest.Connect(t, srv.URL()+"&timezone=UTC&implicit_flush=true")
	if _, err := conn.Exec(c, ItemsDDL); err != nil {
		t.Fatal(err)
	}
	row1 := pgxRow1()
	ins := "INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)"
	if _, err := conn.Exec(c, ins, row1...); err != nil {
		t.Fatalf("insert row 1 with bound parameters: %v", err)
	}
	nulls := make([]any, len(row1))
	nulls[0] = int32(2)
	if _, err := conn.Exec(c, ins, nulls...); err != nil {
		t.Fatalf("insert row 2 (NULLs): %v", err)
	}
	if _, err := conn.Exec(c, "FLUSH"); err != nil {
		t.Fatal(err)
	}

	// Read back in binary (pgx's default for these types) and in text.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		got := make([]any, len(row1))
		ptrs := make([]any, len(row1))
		for i, v := range row1 {
			p := reflect.New(reflect.TypeOf(v))
			ptrs[i] = p.Interface()
		}
		if err := conn.QueryRow(c, "SELECT * FROM items WHERE id = $1", mode, 1).Scan(ptrs...); err != nil {
			t.Fatalf("mode %v: %v", mode, err)
		}
		for i := range ptrs {
			got[i] = reflect.ValueOf(ptrs[i]).Elem().Interface()
		}
		for i := range row1 {
			if !pgxEqual(got[i], row1[i]) {
				t.Errorf("mode %v column %s: got %#v; want %#v", mode, ItemsColumns[i], got[i], row1[i])
			}
		}
		var cnt int
		if err := conn.QueryRow(c, "SELECT count(*) FROM items WHERE id = 2 AND b IS NULL AND u IS NULL AND j IS NULL", mode).Scan(&cnt); err != nil || cnt != 1 {
			t.Fatalf("mode %v: row 2 of NULLs: %d, %v", mode, cnt, err)
		}
	}

	// Metadata: the field descriptions name the table and column (pgx's
	// FieldDescriptions), and pgx's type map knows every column's OID.
	rows, err := conn.Query(c, "SELECT * FROM items")
	if err != nil {
		t.Fatal(err)
	}
	fds := rows.FieldDescriptions()
	rows.Close()
	for i, fd := range fds {
		if fd.Name != ItemsColumns[i] || fd.TableOID == 0 || int(fd.TableAttributeNumber) != i+1 {
			t.Errorf("field %d: %+v; want name %s, a table OID and attribute number %d", i, fd, ItemsColumns[i], i+1)
		}
		if _, ok := conn.TypeMap().TypeForOID(fd.DataTypeOID); !ok {
			t.Errorf("field %s: type OID %d unknown to pgx", fd.Name, fd.DataTypeOID)
		}
	}
	var names []string
	rs, err := conn.Query(c, `SELECT column_name FROM information_schema.columns WHERE table_name = 'items' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var n string
		rs.Scan(&n)
		names = append(names, n)
	}
	if rs.Err() != nil || fmt.Sprint(names) != fmt.Sprint(ItemsColumns) {
		t.Errorf("information_schema.columns: %v, %v; want %v", names, rs.Err(), ItemsColumns)
	}

	// Bulk load: CopyFrom sends COPY ... FROM STDIN (FORMAT binary).
	if _, err := conn.Exec(c, "CREATE TABLE bulk (id int PRIMARY KEY, v text, u uuid, ts timestamptz)"); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	n, err := conn.CopyFrom(c, pgx.Identifier{"bulk"}, []string{"id", "v", "u", "ts"},
		pgx.CopyFromSlice(bulkRows, func(i int) ([]any, error) {
			var u [16]byte
			u[15] = byte(i)
			u[14] = byte(i >> 8)
			return []any{i, fmt.Sprintf("v%d", i), u, base.Add(time.Duration(i) * time.Second)}, nil
		}))
	if err != nil || n != bulkRows {
		t.Fatalf("CopyFrom: %d rows, %v", n, err)
	}
	// Every type through CopyFrom, read back equal to row 1.
	row3 := append([]any{int32(3)}, row1[1:]...)
	if _, err := conn.CopyFrom(c, pgx.Identifier{"items"}, ItemsColumns, pgx.CopyFromRows([][]any{row3, append([]any{int32(4)}, make([]any, len(row1)-1)...)})); err != nil {
		t.Fatalf("CopyFrom every type: %v", err)
	}
	if got := servertest.QueryText(t, conn, "SELECT "+colsExceptID()+" FROM items WHERE id = 3"); got[0] != joinRest(itemsRow1Text) {
		t.Fatalf("row 3 written by CopyFrom (binary): got %q; want %q", got[0], joinRest(itemsRow1Text))
	}
	// COPY TO STDOUT (FORMAT binary) writes what COPY FROM reads back.
	var out bytes.Buffer
	if _, err := conn.PgConn().CopyTo(c, &out, "COPY (SELECT * FROM items WHERE id = 3) TO STDOUT (FORMAT binary)"); err != nil {
		t.Fatalf("COPY TO binary: %v", err)
	}
	if _, err := conn.Exec(c, replaceTable(ItemsDDL, "items2")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PgConn().CopyFrom(c, bytes.NewReader(out.Bytes()), "COPY items2 FROM STDIN (FORMAT binary)"); err != nil {
		t.Fatalf("COPY FROM binary of COPY TO's output: %v", err)
	}
	if got := servertest.QueryText(t, conn, "SELECT "+colsExceptID()+" FROM items2"); len(got) != 1 || got[0] != joinRest(itemsRow1Text) {
		t.Fatalf("row through COPY TO and FROM binary: got %q; want %q", got, joinRest(itemsRow1Text))
	}

	// Malformed binary COPY data: 22P04.
	_, err = conn.PgConn().CopyFrom(c, bytes.NewReader([]byte("1\tx\n")), "COPY bulk FROM STDIN (FORMAT binary)")
	wantSQLState(t, err, "22P04")

	// Duplicate key: 23505, through CopyFrom and through INSERT.
	_, err = conn.CopyFrom(c, pgx.Identifier{"bulk"}, []string{"id"}, pgx.CopyFromRows([][]any{{5}}))
	wantSQLState(t, err, "23505")
	_, err = conn.Exec(c, ins, row1...)
	wantSQLState(t, err, "23505")
}

func joinRest(vals []string) string {
	s := vals[1]
	for _, v := range vals[2:] {
		s += "|" + v
	}
	return s
}

func colsExceptID() string {
	s := ""
	for _, c := range ItemsColumns[1:] {
		if s != "" {
			s += ", "
		}
		s += c
	}
	return s
}

func replaceTable(ddl, name string) string {
	return "CREATE TABLE " + name + ddl[len("CREATE TABLE items"):]
}

func pgxEqual(a, b any) bool {
	switch x := a.(type) {
	case pgtype.Numeric:
		y := b.(pgtype.Numeric)
		fa, _ := x.Float64Value()
		fb, _ := y.Float64Value()
		return fa == fb
	case time.Time:
		return x.Equal(b.(time.Time))
	case pgtype.Timestamp:
		return x.Time.Equal(b.(pgtype.Timestamp).Time)
	case pgtype.Date:
		return x.Time.Equal(b.(pgtype.Date).Time)
	}
	return reflect.DeepEqual(a, b)
}
