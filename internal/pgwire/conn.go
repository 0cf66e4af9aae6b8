package pgwire

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// flushThreshold is the output buffer size at which rows are written out
// while a result streams: large enough that a 1 M-row SELECT makes few
// syscalls, small enough to keep per-connection memory modest.
const flushThreshold = 32 << 10

// conn is one client connection. All fields except mu/stmtCancel are used
// only by the connection's goroutine.
type conn struct {
	srv *Server
	nc  net.Conn // the accepted connection
	rw  net.Conn // nc or the TLS connection over it
	be  *pgproto3.Backend

	wbuf []byte
	werr error // first write error; the connection is dead after it

	pid, secret uint32
	ctx         context.Context // the connection's context (server base)
	user        string

	mu         sync.Mutex
	stmtCancel context.CancelCauseFunc // cancels the running statement; nil when idle

	sess    Session
	status  paramStatus
	fopts   formatOptions
	stmts   map[string]*prepared
	portals map[string]*portal

	// ignoreTillSync is set after an error in an extended-protocol message.
	ignoreTillSync bool

	// restartTimeout re-arms the running request's statement timeout from
	// the session's current setting; set by beginStatement (runSimple).
	restartTimeout func()

	connActivity // for Server.Sessions (activity.go)
}

// paramStatus is the ordered set of reported parameters.
type paramStatus struct {
	names  []string
	values map[string]string
}

func (p *paramStatus) set(name, value string) bool {
	if p.values == nil {
		p.values = map[string]string{}
	}
	old, ok := p.values[name]
	if !ok {
		p.names = append(p.names, name)
	}
	p.values[name] = value
	return !ok || old != value
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		srv: s, nc: nc, rw: nc, ctx: s.baseCtx,
		stmts:   map[string]*prepared{},
		portals: map[string]*portal{},
	}
}

// errTerminate ends the message loop without an error report.
var errTerminate = errors.New("client terminated the connection")

// interrupt wakes a connection blocked on a read so that it notices a
// shutdown.
func (c *conn) interrupt() {
	c.mu.Lock()
	if c.stmtCancel != nil {
		c.stmtCancel(errAdminShutdown)
	}
	c.mu.Unlock()
	c.nc.SetReadDeadline(time.Now())
}

// terminate is Backend.Terminate: the running statement is cancelled
// (and one about to start is, in beginStatement) and a read waiting for
// the client's next message is woken; the connection then ends with FATAL
// 57P01 (loop, receive, simpleQuery, extended).
func (c *conn) terminate() {
	c.mu.Lock()
	c.terminated.Store(true)
	if c.stmtCancel != nil {
		c.stmtCancel(errTerminated)
	}
	c.mu.Unlock()
	c.nc.SetReadDeadline(time.Now())
}

// terminatedError is the end of a terminated connection, or nil.
func (c *conn) terminatedError() error {
	if c.terminated.Load() {
		return &fatalError{errTerminated}
	}
	return nil
}

func (c *conn) cancelStatement(cause error) {
	c.mu.Lock()
	if c.stmtCancel != nil {
		c.stmtCancel(cause)
	}
	c.mu.Unlock()
}

// ClientCheckInterval is how often a running statement checks that its
// client is still connected (see beginStatement).
var ClientCheckInterval = time.Second

// beginStatement returns the context of one client request (a Query or an
// extended-protocol message); a cancel request cancels it.
//
// A session with a statement timeout (StatementTimeouter) has the request
// cancelled with 57014 once it has run that long; in a multi-statement
// simple Query, once its current statement has (c.restartTimeout).
func (c *conn) beginStatement() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.mu.Lock()
	c.stmtCancel = cancel
	if c.terminated.Load() {
		cancel(errTerminated)
	}
	c.mu.Unlock()
	var timer *time.Timer
	arm := func() {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if st, ok := c.sess.(StatementTimeouter); ok {
			if d := st.StatementTimeout(); d > 0 {
				timer = time.AfterFunc(d, func() { cancel(errStatementTimeout) })
			}
		}
	}
	arm()
	c.restartTimeout = arm
	// A statement whose client has gone away is cancelled: nobody reads
	// its answer, and one left running (a string_agg over millions of
	// rows, a cross join) kept the server busy and growing for minutes
	// after the client's timeout closed the connection, until the kernel
	// killed the process for memory (found by the corpus replay). Checked
	// every ClientCheckInterval while the statement runs (PostgreSQL's
	// client_connection_check_interval, on here by default).
	var watch *time.Timer
	var watchMu sync.Mutex
	stopped := false
	var check func()
	check = func() {
		if ctx.Err() != nil {
			return
		}
		if peerClosed(c.nc) {
			cancel(errClientGone)
			return
		}
		watchMu.Lock()
		if !stopped {
			watch.Reset(ClientCheckInterval)
		}
		watchMu.Unlock()
	}
	watchMu.Lock()
	watch = time.AfterFunc(ClientCheckInterval, check)
	watchMu.Unlock()
	return ctx, func() {
		if timer != nil {
			timer.Stop()
		}
		c.restartTimeout = nil
		watchMu.Lock()
		stopped = true
		watch.Stop()
		watchMu.Unlock()
		c.mu.Lock()
		c.stmtCancel = nil
		c.mu.Unlock()
		cancel(nil)
	}
}

