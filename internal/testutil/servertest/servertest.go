package servertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/testutil/wiretest"
)

// BarrierInterval is the default epoch interval of a test server: short,
// so that FLUSH and implicit-flush DML return quickly, but long enough
// that a loaded 2-core machine is not busy only with barriers.
const BarrierInterval = 50 * time.Millisecond

// Parallelism is the default number of actors per hash-distributed
// fragment: two exercises the exchange and the multi-actor paths without
// assuming the machine's core count.
const Parallelism = 2

// Option adjusts a test server's configuration.
type Option func(*server.Config)

// WithDataDir runs the server on dir instead of a fresh temporary
// directory (to reopen the data of an earlier server).
func WithDataDir(dir string) Option {
	return func(c *server.Config) { c.DataDir = dir }
}

// WithLogger sends the server's log to l.
func WithLogger(l *slog.Logger) Option {
	return func(c *server.Config) { c.Logger = l }
}

// WithConfig lets the caller change any other configuration field.
func WithConfig(fn func(*server.Config)) Option { return Option(fn) }

// Server is a real Runnel server serving pgwire on a loopback port.
// The embedded Served gives Addr, URL, Connect and Stop.
type Server struct {
	*wiretest.Served
	// Server is the running server, for tests that reach into it.
	Server *server.Server
	// DataDir is the server's data directory.
	DataDir string

	cfg server.Config
}

// Start opens a server with the test defaults adjusted by opts and serves
// it until the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := server.Config{
		BarrierInterval: BarrierInterval,
		Parallelism:     Parallelism,
		Logger:          Logger(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	return start(t, cfg)
}

func start(t testing.TB, cfg server.Config) *Server {
	t.Helper()
	srv, err := server.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open runnel server on %s: %v", cfg.DataDir, err)
	}
	return &Server{Served: wiretest.Serve(t, srv), Server: srv, DataDir: cfg.DataDir, cfg: cfg}
}

// Restart stops s (failing the test if it does not stop cleanly) and opens
// a new server with the same configuration and data directory on a new
// port. Sessions of s are gone; connect again.
func (s *Server) Restart(t testing.TB) *Server {
	t.Helper()
	if err := s.Stop(); err != nil {
		t.Fatalf("stop runnel server: %v", err)
	}
	return start(t, s.cfg)
}

// Logger is the default test-server logger: it discards everything unless
// RUNNEL_TEST_LOG is set, to a level name (debug, info, warn, error) or to
// anything else for info.
func Logger() *slog.Logger {
	v := os.Getenv("RUNNEL_TEST_LOG")
	if v == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(v))); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// URL is the postgres:// URL of database dev as user root at addr.
func URL(addr string) string { return wiretest.URL(addr) }

// Connect opens a pgx session at url and closes it when the test ends.
func Connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	return wiretest.Connect(t, url)
}

// ConnectNotices is Connect that also records every notice the server
// sends, as "SEVERITY: message"; notices returns those so far.
func ConnectNotices(t testing.TB, url string) (conn *pgx.Conn, notices func() []string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		got = append(got, n.Severity+": "+n.Message)
		mu.Unlock()
	}
	conn, err = pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// Exec runs one statement and fails the test on error.
func Exec(t testing.TB, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	wiretest.Exec(t, conn, sql, args...)
}

// QueryStrings renders each row's pgx-decoded values with fmt.Sprint,
// joined by "|".
func QueryStrings(t testing.TB, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	return wiretest.QueryStrings(t, conn, sql, args...)
}

// QueryText renders each row as the server's text output joined by "|"
// ("NULL" for NULL), over the simple protocol.
func QueryText(t testing.TB, conn *pgx.Conn, sql string) []string {
	t.Helper()
	return wiretest.QueryText(t, conn, sql)
}

// TryQueryText is QueryText returning the error.
func TryQueryText(conn *pgx.Conn, sql string) ([]string, error) {
	return wiretest.TryQueryText(conn, sql)
}
