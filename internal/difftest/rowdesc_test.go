package difftest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestRowDescriptionOrigins: RowDescription names the table and column a
// result column is taken from unchanged — table OID and column number, as
// PostgreSQL sends them (JDBC's getTableName and isNullable look them up
// in pg_class and pg_attribute) — and 0 for computed ones; both protocols.
// Compared with PostgreSQL through the relation name and pg_attribute's
// attname and attnotnull. Also: information_schema.tables lists tables and
// leaves materialized views out, as PostgreSQL does.
func TestRowDescriptionOrigins(t *testing.T) {
	p := newPair(t)
	ctx := context.Background()
	p.mustBoth("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, w TEXT)")
	p.mustBoth("CREATE TABLE nokey (a INT, b TEXT)")
	p.mustBoth("INSERT INTO t VALUES (1, 2, 'x')")
	p.mustBoth("INSERT INTO nokey VALUES (1, 'y')")
	p.mustBoth("CREATE MATERIALIZED VIEW mv AS SELECT id, v * 2 AS v2 FROM t")
	p.flush()
	queries := []string{
		"SELECT * FROM t",
		"SELECT w, id, v + 1, 7 AS c, v AS renamed FROM t",
		"SELECT t.w, n.b, n.a FROM t JOIN nokey n ON n.a = t.id",
		"SELECT x.id FROM (SELECT id, v FROM t) x",
		"SELECT b, a FROM nokey",
		"SELECT id, v2 FROM mv",
		"SELECT count(*) FROM t",
		"SELECT id FROM t UNION ALL SELECT a FROM nokey",
	}
	describe := func(c *pgx.Conn, q string, mode pgx.QueryExecMode) []string {
		rows, err := c.Query(ctx, q, mode)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		fds := append(rows.FieldDescriptions()[:0:0], rows.FieldDescriptions()...)
		rows.Close()
		var out []string
		for _, fd := range fds {
			if fd.TableOID == 0 {
				out = append(out, fd.Name+": -")
				continue
			}
			var rel, att string
			var notNull bool
			err := c.QueryRow(ctx, "SELECT c.relname, a.attname, a.attnotnull FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid WHERE c.oid = $1 AND a.attnum = $2",
				pgx.QueryExecModeSimpleProtocol, fd.TableOID, int(fd.TableAttributeNumber)).Scan(&rel, &att, &notNull)
			if err != nil {
				t.Fatalf("%s: column %s (table %d, column %d): %v", q, fd.Name, fd.TableOID, fd.TableAttributeNumber, err)
			}
			out = append(out, fmt.Sprintf("%s: %s.%s not null %v", fd.Name, rel, att, notNull))
		}
		return out
	}
	for _, q := range queries {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeSimpleProtocol} {
			rw, pg := describe(p.rw, q, mode), describe(p.pg, q, mode)
			if !slices.Equal(rw, pg) {
				t.Errorf("%s (%v):\nrunnel:   %v\npostgres: %v", q, mode, rw, pg)
			}
		}
	}
	q := "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1"
	if rw, pg := query(p.rw, q, canon{}), query(p.pg, q, canon{}); !slices.Equal(rw.rows, pg.rows) {
		t.Errorf("%s:\nrunnel:   %v %v\npostgres: %v %v", q, rw.rows, rw.err, pg.rows, pg.err)
	}
}
