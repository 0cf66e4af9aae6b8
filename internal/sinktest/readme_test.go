package sinktest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// readmeBlock returns the ```sql block that follows marker in README.md.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<!-- ` + regexp.QuoteMeta(marker) + ` -->\n` + "```sql\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("README.md has no sql block after <!-- %s -->", marker)
	}
	return string(m[1])
}

// TestREADMESinkExample runs README's "A view pushed to a PostgreSQL
// table" as written, with the jdbc.url pointed at the test's PostgreSQL,
// and checks the rows it promises.
func TestREADMESinkExample(t *testing.T) {
	target, pg := targetDB(t)
	mustExec(t, pg, readmeBlock(t, "sink-example-target"))

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	script := regexp.MustCompile(`jdbc:postgresql://[^']*`).ReplaceAllString(readmeBlock(t, "sink-example"), jdbcURL(t, target))
	for _, stmt := range strings.Split(script, ";") {
		if strings.TrimSpace(stmt) != "" {
			mustExec(t, rw, stmt)
		}
	}
	mustExec(t, rw, "FLUSH")
	want := []string{"1|2|120", "2|1|50"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := rowsOf(t, pg, "SELECT * FROM bids_per_auction")
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bids_per_auction: %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustExec(t, rw, "INSERT INTO bid VALUES (2, 12, 70)")
	waitEqual(t, rw, pg, "SELECT * FROM per_auction", "SELECT * FROM bids_per_auction", 20*time.Second)
}