func (c *conn) serve() {
	defer c.nc.Close()
	defer c.recoverPanic() // a panic while closing the session
	defer c.closeSession()
	defer c.recoverPanic()
	c.nc.SetDeadline(time.Now().Add(c.srv.cfg.StartupTimeout))
	err := c.startup()
	if err == nil {
		c.nc.SetDeadline(time.Time{})
		if c.srv.baseCtx.Err() != nil {
			// Shutdown began during startup; its interrupt may have
			// been lost to the deadline reset.
			err = &fatalError{errAdminShutdown}
		} else {
			err = c.loop()
		}
	}
	if err != nil && !errors.Is(err, errTerminate) {
		var fe *fatalError
		if errors.As(err, &fe) {
			c.send(errorResponse("FATAL", fe.err))
			c.flush()
		} else if c.werr == nil && !isDisconnect(err) {
			c.srv.log.Debug("pgwire: connection ended", "remote", c.nc.RemoteAddr(), "err", err)
		}
	}
}

// recoverPanic turns a panic on the connection's goroutine (in the engine
// or here) into the end of this connection only (I6): it is logged with its
// stack and the client gets FATAL XX000.
func (c *conn) recoverPanic() {
	r := recover()
	if r == nil {
		return
	}
	stack := debug.Stack()
	c.srv.log.Error("pgwire: panic in connection", "pid", c.pid, "panic", r, "stack", string(stack))
	if h := c.srv.hooks; h != nil && h.panicked != nil {
		h.panicked(r, stack)
	}
	c.werr = nil
	c.wbuf = c.wbuf[:0]
	c.send(errorResponse("FATAL", sqlerr.New(sqlerr.InternalError, "internal error: the connection is closed")))
	c.flush()
}

func isDisconnect(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

func (c *conn) closeSession() {
	for name, p := range c.portals {
		p.close()
		delete(c.portals, name)
	}
	for name, st := range c.stmts {
		st.close()
		delete(c.stmts, name)
	}
	if c.sess != nil {
		c.sess.Close()
		c.sess = nil
	}
}

// send buffers a message; write errors are remembered in c.werr.
func (c *conn) send(msg pgproto3.BackendMessage) {
	if c.werr != nil {
		return
	}
	buf, err := msg.Encode(c.wbuf)
	if err != nil {
		// Only oversized fields fail to encode; the client cannot get
		// this message, and the protocol state is now unknown.
		c.werr = fmt.Errorf("encoding %T: %w", msg, err)
		return
	}
	c.wbuf = buf
	if len(c.wbuf) >= flushThreshold {
		c.flush()
	}
}

func (c *conn) flush() {
	if c.werr != nil || len(c.wbuf) == 0 {
		c.wbuf = c.wbuf[:0]
		return
	}
	_, err := c.rw.Write(c.wbuf)
	if err != nil {
		c.werr = fmt.Errorf("writing to client %s: %w", c.nc.RemoteAddr(), err)
	}
	if cap(c.wbuf) > 4*flushThreshold {
		c.wbuf = nil // do not keep a huge buffer for an idle connection
	} else {
		c.wbuf = c.wbuf[:0]
	}
}

// receive reads one message, mapping read failures to connection-ending
// errors.
func (c *conn) receive() (pgproto3.FrontendMessage, error) {
	msg, err := c.be.Receive()
	if err == nil {
		return msg, nil
	}
	var tooBig *pgproto3.ExceededMaxBodyLenErr
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		return nil, &fatalError{sqlerr.Errorf(sqlerr.ProgramLimitExceeded,
			"message of %d bytes exceeds the limit of %d bytes", tooBig.ActualBodyLen, tooBig.MaxExpectedBodyLen)}
	case c.srv.baseCtx.Err() != nil && errors.As(err, &ne) && ne.Timeout():
		return nil, &fatalError{errAdminShutdown}
	case c.terminated.Load() && errors.As(err, &ne) && ne.Timeout():
		return nil, &fatalError{errTerminated}
	case err == io.EOF:
		// pgproto3 reports a failed read as io.ErrUnexpectedEOF; a bare
		// io.EOF comes from decoding a whole, received body that ends
		// before a string's terminator (a Parse or Execute cut short).
		// That is the client's protocol violation, not a disconnect.
		return nil, &fatalError{sqlerr.Errorf(sqlerr.ProtocolViolation, "invalid frontend message: a string is missing its terminator")}
	case isDisconnect(err) || errors.As(err, &ne):
		return nil, &connLostError{err}
	}
	return nil, &fatalError{sqlerr.Errorf(sqlerr.ProtocolViolation, "invalid frontend message: %v", err)}
}

