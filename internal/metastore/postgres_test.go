package metastore

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// TestPostgresCommitsAreDurable: on a database whose default is
// synchronous_commit = off (the throwaway test clusters run the whole
// server that way), the metastore's connections still commit durably, and
// a stronger setting chosen in the URL is kept.
func TestPostgresCommitsAreDurable(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	admin, err := pgx.Connect(bg, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := admin.Config().Database
	if _, err := admin.Exec(bg, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	admin.Close(bg)

	for _, tc := range []struct{ param, want string }{{"", "on"}, {"remote_apply", "remote_apply"}, {"local", "local"}} {
		u := dbURL
		if tc.param != "" {
			sep := "?"
			if strings.Contains(u, "?") {
				sep = "&"
			}
			u += sep + "synchronous_commit=" + url.QueryEscape(tc.param)
		}
		db, err := Open(bg, u)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		if err := db.db.QueryRowContext(bg, "SHOW synchronous_commit").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if mode != tc.want {
			t.Errorf("URL synchronous_commit=%q: connection runs with %q, want %q", tc.param, mode, tc.want)
		}
	}
}
