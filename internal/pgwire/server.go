package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Config configures a Server. The zero value is usable except that it
// trusts nobody: set AuthTrustLoopback (DefaultConfig does) for the usual
// local setup.
type Config struct {
	// TLS enables SSL negotiation; nil answers 'N' to SSLRequest.
	TLS *tls.Config
	// RequireTLS refuses connections from non-loopback addresses that did
	// not negotiate TLS (FATAL 28000).
	RequireTLS bool
	// MaxMessageSize bounds a message body in bytes (default
	// DefaultMaxMessageSize). A larger message is answered with a FATAL
	// 54000 error and the connection is closed.
	MaxMessageSize int
	// AuthTrustLoopback lets users without a password connect from a
	// loopback address (or a Unix socket) without authentication. Users
	// with a password always authenticate with SCRAM-SHA-256.
	AuthTrustLoopback bool
	// AuthTrustAll lets users without a password connect from anywhere.
	AuthTrustAll bool
	// Logger receives connection-level events (nil: slog.Default()).
	Logger *slog.Logger
	// ServerVersion is reported as server_version (default
	// DefaultServerVersion). Drivers parse its leading number.
	ServerVersion string
	// TimeZone is the initial TimeZone parameter (default "UTC"); the
	// session may change it with ClientConn.SetParameterStatus.
	TimeZone string
	// StartupTimeout bounds the time from accept to the end of
	// authentication (default 30 s).
	StartupTimeout time.Duration
}

const (
	// DefaultMaxMessageSize is PostgreSQL's limit for most messages is 1 GB;
	// we keep well below it because the whole message is held in memory.
	DefaultMaxMessageSize = 64 << 20
	DefaultServerVersion  = "15.0 (Runnel)"
)

// DefaultConfig is the configuration of a local server: trust on loopback.
func DefaultConfig() Config { return Config{AuthTrustLoopback: true} }

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("pgwire: server closed")

// Server accepts PostgreSQL connections and runs one goroutine per
// connection.
type Server struct {
	cfg Config
	eng Engine
	log *slog.Logger

	// baseCtx is cancelled by Shutdown once the grace period ends.
	baseCtx    context.Context
	baseCancel context.CancelCauseFunc

	mu        sync.Mutex
	closing   bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	byPID     map[uint32]*conn
	nextPID   uint32
	wg        sync.WaitGroup
	// testHooks are nil in production.
	hooks *testHooks
}

// testHooks are called at named points so tests can order races without
// sleeping.
type testHooks struct {
	// panicked is called when a connection goroutine recovered a panic.
	panicked func(v any, stack []byte)
}

// NewServer returns a server that serves eng.
func NewServer(cfg Config, eng Engine) *Server {
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.ServerVersion == "" {
		cfg.ServerVersion = DefaultServerVersion
	}
	if cfg.TimeZone == "" {
		cfg.TimeZone = "UTC"
	}
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Server{
		cfg: cfg, eng: eng, log: log,
		baseCtx: ctx, baseCancel: cancel,
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
		byPID:     map[uint32]*conn{},
	}
}

// Serve accepts connections on ln until Shutdown or an accept error; it
// always closes ln. It returns ErrServerClosed after Shutdown.
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
	return AcceptLoop(ln, "pgwire", s.log, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.closing
	}, s.startConn, ErrServerClosed)
}

// AcceptLoop accepts connections on ln and hands each to start, the
// accept loop of every wire protocol Runnel serves (pgwire, mysqlwire).
// It returns closed once closing reports true after an accept error, or
// when start refuses a connection (the server is shutting down; the
// connection is closed). Temporary accept errors (out of file
// descriptors and the like) back off instead of giving up on every
// future client; ln closed by someone else is an error naming proto.
func AcceptLoop(ln net.Listener, proto string, log *slog.Logger, closing func() bool, start func(net.Conn) bool, closed error) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if closing() {
				return closed
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("%s: accept on %s: %w", proto, ln.Addr(), err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			log.Warn(proto+": accept failed", "addr", ln.Addr(), "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !start(nc) {
			nc.Close()
			return closed
		}
	}
}

// startConn registers and starts a connection goroutine; false when the
// server is shutting down.
func (s *Server) startConn(nc net.Conn) bool {
	c := newConn(s, nc)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		if s.byPID[c.pid] == c {
			delete(s.byPID, c.pid)
		}
		s.mu.Unlock()
	}()
	return true
}

// register assigns a process id and a random secret for BackendKeyData.
func (s *Server) register(c *conn) error {
	var secret [4]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return fmt.Errorf("generating cancel secret: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		s.nextPID++
		if s.nextPID == 0 {
			continue
		}
		if _, taken := s.byPID[s.nextPID]; !taken {
			break
		}
	}
	c.pid = s.nextPID
	c.secret = binary.BigEndian.Uint32(secret[:])
	s.byPID[c.pid] = c
	return nil
}

// cancel handles a CancelRequest: it cancels the running statement of the
// connection with that key, if any. Mismatches are silently ignored, as
// PostgreSQL does.
func (s *Server) cancel(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.byPID[pid]
	s.mu.Unlock()
	if c == nil || len(secret) != 4 {
		return
	}
	var want [4]byte
	binary.BigEndian.PutUint32(want[:], c.secret)
	if subtle.ConstantTimeCompare(want[:], secret) != 1 {
		return
	}
	c.cancelStatement(errQueryCanceled)
}

// Shutdown stops accepting connections, asks every connection to end
// (idle ones get FATAL 57P01 at once, running statements are cancelled),
// and waits for them until ctx is done; then it closes the remaining
// connections and returns ctx's error.
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
	s.baseCancel(errAdminShutdown)
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