// ----- startup -----

func (c *conn) startup() error {
	c.be = pgproto3.NewBackend(c.rw, c.rw)
	var sm *pgproto3.StartupMessage
	for sm == nil {
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			if isDisconnect(err) {
				return err
			}
			var ne net.Error
			if errors.As(err, &ne) {
				return err
			}
			return &fatalError{sqlerr.Errorf(sqlerr.ProtocolViolation, "invalid startup packet: %v", err)}
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if err := c.negotiateTLS(); err != nil {
				return err
			}
		case *pgproto3.GSSEncRequest:
			if _, err := c.rw.Write([]byte{'N'}); err != nil {
				return err
			}
		case *pgproto3.CancelRequest:
			c.srv.cancel(m.ProcessID, m.SecretKey)
			return errTerminate
		case *pgproto3.StartupMessage:
			sm = m
		}
	}
	if c.srv.cfg.RequireTLS && c.rw == c.nc && !isLocal(c.nc) {
		return fatal(sqlerr.InvalidAuthorizationSpec, "SSL connection is required")
	}
	if sm.ProtocolVersion != pgproto3.ProtocolVersion30 {
		// A 3.2 client accepts a downgrade to 3.0.
		c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unrecognizedOptions(sm.Parameters)})
	} else if opts := unrecognizedOptions(sm.Parameters); len(opts) > 0 {
		c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: opts})
	}
	params, err := c.startupParams(sm.Parameters)
	if err != nil {
		return err
	}
	c.be.SetMaxBodyLen(c.srv.cfg.MaxMessageSize)
	info, err := c.authenticate(params.User)
	if err != nil {
		return err
	}
	if err := c.srv.register(c); err != nil {
		return err
	}
	params.Backend = (*backend)(c)
	c.status.set("server_version", c.srv.cfg.ServerVersion)
	c.status.set("server_encoding", "UTF8")
	c.status.set("client_encoding", "UTF8")
	c.status.set("DateStyle", "ISO, MDY")
	c.status.set("IntervalStyle", "postgres")
	c.status.set("TimeZone", c.srv.cfg.TimeZone)
	c.status.set("integer_datetimes", "on")
	c.status.set("standard_conforming_strings", "on")
	c.status.set("application_name", params.ApplicationName)
	c.status.set("is_superuser", onOff(info.Superuser))
	c.status.set("session_authorization", params.User)
	c.fopts.setTimeZone(c.srv.cfg.TimeZone)

	// As in PostgreSQL, authentication completes before the session is
	// set up, so a missing database is a FATAL after AuthenticationOk and
	// notices from NewSession reach a client that expects them.
	c.send(&pgproto3.AuthenticationOk{})
	ctx, done := c.beginStatement()
	sess, err := c.srv.eng.NewSession(ctx, params, (*clientConn)(c))
	done()
	if err != nil {
		return &fatalError{toSQLError(ctx, err)}
	}
	c.sess = sess
	remote := ""
	if params.RemoteAddr != nil {
		remote = params.RemoteAddr.String()
	}
	c.info.Store(&connInfo{user: params.User, database: params.Database, app: params.ApplicationName, remote: remote, connected: time.Now()})
	obs.SessionOpened()
	for _, name := range c.status.names {
		c.send(&pgproto3.ParameterStatus{Name: name, Value: c.status.values[name]})
	}
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: binary.BigEndian.AppendUint32(nil, c.secret)})
	c.readyForQuery()
	return c.werr
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func isLocal(nc net.Conn) bool {
	switch a := nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

func unrecognizedOptions(p map[string]string) []string {
	var out []string
	for k := range p {
		if strings.HasPrefix(k, "_pq_.") {
			out = append(out, k)
		}
	}
	return out
}

func (c *conn) negotiateTLS() error {
	if c.srv.cfg.TLS == nil || c.rw != c.nc {
		_, err := c.rw.Write([]byte{'N'})
		return err
	}
	if _, err := c.nc.Write([]byte{'S'}); err != nil {
		return err
	}
	tc := tls.Server(c.nc, c.srv.cfg.TLS)
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake with %s: %w", c.nc.RemoteAddr(), err)
	}
	c.rw = tc
	// A new reader: bytes the client sent in clear after SSLRequest must
	// not be read as if they came over TLS.
	c.be = pgproto3.NewBackend(c.rw, c.rw)
	return nil
}

