package difftest

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestUUIDDifferential: the uuid type through pgx against PostgreSQL —
// values bound as pgtype.UUID in the extended protocol (binary) and in the
// simple protocol (text), a uuid primary key (duplicates fail with 23505),
// COPY FROM STDIN, comparisons and ORDER BY, casts to and from text (bad
// input fails with 22P02), GROUP BY in a materialized view (a plain view in
// PostgreSQL), reads scanned back into pgtype.UUID in both protocols, and
// gen_random_uuid(): a version-4 uuid in DML and queries, refused in a
// view (0A000) as now() is.
func TestUUIDDifferential(t *testing.T) {
	p := newPair(t)
	ctx := context.Background()
	r := rand.New(rand.NewSource(1))
	p.mustBoth("CREATE TABLE u (id uuid PRIMARY KEY, ref uuid, n int)")
	refs := make([]pgtype.UUID, 3)
	for i := range refs {
		r.Read(refs[i].Bytes[:])
		refs[i].Valid = true
	}
	var ids []pgtype.UUID
	for i := 0; i < 40; i++ {
		var id pgtype.UUID
		r.Read(id.Bytes[:])
		id.Valid = true
		if i == 0 {
			id.Bytes = [16]byte{} // the smallest
		}
		if i == 1 {
			for j := range id.Bytes {
				id.Bytes[j] = 0xff
			}
		}
		ids = append(ids, id)
		ref := refs[i%3]
		mode := pgx.QueryExecModeCacheStatement // binary parameters
		if i%2 == 1 {
			mode = pgx.QueryExecModeSimpleProtocol // text
		}
		for _, c := range []*pgx.Conn{p.rw, p.pg} {
			if _, err := c.Exec(ctx, "INSERT INTO u VALUES ($1, $2, $3)", mode, id, ref, i); err != nil {
				t.Fatalf("insert %d: %v", i, err)
			}
		}
	}
	// COPY FROM STDIN, text format.
	var copyData strings.Builder
	for i := 0; i < 10; i++ {
		var b [16]byte
		r.Read(b[:])
		fmt.Fprintf(&copyData, "%x\t\\N\t%d\n", b, 100+i)
	}
	for _, c := range []*pgx.Conn{p.rw, p.pg} {
		if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(copyData.String()), "COPY u FROM STDIN"); err != nil {
			t.Fatalf("COPY: %v", err)
		}
	}
	p.mustBoth(fmt.Sprintf("INSERT INTO u VALUES ('%x', NULL, 0)", ids[5].Bytes)) // 23505 on both
	p.mustBoth("SELECT 'not-a-uuid'::uuid")                                       // 22P02 on both
	p.flush()
	queries := []string{
		"SELECT id, ref, n FROM u ORDER BY id",
		"SELECT id::text, upper(id::text) FROM u ORDER BY id DESC",
		"SELECT count(*) FROM u WHERE id > 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' AND id <> ref",
		"SELECT ref, count(*), sum(n) FROM u GROUP BY ref ORDER BY ref",
		"SELECT '{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}'::uuid, 'a0eebc999c0b4ef8bb6d6bb9bd380a11'::uuid = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'",
		"SELECT a.n, b.n FROM u a JOIN u b ON a.ref = b.id ORDER BY 1",
	}
	for _, q := range queries {
		rw, pg := query(p.rw, q, canon{}), query(p.pg, q, canon{})
		if !slices.Equal(rw.rows, pg.rows) || rw.code() != pg.code() {
			t.Fatalf("%s:\nrunnel:   %v %v\npostgres: %v %v", q, rw.rows, rw.err, pg.rows, pg.err)
		}
	}
	// A point read by a uuid parameter, scanned back in both protocols.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		for _, id := range ids[:5] {
			var got, ref pgtype.UUID
			if err := p.rw.QueryRow(ctx, "SELECT id, ref FROM u WHERE id = $1", mode, id).Scan(&got, &ref); err != nil {
				t.Fatalf("point read (%v): %v", mode, err)
			}
			if got != id || !ref.Valid {
				t.Fatalf("point read (%v): got %v, want %v", mode, got, id)
			}
		}
	}
	// A view grouping by uuid, maintained incrementally.
	if _, err := p.rw.Exec(ctx, "CREATE MATERIALIZED VIEW by_ref AS SELECT ref, count(*) AS c, min(n) AS lo FROM u GROUP BY ref"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.pg.Exec(ctx, "CREATE VIEW by_ref AS SELECT ref, count(*) AS c, min(n) AS lo FROM u GROUP BY ref"); err != nil {
		t.Fatal(err)
	}
	p.mustBoth(fmt.Sprintf("DELETE FROM u WHERE ref = '%x'", refs[1].Bytes))
	p.mustBoth(fmt.Sprintf("UPDATE u SET ref = '%x' WHERE n %% 4 = 0", refs[1].Bytes))
	p.flush()
	q := "SELECT ref, c, lo FROM by_ref ORDER BY ref"
	if rw, pg := query(p.rw, q, canon{}), query(p.pg, q, canon{}); !slices.Equal(rw.rows, pg.rows) {
		t.Fatalf("%s:\nrunnel:   %v %v\npostgres: %v %v", q, rw.rows, rw.err, pg.rows, pg.err)
	}
	// gen_random_uuid(): fine in DML and queries, refused in a view.
	if _, err := p.rw.Exec(ctx, "INSERT INTO u SELECT gen_random_uuid(), gen_random_uuid(), g FROM generate_series(1, 5) g"); err != nil {
		t.Fatal(err)
	}
	var a, b string
	if err := p.rw.QueryRow(ctx, "SELECT gen_random_uuid()::text, gen_random_uuid()::text").Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	if a == b || len(a) != 36 || a[14] != '4' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Fatalf("gen_random_uuid(): %s, %s; want two different version-4 uuids", a, b)
	}
	_, err := p.rw.Exec(ctx, "CREATE MATERIALIZED VIEW bad AS SELECT gen_random_uuid() AS g, n FROM u")
	if sqlstate(err) != "0A000" || !strings.Contains(err.Error(), "gen_random_uuid") {
		t.Fatalf("gen_random_uuid() in a view: %v; want 0A000 naming it", err)
	}
}
