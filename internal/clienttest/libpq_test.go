package clienttest

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// lib/pq sends parameters in text (bytea in binary) and returns text (a
// time as a time.Time on 0000-01-01, as against PostgreSQL), so
// every value is bound and read back as Go's plain types and strings.
func testLibPQ(t *testing.T, srv *servertest.Server) {
	c := ctx(t)
	db, err := sql.Open("postgres", srv.URL()+"&timezone=UTC&options=-c%20implicit_flush%3Dtrue")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(c, ItemsDDL); err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	row1 := []any{1, true, -32768, 2147483647, int64(-9223372036854775808), 1.5, -2.25,
		"12345.678", "héllo\tworld", "varchar", []byte{0, 0xff, 0x10}, "2024-02-29", "13:14:15.123456",
		ts, ts, "1 year 2 mons 3 days 04:05:06", `{"a": [1, 2, null]}`, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}
	ins := "INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)"
	if _, err := db.ExecContext(c, ins, row1...); err != nil {
		t.Fatalf("insert with bound parameters: %v", err)
	}
	nulls := make([]any, len(row1))
	nulls[0] = 2
	if _, err := db.ExecContext(c, ins, nulls...); err != nil {
		t.Fatalf("insert NULLs: %v", err)
	}

	rows, err := db.QueryContext(c, "SELECT * FROM items WHERE id = $1", 1)
	if err != nil {
		t.Fatal(err)
	}
	cts, _ := rows.ColumnTypes()
	wantTypes := "INT4 BOOL INT2 INT4 INT8 FLOAT4 FLOAT8 NUMERIC TEXT VARCHAR BYTEA DATE TIME TIMESTAMP TIMESTAMPTZ INTERVAL JSONB UUID"
	var gotTypes []string
	for _, ct := range cts {
		gotTypes = append(gotTypes, ct.DatabaseTypeName())
	}
	if strings.Join(gotTypes, " ") != wantTypes {
		t.Errorf("column types: got %v; want %s", gotTypes, wantTypes)
	}
	var (
		id, i2, i4       int
		i8               int64
		b                bool
		f4, f8           float64
		n, tx, vc, d, tm string
		iv, j, u         string
		by               []byte
		tsv, tstz        time.Time
	)
	if !rows.Next() {
		t.Fatalf("row 1 missing: %v", rows.Err())
	}
	if err := rows.Scan(&id, &b, &i2, &i4, &i8, &f4, &f8, &n, &tx, &vc, &by, &d, &tm, &tsv, &tstz, &iv, &j, &u); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	got := fmt.Sprint(id, b, i2, i4, i8, f4, f8, n, tx, vc, by, d[:10], tm, tsv.UTC().Format(time.RFC3339Nano), tstz.UTC().Format(time.RFC3339Nano), iv, j, u)
	want := fmt.Sprint(1, true, -32768, 2147483647, int64(-9223372036854775808), 1.5, -2.25, "12345.678", "héllo\tworld", "varchar", []byte{0, 0xff, 0x10},
		"2024-02-29", "0000-01-01T13:14:15.123456Z", ts.Format(time.RFC3339Nano), ts.Format(time.RFC3339Nano), "1 year 2 mons 3 days 04:05:06", `{"a": [1, 2, null]}`, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
	if got != want {
		t.Errorf("row 1 through lib/pq:\ngot  %s\nwant %s", got, want)
	}
	var nb sql.NullBool
	var nu sql.NullString
	if err := db.QueryRowContext(c, "SELECT b, u FROM items WHERE id = 2").Scan(&nb, &nu); err != nil || nb.Valid || nu.Valid {
		t.Errorf("row 2: %v %v %v; want NULLs", nb, nu, err)
	}

	// Bulk load: pq.CopyIn (COPY FROM STDIN in text, inside a transaction).
	if _, err := db.ExecContext(c, "CREATE TABLE bulk (id int PRIMARY KEY, v text, u uuid, ts timestamptz)"); err != nil {
		t.Fatal(err)
	}
	tx1, err := db.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := tx1.Prepare(pq.CopyIn("bulk", "id", "v", "u", "ts"))
	if err != nil {
		t.Fatalf("prepare CopyIn: %v", err)
	}
	for i := 0; i < bulkRows; i++ {
		if _, err := stmt.Exec(i, fmt.Sprintf("v%d", i), fmt.Sprintf("00000000-0000-0000-0000-%012x", i), ts.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := stmt.Exec(); err != nil {
		t.Fatalf("CopyIn flush: %v", err)
	}
	stmt.Close()
	if err := tx1.Commit(); err != nil {
		t.Fatalf("commit CopyIn: %v", err)
	}

	// A rolled-back transaction leaves nothing behind.
	tx2, _ := db.BeginTx(c, nil)
	if _, err := tx2.ExecContext(c, "INSERT INTO bulk (id, v) VALUES ($1, $2)", -1, "gone"); err != nil {
		t.Fatal(err)
	}
	tx2.Rollback()
	var cnt int
	db.QueryRowContext(c, "SELECT count(*) FROM bulk WHERE id = -1").Scan(&cnt)
	if cnt != 0 {
		t.Errorf("row of a rolled-back transaction is visible")
	}

	_, err = db.ExecContext(c, "INSERT INTO bulk (id, v) VALUES ($1, $2)", 5, "dup")
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "23505" {
		t.Fatalf("duplicate key through lib/pq: %v; want 23505", err)
	}
}