func (c *conn) startupParams(m map[string]string) (StartupParams, error) {
	p := StartupParams{Options: map[string]string{}, Other: map[string]string{}, RemoteAddr: c.nc.RemoteAddr()}
	for k, v := range m {
		switch k {
		case "user":
			p.User = v
		case "database":
			p.Database = v
		case "application_name":
			p.ApplicationName = v
		case "options":
			if err := parseOptions(v, p.Options); err != nil {
				return p, err
			}
		case "replication":
			if v != "false" && v != "0" && v != "off" && v != "no" {
				return p, fatal(sqlerr.FeatureNotSupported, "replication connections are not supported")
			}
		default:
			if !strings.HasPrefix(k, "_pq_.") {
				p.Other[k] = v
			}
		}
	}
	if p.User == "" {
		return p, fatal(sqlerr.InvalidAuthorizationSpec, "no PostgreSQL user name specified in startup packet")
	}
	if p.Database == "" {
		p.Database = p.User
	}
	return p, nil
}

// parseOptions reads "-c name=value" and "--name=value" settings of the
// options startup parameter; backslash escapes a space.
func parseOptions(s string, out map[string]string) error {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	bad := func(w string) error {
		return fatal(sqlerr.InvalidParameterValue, fmt.Sprintf("invalid command-line argument for server process: %s", w))
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		var kv string
		switch {
		case w == "-c" && i+1 < len(words):
			i++
			kv = words[i]
		case strings.HasPrefix(w, "-c"):
			kv = w[2:]
		case strings.HasPrefix(w, "--"):
			kv = w[2:]
		default:
			return bad(w)
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return bad(w)
		}
		out[strings.ReplaceAll(k, "-", "_")] = v
	}
	return nil
}

// authenticate applies the server's policy: users with a password always
// use SCRAM-SHA-256; users without one are trusted only where the
// configuration allows.
func (c *conn) authenticate(user string) (AuthInfo, error) {
	ctx, done := c.beginStatement()
	info, err := c.srv.eng.UserAuth(ctx, user)
	done()
	if err != nil {
		return info, &fatalError{toSQLError(ctx, err)}
	}
	failed := fatal(sqlerr.InvalidPassword, fmt.Sprintf("password authentication failed for user %q", user))
	if info.SCRAMVerifier == "" {
		if c.srv.cfg.AuthTrustAll || c.srv.cfg.AuthTrustLoopback && isLocal(c.nc) {
			return info, nil
		}
		return info, failed
	}
	v, err := parseSCRAMVerifier(info.SCRAMVerifier)
	if err != nil {
		c.srv.log.Warn("pgwire: user has an invalid SCRAM verifier", "user", user)
		return info, failed
	}
	if err := c.scramExchange(v); err != nil {
		if errors.Is(err, errSCRAMAuthFailed) {
			return info, failed
		}
		var fe *fatalError
		if errors.As(err, &fe) || isConnError(err) {
			return info, err
		}
		return info, fatal(sqlerr.ProtocolViolation, err.Error())
	}
	return info, nil
}

