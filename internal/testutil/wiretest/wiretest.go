package wiretest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/pgwire"
)

// ConnectTimeout bounds Connect. Connecting is a startup handshake and a
// few catalog reads; on a loaded 2-core CI machine that still finishes in
// well under a second, so 30 s only trips on a server that is stuck.
const ConnectTimeout = 30 * time.Second

// StmtTimeout bounds one statement run by Exec, QueryStrings and
// QueryText. A statement that hangs is a bug worth a clear failure rather
// than a test-binary timeout.
const StmtTimeout = 120 * time.Second

// CloseTimeout bounds Served.Stop. A server whose barrier never completes
// cannot close; the test reports that instead of hanging.
const CloseTimeout = 30 * time.Second

// Service is a server that Serve can run, such as internal/server.Server.
type Service interface {
	// Serve accepts connections on ln until Close; it closes ln.
	Serve(ln net.Listener) error
	// Close stops serving and releases the server's resources.
	Close() error
}

// Served is a Service running on a loopback listener.
type Served struct {
	// Addr is the listener's host:port.
	Addr string

	svc  Service
	done chan error

	stopOnce sync.Once
	stopErr  error
}

// Serve listens on a fresh loopback port and runs svc.Serve on it until
// Stop or the end of the test (Stop is registered with t.Cleanup and
// reports a failed or hung shutdown with t.Errorf). If listening fails,
// svc is closed and the test fails.
func Serve(t testing.TB, svc Service) *Served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		svc.Close()
		t.Fatalf("listen on loopback: %v", err)
	}
	s := &Served{Addr: ln.Addr().String(), svc: svc, done: make(chan error, 1)}
	go func() { s.done <- svc.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop server on %s: %v", s.Addr, err)
		}
	})
	return s
}

// URL is the postgres:// URL of database dev as user root.
func (s *Served) URL() string { return URL(s.Addr) }

// URL is the postgres:// URL of database dev as user root at addr.
func URL(addr string) string {
	return fmt.Sprintf("postgres://root@%s/dev?sslmode=disable", addr)
}

// Connect opens a pgx session to database dev; see the package-level
// Connect.
func (s *Served) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	return Connect(t, s.URL())
}

// Stop closes the service and waits for Serve to return, at most
// CloseTimeout (after which the Serve goroutine is leaked and an error
// returned). It returns Close's error, or Serve's if it is anything other
// than the normal end of serving. Later calls return the first result.
func (s *Served) Stop() error {
	s.stopOnce.Do(func() {
		result := make(chan error, 1)
		go func() {
			closeErr := s.svc.Close()
			serveErr := <-s.done
			if errors.Is(serveErr, pgwire.ErrServerClosed) || errors.Is(serveErr, net.ErrClosed) {
				serveErr = nil
			}
			result <- errors.Join(closeErr, serveErr)
		}()
		select {
		case s.stopErr = <-result:
		case <-time.After(CloseTimeout):
			s.stopErr = fmt.Errorf("server did not stop within %v (a barrier is stuck?)", CloseTimeout)
		}
	})
	return s.stopErr
}

// Connect opens a pgx session at url (bounded by ConnectTimeout) and closes
// it when the test ends.
func Connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Exec runs one statement (bounded by StmtTimeout) and fails the test on
// error. Pass pgx.QueryExecModeSimpleProtocol as the first argument for the
// simple protocol.
func Exec(t testing.TB, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StmtTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// QueryStrings runs a query (extended protocol unless args say otherwise)
// and renders each row as its values decoded by pgx, formatted with
// fmt.Sprint and joined by "|". A NULL renders as "<nil>".
func QueryStrings(t testing.TB, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatalf("%s: decode row: %v", sql, err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// QueryText runs a query over the simple protocol and renders each row as
// the server's text output joined by "|", with "NULL" for NULL — exactly
// what psql would print, so the server's output formatting is what is
// tested. Rows stay in the order the server sent them.
func QueryText(t testing.TB, conn *pgx.Conn, sql string) []string {
	t.Helper()
	out, err := TryQueryText(conn, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// TryQueryText is QueryText returning the error instead of failing the
// test, for callers that expect errors or run outside the test goroutine.
func TryQueryText(conn *pgx.Conn, sql string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), StmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := rows.RawValues()
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rows.Err()
}
