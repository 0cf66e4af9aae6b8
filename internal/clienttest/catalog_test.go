package clienttest

import (
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestCatalogMatchesPostgres sends the catalog reads the clients of the
// matrix depend on to Runnel and to a real PostgreSQL holding the same
// table, and compares the answers in text form.
func TestCatalogMatchesPostgres(t *testing.T) {
	srv := servertest.Start(t)
	rn := servertest.Connect(t, srv.URL())
	pg := servertest.Connect(t, pgtest.NewDatabase(t))
	ddl := "CREATE TABLE cat_t (a int, b text, c bigint, PRIMARY KEY (c, a))"
	servertest.Exec(t, rn, ddl)
	servertest.Exec(t, pg, ddl)
	for _, q := range []string{
		// pgjdbc's type lookups and getSchemas.
		"SELECT current_schemas(false)::text, current_schemas(true)::text",
		"SELECT (current_schemas(true))[1], (current_schemas(true))[2], (current_schemas(true))[3]",
		"SELECT array_upper(current_schemas(false), 1), array_lower(current_schemas(true), 1), array_length(current_schemas(true), 1), cardinality(current_schemas(true))",
		"SELECT s.r, (current_schemas(false))[s.r] FROM generate_series(1, array_upper(current_schemas(false), 1)) AS s(r)",
		"SELECT 'pg_catalog.array_in'::regproc::text",
		// pg_index as pgjdbc, SQLAlchemy and node tools read it.
		"SELECT indkey::text, indoption::text, indnkeyatts FROM pg_index WHERE indrelid = 'cat_t'::regclass",
		"SELECT unnest(indkey), generate_subscripts(indkey, 1) FROM pg_index WHERE indrelid = 'cat_t'::regclass",
		"SELECT (information_schema._pg_expandarray(indkey)).n, (information_schema._pg_expandarray(indkey)).x FROM pg_index WHERE indrelid = 'cat_t'::regclass",
		`SELECT r.n, a.attname FROM (SELECT (information_schema._pg_expandarray(i.indkey)).n AS n, information_schema._pg_expandarray(i.indkey) AS keys
			FROM pg_index i WHERE i.indrelid = 'cat_t'::regclass) r JOIN pg_attribute a ON a.attrelid = 'cat_t'::regclass AND a.attnum = (r.keys).x ORDER BY r.n`,
		"SELECT a.attname FROM pg_attribute a, pg_index i WHERE i.indrelid = 'cat_t'::regclass AND a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) ORDER BY a.attnum",
		"SELECT a.attname FROM pg_attribute a, pg_index i WHERE i.indrelid = 'cat_t'::regclass AND a.attrelid = i.indrelid AND a.attnum > 0 AND NOT a.attnum = ANY(i.indkey) ORDER BY 1",
		"SELECT i.indkey[0], i.indkey[1], i.indkey[2], i.indoption[0] & 1::smallint FROM pg_index i WHERE i.indrelid = 'cat_t'::regclass",
		"SELECT pg_get_indexdef(indexrelid, 1, false), pg_get_indexdef(indexrelid, 2, false), pg_get_indexdef(indexrelid, 3, false) FROM pg_index WHERE indrelid = 'cat_t'::regclass",
		// pgjdbc's getImportedKeys, psql's \dfS+ and \dT+, SQLAlchemy's get_columns.
		"SELECT name, setting FROM pg_settings WHERE name IN ('max_index_keys', 'max_function_args', 'block_size') ORDER BY name",
		"SELECT oid, lanname, lanispl, lanpltrusted FROM pg_language WHERE oid < 100 ORDER BY oid",
		"SELECT count(*) FROM pg_enum",
		"SELECT count(*) FROM pg_sequence",
		"SELECT pg_get_serial_sequence('cat_t', 'a')",
		"SELECT json_build_object('a', 1, 'b', true, 'c', NULL)::jsonb::text, json_build_array(1, 'x')::jsonb::text, to_json('s'::text)::jsonb::text",
		"SELECT 12 & 10, 12 | 3, 12 # 10, ~5, 7::smallint & 3::smallint, 7::bigint | 8::bigint",
	} {
		got, err := servertest.TryQueryText(rn, q)
		if err != nil {
			t.Errorf("%s\nrunnel: %v", q, err)
			continue
		}
		want, err := servertest.TryQueryText(pg, q)
		if err != nil {
			t.Fatalf("%s\npostgres: %v", q, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s\nrunnel:   %q\npostgres: %q", q, got, want)
		}
	}
}

func TestMain(m *testing.M) { pgtest.Main(m) }