func (c *conn) scramExchange(v *scramVerifier) error {
	srv := &scramServer{v: v}
	c.send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{scramMechanism}})
	c.flush()
	if c.werr != nil {
		return c.werr
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASL)
	msg, err := c.receive()
	if err != nil {
		return err
	}
	init, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return fmt.Errorf("expected SASL initial response, got %T", msg)
	}
	if init.AuthMechanism != scramMechanism {
		return fmt.Errorf("SASL mechanism %q is not supported", init.AuthMechanism)
	}
	out, err := srv.first(init.Data)
	if err != nil {
		return err
	}
	c.send(&pgproto3.AuthenticationSASLContinue{Data: out})
	c.flush()
	if c.werr != nil {
		return c.werr
	}
	c.be.SetAuthType(pgproto3.AuthTypeSASLContinue)
	msg, err = c.receive()
	if err != nil {
		return err
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fmt.Errorf("expected SASL response, got %T", msg)
	}
	out, err = srv.final(resp.Data)
	if err != nil {
		return err
	}
	c.send(&pgproto3.AuthenticationSASLFinal{Data: out})
	c.be.SetAuthType(pgproto3.AuthTypeOk)
	return nil
}

// clientConn is the Session's view of the connection.
type clientConn conn

func (cc *clientConn) Notice(n Notice) {
	c := (*conn)(cc)
	sev := n.Severity
	if sev == "" {
		sev = "NOTICE"
	}
	code := n.Code
	if code == "" {
		code = sqlerr.SuccessfulCompletion
	}
	c.send(&pgproto3.NoticeResponse{Severity: sev, SeverityUnlocalized: sev, Code: code,
		Message: n.Message, Detail: n.Detail, Hint: n.Hint})
}

func (cc *clientConn) SetParameterStatus(name, value string) {
	c := (*conn)(cc)
	if name == "TimeZone" {
		c.fopts.setTimeZone(value)
	}
	if name == "application_name" {
		c.app.Store(&value)
	}
	if c.status.set(name, value) && c.sess != nil {
		// During NewSession the value joins the startup set instead.
		c.send(&pgproto3.ParameterStatus{Name: name, Value: value})
	}
}

// ----- message loop -----

func (c *conn) readyForQuery() {
	st := TxIdle
	if c.sess != nil {
		st = c.sess.TxStatus()
	}
	c.noteTxStatus(st)
	c.send(&pgproto3.ReadyForQuery{TxStatus: byte(st)})
	c.flush()
}

func (c *conn) loop() error {
	for {
		if c.werr != nil {
			return c.werr
		}
		if c.srv.baseCtx.Err() != nil {
			return &fatalError{errAdminShutdown}
		}
		if err := c.terminatedError(); err != nil {
			return err
		}
		msg, err := c.receive()
		if err != nil {
			return err
		}
		if c.ignoreTillSync {
			switch msg.(type) {
			case *pgproto3.Sync:
			case *pgproto3.Terminate:
				return errTerminate
			default:
				continue
			}
		}
		if err := c.handle(msg); err != nil {
			return err
		}
	}
}

// handle processes one message. Errors it returns end the connection;
// statement errors are reported to the client inside.
func (c *conn) handle(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Query:
		return c.simpleQuery(m.String)
	case *pgproto3.Parse:
		return c.extended(func(ctx context.Context) error { return c.parse(ctx, m) })
	case *pgproto3.Bind:
		return c.extended(func(ctx context.Context) error { return c.bind(ctx, m) })
	case *pgproto3.Describe:
		return c.extended(func(ctx context.Context) error { return c.describe(ctx, m) })
	case *pgproto3.Execute:
		return c.extended(func(ctx context.Context) error { return c.execute(ctx, m) })
	case *pgproto3.Close:
		return c.extended(func(ctx context.Context) error { return c.closeObject(m) })
	case *pgproto3.Sync:
		c.ignoreTillSync = false
		c.sync()
		c.readyForQuery()
		return nil
	case *pgproto3.Flush:
		c.flush()
		return nil
	case *pgproto3.Terminate:
		return errTerminate
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Left over from a COPY that already failed: dropped, as
		// PostgreSQL does.
		return nil
	case *pgproto3.FunctionCall:
		// Answered like a simple query: error, then ReadyForQuery.
		c.sendError(nil, sqlerr.New(sqlerr.FeatureNotSupported, "function call protocol is not supported"))
		c.readyForQuery()
		return nil
	}
	return fatal(sqlerr.ProtocolViolation, fmt.Sprintf("unexpected message %T", msg))
}

// extended runs one extended-protocol message; an error is reported and
// starts the discard-until-Sync state.
func (c *conn) extended(fn func(ctx context.Context) error) error {
	ctx, done := c.beginStatement()
	err := fn(ctx)
	done()
	if err == nil {
		return nil
	}
	if isConnError(err) {
		return err
	}
	if err := c.terminatedError(); err != nil {
		return err // FATAL only, as PostgreSQL reports a terminated statement
	}
	c.sendError(ctx, err)
	c.ignoreTillSync = true
	return c.connErrorAfter()
}

