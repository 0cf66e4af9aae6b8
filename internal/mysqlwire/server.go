package mysqlwire

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// Config configures a Server.
type Config struct {
	// Database is the Runnel database every session opens (default
	// "dev"); MySQL's databases are its schemas.
	Database string
	// MaxPacketSize bounds a client's command, joined across packets
	// (default DefaultMaxPacketSize). A larger one ends the connection
	// with ER_NET_PACKET_TOO_LARGE.
	MaxPacketSize int
	// AuthTrustLoopback lets users without a password connect from a
	// loopback address; AuthTrustAll from anywhere (pgwire's rules).
	AuthTrustLoopback, AuthTrustAll bool
	// HandshakeTimeout bounds the handshake and authentication (default
	// 30 s).
	HandshakeTimeout time.Duration
	Logger           *slog.Logger
}

// DefaultMaxPacketSize is the default MaxPacketSize: MySQL 8's default
// max_allowed_packet.
const DefaultMaxPacketSize = 64 << 20

// ServerVersion is the version string sent in the handshake and
// returned by VERSION() and @@version: MySQL 8.0's syntax level, then
// Runnel's name, as MySQL-compatible servers do.
const ServerVersion = "8.0.36-runnel"

// DefaultConfig trusts users without a password from loopback addresses.
func DefaultConfig() Config { return Config{AuthTrustLoopback: true} }

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("mysqlwire: server closed")

// Server accepts MySQL connections and runs one goroutine per connection.
type Server struct {
	cfg Config
	eng pgwire.Engine
	log *slog.Logger

	baseCtx    context.Context
	baseCancel context.CancelCauseFunc

	mu        sync.Mutex
	closing   bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	nextID    uint32
	wg        sync.WaitGroup

	// panicked is a test hook called when a connection recovered a panic.
	panicked func(v any)
}

// NewServer returns a server whose sessions are eng's.
func NewServer(cfg Config, eng pgwire.Engine) *Server {
	if cfg.Database == "" {
		cfg.Database = "dev"
	}
	if cfg.MaxPacketSize <= 0 {
		cfg.MaxPacketSize = DefaultMaxPacketSize
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Server{cfg: cfg, eng: eng, log: cfg.Logger, baseCtx: ctx, baseCancel: cancel,
		listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{}}
}

// Serve accepts connections on ln until Shutdown; it always closes ln.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	return pgwire.AcceptLoop(ln, "mysqlwire", s.log, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.closing
	}, s.startConn, ErrServerClosed)
}

// startConn registers and starts a connection goroutine; false when the
// server is shutting down.
func (s *Server) startConn(nc net.Conn) bool {
	c := &conn{s: s, nc: nc, pio: packetIO{r: bufio.NewReaderSize(nc, 16<<10), w: bufio.NewWriterSize(nc, 32<<10), max: s.cfg.MaxPacketSize}}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return false
	}
	s.nextID++
	c.id = s.nextID
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	return true
}

// errShutdown is the cause of every statement context at Shutdown.
var errShutdown = sqlerr.New(sqlerr.AdminShutdown, "terminating connection due to administrator command")

// Shutdown stops accepting connections, cancels running statements,
// closes idle connections and waits for the connection goroutines until
// ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.baseCancel(errShutdown)
	for _, c := range conns {
		c.interrupt()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}
