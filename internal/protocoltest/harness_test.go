package protocoltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testCtx bounds one test's conversation with the servers.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pair is a session on Runnel and one on PostgreSQL with the same
// formatting settings, for statements whose answer PostgreSQL defines.
type pair struct {
	rw, pg *pgx.Conn
}

func newPair(t *testing.T) pair {
	t.Helper()
	srv := servertest.Start(t)
	p := pair{rw: srv.Connect(t), pg: servertest.Connect(t, pgtest.NewDatabase(t))}
	// PostgreSQL follows Runnel's reported settings, so that text output
	// (time zones, date and interval styles) is comparable.
	for _, name := range []string{"TimeZone", "DateStyle", "IntervalStyle"} {
		v := p.rw.PgConn().ParameterStatus(name)
		if v == "" {
			t.Fatalf("Runnel reported no %s parameter status", name)
		}
		servertest.Exec(t, p.pg, fmt.Sprintf("SET %s TO '%s'", name, v))
	}
	return p
}

// exec runs sql on both servers and fails the test if either fails.
func (p pair) exec(t *testing.T, sql string) {
	t.Helper()
	servertest.Exec(t, p.rw, sql)
	servertest.Exec(t, p.pg, sql)
}

// sqlstate is the SQLSTATE of err, "" for nil, or a description of a
// non-SQL error.
func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	if err != nil {
		return "non-SQL error: " + err.Error()
	}
	return ""
}

// renderResult renders a pgconn result (fields and raw values, quoted so
// that binary and text values are both readable) for comparison.
func renderResult(r *pgconn.Result) string {
	var b strings.Builder
	if r.Err != nil {
		fmt.Fprintf(&b, "error %s\n", sqlstate(r.Err))
		return b.String()
	}
	for _, f := range r.FieldDescriptions {
		fmt.Fprintf(&b, "field %s oid=%d mod=%d format=%d\n", f.Name, f.DataTypeOID, f.TypeModifier, f.Format)
	}
	for _, row := range r.Rows {
		for i, v := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				fmt.Fprintf(&b, "%q", v)
			}
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "tag %s\n", r.CommandTag)
	return b.String()
}

// diffLines shows the first differing line of two renderings.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  runnel:     %s\n  postgresql: %s", i+1, gl, wl)
		}
	}
	return ""
}

// sameBytes compares two raw values, NULL (nil) included.
func sameBytes(a, b []byte) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return bytes.Equal(a, b)
}