// connErrorAfter turns a shutdown that cancelled the statement into the
// end of the connection.
func (c *conn) connErrorAfter() error {
	if c.srv.baseCtx.Err() != nil {
		return &fatalError{errAdminShutdown}
	}
	if err := c.terminatedError(); err != nil {
		return err
	}
	return c.werr
}

// connLostError is a failed read from the client. It is a distinct type
// so that an engine error wrapping io.EOF is not taken for a disconnect.
type connLostError struct{ err error }

func (e *connLostError) Error() string { return "reading from client: " + e.err.Error() }
func (e *connLostError) Unwrap() error { return e.err }

// isConnError tells errors that end the connection from statement errors.
// Only errors this package creates qualify.
func isConnError(err error) bool {
	var fe *fatalError
	var cl *connLostError
	return errors.As(err, &fe) || errors.As(err, &cl) || errors.Is(err, errTerminate) || errors.Is(err, errWrite)
}

var errWrite = errors.New("client write failed")

func (c *conn) sendError(ctx context.Context, err error) {
	e := toSQLError(ctx, err)
	obs.StatementFailed(string(e.Code))
	if e.Code == sqlerr.InternalError {
		c.srv.log.Warn("pgwire: internal error", "pid", c.pid, "err", err)
	}
	c.send(errorResponse("ERROR", e))
	if c.sess != nil {
		c.sess.OnError(e)
	}
}

// sync ends an implicit transaction: outside a transaction block the
// portals are dropped, as PostgreSQL drops them at commit.
func (c *conn) sync() {
	if c.sess != nil && c.sess.TxStatus() != TxIdle {
		return
	}
	for name, p := range c.portals {
		p.close()
		delete(c.portals, name)
	}
}

func (c *conn) simpleQuery(sql string) error {
	// The simple protocol drops the unnamed statement and portal.
	if p := c.portals[""]; p != nil {
		p.close()
		delete(c.portals, "")
	}
	if st := c.stmts[""]; st != nil {
		st.close()
		delete(c.stmts, "")
	}
	ctx, done := c.beginStatement()
	c.setActivity(sql)
	err := c.runSimple(ctx, sql)
	done()
	if err != nil {
		if isConnError(err) {
			return err
		}
		if terr := c.terminatedError(); terr != nil {
			return terr // FATAL only, as PostgreSQL reports a terminated statement
		}
		c.sendError(ctx, err)
		if cerr := c.connErrorAfter(); cerr != nil {
			return cerr
		}
	}
	// Idle only after the error aborted the block (sendError's OnError),
	// and before the client hears ReadyForQuery: another session that
	// looks once this one is ready sees it idle, with its final state.
	c.endActivity()
	c.readyForQuery()
	return nil
}

func (c *conn) runSimple(ctx context.Context, sql string) error {
	stmts, err := c.sess.Parse(ctx, sql, nil)
	if err != nil {
		return err
	}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	if len(stmts) == 0 {
		c.send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	start := time.Now()
	for i, st := range stmts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if i > 0 && c.restartTimeout != nil {
			// As PostgreSQL (13+) does, each statement of a multi-statement
			// Query message gets the timeout on its own, read when it
			// starts: "SET statement_timeout = 200; SELECT ..." in one
			// message times the SELECT out.
			c.restartTimeout()
		}
		res, err := st.Execute(ctx, nil)
		if err != nil {
			return err
		}
		if res.Rows != nil && res.Copy == nil {
			formats := make([]int16, len(res.Columns))
			c.sendRowDescription(res.Columns, formats)
		}
		r := &runningResult{res: res, formats: nil}
		_, err = c.runResult(ctx, r, 0)
		r.close()
		if err != nil {
			return err
		}
		obs.StatementDone(res.Tag, time.Since(start))
		start = time.Now()
	}
	return nil
}

func (c *conn) sendRowDescription(cols []Column, formats []int16) {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, col := range cols {
		fields[i] = pgproto3.FieldDescription{
			Name:                 []byte(col.Name),
			TableOID:             col.TableOID,
			TableAttributeNumber: col.AttNum,
			DataTypeOID:          col.Type.OID(),
			DataTypeSize:         col.Type.TypLen(),
			TypeModifier:         col.Type.PGTypmod(), // VARHDRSZ included, as in pg_attribute.atttypmod
			Format:               formats[i],
		}
	}
	c.send(&pgproto3.RowDescription{Fields: fields})
}

