package server

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeSQL returns the SQL block that follows the marker comment
// <!-- name --> in the repository's README.md.
func readmeSQL(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(name) + " -->\\s*```sql\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("README.md has no ```sql block after <!-- %s -->", name)
	}
	return string(m[1])
}

// TestReadmeCDCExample runs the README's "PostgreSQL table followed by
// CDC" example as written, against a throwaway PostgreSQL with
// wal_level=logical standing in for 127.0.0.1:5432, and checks what the
// README promises.
func TestReadmeCDCExample(t *testing.T) {
	up := newCDCUpstream(t)
	for _, stmt := range strings.Split(readmeSQL(t, "cdc-example-upstream"), ";") {
		if strings.TrimSpace(stmt) != "" {
			up.exec(t, stmt)
		}
	}
	script := readmeSQL(t, "cdc-example")
	script = strings.NewReplacer(
		"hostname = '127.0.0.1'", fmt.Sprintf("hostname = '%s'", up.host),
		"port = '5432'", fmt.Sprintf("port = '%d'", up.port),
		"password = 'secret'", "password = ''",
		"database.name = 'postgres'", fmt.Sprintf("database.name = '%s'", up.database),
	).Replace(script)
	ts := startTestServer(t, "")
	conn := ts.connect(t)
	for _, stmt := range strings.Split(script, ";") {
		if strings.TrimSpace(stmt) != "" {
			mustExec(t, conn, stmt)
		}
	}
	waitSameAs(t, conn, up, "SELECT * FROM revenue ORDER BY customer",
		"SELECT customer, count(*), sum(amount) FROM orders GROUP BY customer ORDER BY customer", "after the snapshot")
	up.exec(t, "INSERT INTO orders VALUES (3, 'ada', 7.5)")
	up.exec(t, "DELETE FROM orders WHERE id = 2")
	waitSameAs(t, conn, up, "SELECT * FROM revenue ORDER BY customer",
		"SELECT customer, count(*), sum(amount) FROM orders GROUP BY customer ORDER BY customer", "after upstream changes")
	if got := queryStrings(t, conn, "SELECT customer || ' | ' || orders || ' | ' || total FROM revenue"); fmt.Sprint(got) != "[ada | 2 | 20.0]" {
		t.Fatalf("revenue = %v; the README promises [ada | 2 | 20.0]", got)
	}
	mustExec(t, conn, "DROP MATERIALIZED VIEW revenue")
	mustExec(t, conn, "DROP TABLE orders")
	if s := up.slots(t); len(s) != 0 {
		t.Fatalf("replication slots after DROP TABLE: %v", s)
	}
	mustExec(t, conn, "DROP SOURCE pg")
}
