package protocoltest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestImplicitFlushSetting checks SET / SHOW of implicit_flush, under its
// own name and RisingWave's RW_IMPLICIT_FLUSH: SHOW prints a Boolean
// parameter as on/off whatever spelling SET used, as PostgreSQL does; a
// bad value is 22023 and leaves the setting alone. And the setting does
// what it says: with it on, a row is visible to every session as soon as
// its INSERT returns.
func TestImplicitFlushSetting(t *testing.T) {
	srv := servertest.Start(t)
	conn := srv.Connect(t)
	other := srv.Connect(t)
	steps := []struct{ sql, show string }{
		{"", "off"},
		{"SET RW_IMPLICIT_FLUSH TO true", "on"},
		{"SET implicit_flush = false", "off"},
		{"SET implicit_flush TO on", "on"},
		{"RESET implicit_flush", "off"},
		{"SET rw_implicit_flush = 1", "on"},
		{"SET implicit_flush TO DEFAULT", "off"},
		{"SET implicit_flush = 'yes'", "on"},
		{"SET implicit_flush = of", "off"},
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		for _, s := range steps {
			if s.sql != "" {
				servertest.Exec(t, conn, s.sql, mode)
			}
			for _, name := range []string{"implicit_flush", "RW_IMPLICIT_FLUSH"} {
				var v string
				rows, err := conn.Query(testCtx(t), "SHOW "+name, mode)
				if err != nil {
					t.Fatalf("SHOW %s: %v", name, err)
				}
				fields := rows.FieldDescriptions()
				for rows.Next() {
					if err := rows.Scan(&v); err != nil {
						t.Fatal(err)
					}
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				if v != s.show {
					t.Errorf("%v: after %q, SHOW %s = %q; want %q", mode, s.sql, name, v, s.show)
				}
				// The column is named after the canonical parameter, as in
				// PostgreSQL, in both protocols.
				if len(fields) != 1 || fields[0].Name != "implicit_flush" {
					t.Errorf("%v: SHOW %s: columns %v; want one named implicit_flush", mode, name, fields)
				}
			}
		}
	}
	for _, bad := range []string{"SET implicit_flush = 'maybe'", "SET implicit_flush = o", "SET implicit_flush = 2"} {
		if _, err := conn.Exec(testCtx(t), bad); sqlstate(err) != "22023" {
			t.Errorf("%s: %v; want SQLSTATE 22023", bad, err)
		}
	}
	if got := servertest.QueryText(t, conn, "SHOW implicit_flush"); !slices.Equal(got, []string{"off"}) {
		t.Errorf("after rejected SETs: %v; want [off]", got)
	}

	// The effect: every INSERT is visible at once, to this session and
	// to another one, without FLUSH.
	servertest.Exec(t, conn, "SET RW_IMPLICIT_FLUSH TO true")
	servertest.Exec(t, conn, "CREATE TABLE f (k int PRIMARY KEY)")
	for i := 1; i <= 5; i++ {
		servertest.Exec(t, conn, "INSERT INTO f VALUES ($1)", i)
		want := []string{fmt.Sprint(i)}
		if got := servertest.QueryText(t, conn, "SELECT count(*) FROM f"); !slices.Equal(got, want) {
			t.Fatalf("own session after insert %d: %v", i, got)
		}
		if got := servertest.QueryText(t, other, "SELECT count(*) FROM f"); !slices.Equal(got, want) {
			t.Fatalf("other session after insert %d: %v", i, got)
		}
	}
}