// runningResult is a Result being delivered, possibly over several
// Execute messages.
type runningResult struct {
	res     Result
	formats []int16 // per column; nil means all text
	done    bool
}

func (r *runningResult) close() {
	if r.res.Rows != nil {
		r.res.Rows.Close()
		r.res.Rows = nil
	}
	if r.res.Copy != nil && r.res.Copy.In && r.res.Copy.Sink != nil && !r.done {
		r.res.Copy.Sink.Abort()
		r.res.Copy.Sink = nil
	}
}

// runResult delivers r: up to maxRows rows (0: all). It reports whether
// the result was suspended with rows left.
func (c *conn) runResult(ctx context.Context, r *runningResult, maxRows int64) (suspended bool, err error) {
	res := &r.res
	switch {
	case res.Copy != nil:
		r.done = true
		var tag string
		var err error
		if res.Copy.In {
			tag, err = c.copyIn(ctx, res.Copy)
			res.Copy.Sink = nil // finished or aborted by copyIn
		} else {
			tag, err = c.copyOut(ctx, res)
		}
		if err != nil {
			return false, err
		}
		c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		return false, nil
	case res.Rows != nil:
		n, more, err := c.sendRows(ctx, res.Rows, res.Columns, r.formats, maxRows)
		if err != nil {
			return false, err
		}
		if more {
			c.send(&pgproto3.PortalSuspended{})
			return true, nil
		}
		r.done = true
		res.Rows.Close()
		res.Rows = nil
		tag := res.Tag
		if tag == "" {
			tag = fmt.Sprintf("SELECT %d", n)
		}
		c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		return false, nil
	}
	r.done = true
	c.send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag)})
	return false, nil
}

// rowCheckInterval: the statement context is checked every so many rows
// while streaming, so a cancel stops an iterator that never looks at ctx.
const rowCheckInterval = 256

// sendRows streams rows as DataRow messages. This is the hot path: rows
// are encoded straight into the output buffer.
func (c *conn) sendRows(ctx context.Context, it RowIter, cols []Column, formats []int16, maxRows int64) (n int64, more bool, err error) {
	for maxRows <= 0 || n < maxRows {
		if n%rowCheckInterval == 0 && ctx.Err() != nil {
			return n, false, context.Cause(ctx)
		}
		row, err := it.Next(ctx)
		if err != nil {
			return n, false, err
		}
		if row == nil {
			return n, false, nil
		}
		if err := c.appendDataRow(row, cols, formats); err != nil {
			return n, false, err
		}
		n++
		if len(c.wbuf) >= flushThreshold {
			c.flush()
			if c.werr != nil {
				return n, false, errWrite
			}
		}
	}
	return n, true, nil
}

