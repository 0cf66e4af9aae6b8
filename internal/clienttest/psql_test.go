package clienttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// testPsql runs testdata/psql/matrix.sql (DDL, DML, psql's describe
// commands), bulk-loads with \copy, and checks a duplicate key's SQLSTATE.
func testPsql(t *testing.T, srv *servertest.Server) {
	need(t, "psql", have("psql"))
	out := runClient(t, srv, "testdata/psql", "psql", "-X", "-v", "ON_ERROR_STOP=1", "-f", "matrix.sql")
	t.Logf("psql output:\n%s", out)
	row1 := strings.Join(itemsRow1Text, "|")
	for _, want := range []string{
		row1,
		// \d and \dt list the tables.
		"public | bulk  | table | root", "public | items | table | root",
		// \d items: the columns with their types and the primary key.
		" id     | integer                     |           | not null |",
		" u      | uuid                        |           |          |",
		`"items_pkey" PRIMARY KEY, btree (id)`,
		// \l+ lists the database; \df (no user functions) answers; \dfS+ finds length().
		"dev", "List of functions", "pg_catalog | length",
		"List of data types", "List of schemas",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("psql output lacks %q", want)
		}
	}

	// Bulk load with \copy (COPY FROM STDIN, text format).
	dir := t.TempDir()
	var data strings.Builder
	for i := 0; i < bulkRows; i++ {
		fmt.Fprintf(&data, "%d,v%d,00000000-0000-0000-0000-%012x,2020-01-01 00:00:%02d+00\n", i, i, i, i%60)
	}
	file := filepath.Join(dir, "bulk.csv")
	if err := os.WriteFile(file, []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out = runClient(t, srv, dir, "psql", "-X", "-v", "ON_ERROR_STOP=1", "-c", `\copy bulk FROM 'bulk.csv' WITH (FORMAT csv)`)
	if !strings.Contains(out, fmt.Sprintf("COPY %d", bulkRows)) {
		t.Errorf("\\copy: %s", out)
	}

	// A duplicate key fails with 23505 (psql exits 1 under ON_ERROR_STOP).
	host, port, _ := strings.Cut(srv.Addr, ":")
	out2, err := runClientErr(t, srv, dir, "psql", "-X", "-h", host, "-p", port, "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
		"-c", `\set VERBOSITY verbose`, "-c", "INSERT INTO bulk (id) VALUES (5)")
	if err == nil || !strings.Contains(out2, "ERROR:  23505: duplicate key value violates unique constraint") {
		t.Errorf("duplicate key through psql: %v\n%s", err, out2)
	}
}