func (c *conn) appendDataRow(row types.Row, cols []Column, formats []int16) error {
	if len(row) != len(cols) {
		return fmt.Errorf("result row has %d values for %d columns", len(row), len(cols))
	}
	start := len(c.wbuf)
	buf := append(c.wbuf, 'D', 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(row)))
	var err error
	for i := range row {
		d := &row[i]
		if d.IsNull() {
			buf = append(buf, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		lenAt := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		if formats != nil && formats[i] == pgproto3.BinaryFormat {
			buf, err = appendBinary(buf, *d, cols[i].Type)
		} else {
			buf, err = appendText(buf, *d, cols[i].Type, &c.fopts)
		}
		if err != nil {
			c.wbuf = buf[:start]
			return err
		}
		binary.BigEndian.PutUint32(buf[lenAt:], uint32(len(buf)-lenAt-4))
	}
	binary.BigEndian.PutUint32(buf[start+1:], uint32(len(buf)-start-1))
	c.wbuf = buf
	return nil
}

// ----- COPY -----

// copyIn runs the COPY FROM STDIN sub-protocol. On any error the sink is
// aborted; CopyData/CopyDone/CopyFail still in flight are dropped by the
// main loop.
func (c *conn) copyIn(ctx context.Context, cp *Copy) (tag string, err error) {
	sink := cp.Sink
	finished := false
	defer func() {
		if !finished && sink != nil {
			sink.Abort()
		}
	}()
	if sink == nil {
		return "", errors.New("COPY FROM STDIN result without a sink")
	}
	if err := cp.Options.validate(); err != nil {
		return "", err
	}
	format, colFormats := copyWireFormats(cp)
	c.send(&pgproto3.CopyInResponse{OverallFormat: format, ColumnFormatCodes: colFormats})
	c.flush()
	if c.werr != nil {
		return "", errWrite
	}
	var p rowDecoder
	if cp.Options.Format == CopyBinary {
		p = newCopyBinaryParser(cp.Columns)
	} else {
		p = newCopyParser(cp.Options, cp.Columns, &c.fopts)
	}
	var count int64
	write := func(rows []types.Row) error {
		if len(rows) == 0 {
			return nil
		}
		count += int64(len(rows))
		return sink.Write(ctx, rows)
	}
	for {
		msg, err := c.receive()
		if err != nil {
			return "", err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := ctx.Err(); err != nil {
				return "", context.Cause(ctx)
			}
			rows, err := p.feed(m.Data)
			if err != nil {
				return "", err
			}
			if err := write(rows); err != nil {
				return "", err
			}
		case *pgproto3.CopyDone:
			rows, err := p.finish()
			if err != nil {
				return "", err
			}
			if err := write(rows); err != nil {
				return "", err
			}
			finished = true
			tag, err := sink.Finish(ctx)
			if err != nil {
				return "", err
			}
			if tag == "" {
				tag = fmt.Sprintf("COPY %d", count)
			}
			return tag, nil
		case *pgproto3.CopyFail:
			return "", sqlerr.Errorf(sqlerr.QueryCanceled, "COPY from stdin failed: %s", m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
			// ignored during COPY IN, as PostgreSQL does
		case *pgproto3.Terminate:
			return "", errTerminate
		default:
			return "", sqlerr.Errorf(sqlerr.ProtocolViolation, "unexpected message type %T during COPY from stdin", msg)
		}
	}
}

// copyOut runs COPY TO STDOUT: one CopyData message per row.
func (c *conn) copyOut(ctx context.Context, res *Result) (string, error) {
	cp := res.Copy
	if err := cp.Options.validate(); err != nil {
		return "", err
	}
	if res.Rows == nil {
		return "", errors.New("COPY TO STDOUT result without rows")
	}
	format, colFormats := copyWireFormats(cp)
	c.send(&pgproto3.CopyOutResponse{OverallFormat: format, ColumnFormatCodes: colFormats})
	var f interface {
		appendRow([]byte, types.Row) ([]byte, error)
	}
	var bf *copyBinaryFormatter
	if cp.Options.Format == CopyBinary {
		bf = &copyBinaryFormatter{cols: cp.Columns}
		f = bf
		c.appendCopyData(func(b []byte) ([]byte, error) { return bf.appendHeader(b), nil })
	} else {
		tf := &copyFormatter{opts: cp.Options, cols: cp.Columns, fopts: &c.fopts}
		f = tf
		if cp.Options.Header {
			c.appendCopyData(func(b []byte) ([]byte, error) { return tf.appendHeader(b), nil })
		}
	}
	var n int64
	for {
		if n%rowCheckInterval == 0 && ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		row, err := res.Rows.Next(ctx)
		if err != nil {
			return "", err
		}
		if row == nil {
			break
		}
		if err := c.appendCopyData(func(b []byte) ([]byte, error) { return f.appendRow(b, row) }); err != nil {
			return "", err
		}
		n++
		if c.werr != nil {
			return "", errWrite
		}
	}
	if bf != nil {
		c.appendCopyData(func(b []byte) ([]byte, error) { return bf.appendTrailer(b), nil })
	}
	c.send(&pgproto3.CopyDone{})
	if res.Tag != "" {
		return res.Tag, nil
	}
	return fmt.Sprintf("COPY %d", n), nil
}

// copyWireFormats returns the overall and per-column format codes of a
// CopyInResponse / CopyOutResponse (0 text, 1 binary).
func copyWireFormats(cp *Copy) (uint8, []uint16) {
	cols := make([]uint16, len(cp.Columns))
	if cp.Options.Format != CopyBinary {
		return 0, cols
	}
	for i := range cols {
		cols[i] = 1
	}
	return 1, cols
}

// appendCopyData frames what fill appends as one CopyData message.
func (c *conn) appendCopyData(fill func([]byte) ([]byte, error)) error {
	start := len(c.wbuf)
	buf, err := fill(append(c.wbuf, 'd', 0, 0, 0, 0))
	if err != nil {
		c.wbuf = c.wbuf[:start]
		return err
	}
	binary.BigEndian.PutUint32(buf[start+1:], uint32(len(buf)-start-1))
	c.wbuf = buf
	if len(c.wbuf) >= flushThreshold {
		c.flush()
	}
	return nil
}
