package mysqlwire

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Capability flags (MySQL's CLIENT_*).
const (
	clientLongPassword     = 0x00000001
	clientFoundRows        = 0x00000002
	clientLongFlag         = 0x00000004
	clientConnectWithDB    = 0x00000008
	clientProtocol41       = 0x00000200
	clientSSL              = 0x00000800
	clientTransactions     = 0x00002000
	clientSecureConnection = 0x00008000
	clientMultiStatements  = 0x00010000
	clientMultiResults     = 0x00020000
	clientPSMultiResults   = 0x00040000
	clientPluginAuth       = 0x00080000
	clientConnectAttrs     = 0x00100000
	clientPluginAuthLenenc = 0x00200000
)

// serverCapabilities are what the handshake offers. Not offered: SSL
// (the listener is plain TCP: bind it to a trusted network) and
// CLIENT_DEPRECATE_EOF (result sets end with EOF packets, which every
// client reads).
const serverCapabilities = clientLongPassword | clientFoundRows | clientLongFlag | clientConnectWithDB |
	clientProtocol41 | clientTransactions | clientSecureConnection | clientMultiStatements |
	clientMultiResults | clientPSMultiResults | clientPluginAuth | clientConnectAttrs | clientPluginAuthLenenc

// Server status flags.
const (
	statusInTrans          = 0x0001
	statusAutocommit       = 0x0002
	statusMoreResultsExist = 0x0008
)

// Commands.
const (
	comQuit            = 0x01
	comInitDB          = 0x02
	comQuery           = 0x03
	comFieldList       = 0x04
	comPing            = 0x0e
	comStmtPrepare     = 0x16
	comStmtExecute     = 0x17
	comStmtSendLong    = 0x18
	comStmtClose       = 0x19
	comStmtReset       = 0x1a
	comSetOption       = 0x1b
	comResetConnection = 0x1f
)

// collationUTF8MB4 (utf8mb4_general_ci) is the connection's collation:
// the engine's text is UTF-8 whatever the client asks for.
const collationUTF8MB4 = 45

const nativePasswordPlugin = "mysql_native_password"
const clearPasswordPlugin = "mysql_clear_password"

type conn struct {
	s   *Server
	nc  net.Conn
	pio packetIO
	id  uint32

	caps   uint32 // capabilities both sides have
	user   string
	schema string // the current MySQL database (a schema of cfg.Database)
	sess   pgwire.Session
	vars   map[string]string // session values of system variables (SET)
	stmts  map[uint32]*prepared
	nextID uint32
	fmt    types.FormatOptions

	mu      sync.Mutex
	cancel  context.CancelCauseFunc // the running command's, nil when idle
	closing bool
}

// serve runs the connection to its end. A panic (an engine bug) ends this
// connection only (I9).
func (c *conn) serve() {
	defer c.nc.Close()
	defer func() {
		if v := recover(); v != nil {
			c.s.log.Error("mysqlwire: panic on connection", "conn", c.id, "panic", v, "stack", string(debug.Stack()))
			if c.s.panicked != nil {
				c.s.panicked(v)
			}
			_ = c.pio.writePacket(appendErr(nil, newError(erUnknownError, sqlerr.InternalError, fmt.Sprint("internal error: ", v))))
			_ = c.pio.flush()
		}
	}()
	defer func() {
		for _, p := range c.stmts {
			p.close()
		}
		if c.sess != nil {
			c.sess.Close()
		}
	}()
	_ = c.nc.SetDeadline(time.Now().Add(c.s.cfg.HandshakeTimeout))
	if err := c.handshake(); err != nil {
		var me *mysqlError
		if errors.As(err, &me) {
			_ = c.pio.writePacket(appendErr(nil, me))
			_ = c.pio.flush()
		} else if !errors.Is(err, io.EOF) {
			c.s.log.Debug("mysqlwire: handshake failed", "remote", c.nc.RemoteAddr(), "err", err)
		}
		return
	}
	_ = c.nc.SetDeadline(time.Time{})
	for {
		c.pio.seq = 0
		pkt, err := c.pio.readPacket()
		if err != nil {
			c.endOnReadError(err)
			return
		}
		if len(pkt) == 0 {
			c.fatal(newError(erUnknownCommand, "08S01", "empty command packet"))
			return
		}
		if pkt[0] == comQuit {
			return
		}
		if !c.command(pkt) {
			return
		}
		if err := c.pio.flush(); err != nil {
			return
		}
	}
}

// endOnReadError answers what can still be answered.
func (c *conn) endOnReadError(err error) {
	switch {
	case errors.Is(err, errPacketTooLarge):
		c.fatal(newError(erNetPacketTooLarge, "08S01", fmt.Sprintf("Got a packet bigger than 'max_allowed_packet' bytes (%d)", c.s.cfg.MaxPacketSize)))
	case errors.Is(err, errSequence):
		c.fatal(newError(erNetReadError, "08S01", err.Error()))
	case c.isClosing():
		c.fatal(toMySQL(errShutdown))
	}
}

func (c *conn) fatal(e *mysqlError) {
	_ = c.pio.writePacket(appendErr(nil, e))
	_ = c.pio.flush()
}

func (c *conn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// interrupt is Shutdown's: a running command is cancelled (its ctx derives
// from the server's), an idle connection's read is woken.
func (c *conn) interrupt() {
	c.mu.Lock()
	c.closing = true
	running := c.cancel != nil
	c.mu.Unlock()
	if !running {
		_ = c.nc.SetReadDeadline(time.Now())
	}
}

// handshake sends the greeting, reads the client's response and
// authenticates; on success the session is open and OK has been sent.
func (c *conn) handshake() error {
	var scramble [20]byte
	if _, err := rand.Read(scramble[:]); err != nil {
		return err
	}
	for i := range scramble { // the scramble is sent NUL-terminated
		scramble[i] = scramble[i]&0x7f | 1
	}
	g := []byte{10}
	g = append(g, ServerVersion...)
	g = append(g, 0)
	g = append(g, byte(c.id), byte(c.id>>8), byte(c.id>>16), byte(c.id>>24))
	g = append(g, scramble[:8]...)
	g = append(g, 0)
	caps := uint32(serverCapabilities)
	g = append(g, byte(caps), byte(caps>>8))
	g = append(g, collationUTF8MB4)
	g = append(g, byte(statusAutocommit), 0)
	g = append(g, byte(caps>>16), byte(caps>>24))
	g = append(g, 21)
	g = append(g, make([]byte, 10)...)
	g = append(g, scramble[8:]...)
	g = append(g, 0)
	g = append(g, nativePasswordPlugin...)
	g = append(g, 0)
	pkt, err := c.exchange(g)
	if err != nil {
		return err
	}
	r := &reader{b: pkt}
	clientCaps := r.u32()
	if r.err == nil && clientCaps&clientProtocol41 == 0 {
		return newError(erAccessDenied, "08004", "this server speaks protocol 4.1 only")
	}
	if clientCaps&clientSSL != 0 {
		return newError(erAccessDenied, "08004", "SSL was not offered: connect without it")
	}
	c.caps = clientCaps & serverCapabilities
	r.u32() // max packet size
	r.u8()  // collation: text is always utf8mb4
	r.bytes(23)
	user := r.nulString()
	var authResp string
	switch {
	case c.caps&clientPluginAuthLenenc != 0:
		authResp, _ = r.lenEncString()
	case c.caps&clientSecureConnection != 0:
		authResp = string(r.bytes(int(r.u8())))
	default:
		authResp = r.nulString()
	}
	var db string
	if c.caps&clientConnectWithDB != 0 && len(r.b) > 0 {
		db = r.nulString()
	}
	var plugin string
	if c.caps&clientPluginAuth != 0 && len(r.b) > 0 {
		plugin = r.nulString()
	}
	attrs := map[string]string{}
	if c.caps&clientConnectAttrs != 0 && len(r.b) > 0 {
		n, _ := r.lenEncInt()
		if n > uint64(len(r.b)) {
			r.fail()
		} else {
			ar := &reader{b: r.bytes(int(n))}
			for len(ar.b) > 0 && ar.err == nil {
				k, _ := ar.lenEncString()
				v, _ := ar.lenEncString()
				attrs[k] = v
			}
		}
	}
	if r.err != nil {
		return newError(erAccessDenied, "08S01", "malformed handshake response")
	}
	if err := c.authenticate(user, plugin, authResp); err != nil {
		return err
	}
	ctx := c.s.baseCtx
	params := pgwire.StartupParams{User: user, Database: c.s.cfg.Database, ApplicationName: attrs["program_name"],
		Options: map[string]string{}, Other: map[string]string{}, RemoteAddr: c.nc.RemoteAddr()}
	c.sess, err = c.s.eng.NewSession(ctx, params, clientConn{})
	if err != nil {
		return toMySQL(err)
	}
	c.user = user
	c.vars = map[string]string{}
	c.stmts = map[uint32]*prepared{}
	c.schema = "public"
	if db != "" {
		if err := c.use(ctx, db); err != nil {
			return toMySQL(err)
		}
	}
	if err := c.writeOK(0, false); err != nil {
		return err
	}
	return c.pio.flush()
}

// authenticate applies pgwire's rules: a user without a password is
// trusted from loopback (or everywhere, per Config); a user with one gives
// it in clear text (mysql_clear_password) and it is checked against the
// stored SCRAM verifier. Clear text is accepted only from loopback, since
// the listener has no TLS: elsewhere such a user connects over pgwire.
func (c *conn) authenticate(user, plugin, authResp string) error {
	denied := func() error {
		return newError(erAccessDenied, "28000", fmt.Sprintf("Access denied for user '%s'", user))
	}
	info, err := c.s.eng.UserAuth(c.s.baseCtx, user)
	if err != nil {
		if sqlerr.From(err) != nil {
			return newError(erAccessDenied, "28000", fmt.Sprintf("Access denied for user '%s': %s", user, sqlerr.From(err).Message))
		}
		return err
	}
	loopback := isLoopback(c.nc.RemoteAddr())
	if info.SCRAMVerifier == "" {
		if c.s.cfg.AuthTrustAll || c.s.cfg.AuthTrustLoopback && loopback {
			return nil
		}
		return denied()
	}
	if !loopback {
		return newError(erAccessDenied, "28000", fmt.Sprintf("Access denied for user '%s': a password is accepted in clear text only from a loopback address over the MySQL protocol (no TLS); connect over pgwire", user))
	}
	password := authResp
	if plugin != clearPasswordPlugin {
		// Ask for the password in clear text (AuthSwitchRequest).
		sw := append([]byte{0xfe}, clearPasswordPlugin...)
		sw = append(sw, 0)
		pkt, err := c.exchange(sw)
		if err != nil {
			return err
		}
		password = strings.TrimSuffix(string(pkt), "\x00")
	} else {
		password = strings.TrimSuffix(password, "\x00")
	}
	if !pgwire.CheckSCRAMPassword(info.SCRAMVerifier, password) {
		return denied()
	}
	return nil
}

// exchange sends one packet of the handshake and reads the client's reply.
func (c *conn) exchange(payload []byte) ([]byte, error) {
	if err := c.pio.writePacket(payload); err != nil {
		return nil, err
	}
	if err := c.pio.flush(); err != nil {
		return nil, err
	}
	return c.pio.readPacket()
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// clientConn drops notices and parameter reports: MySQL has no channel
// for them besides warnings, which Runnel does not produce.
type clientConn struct{}

func (clientConn) Notice(pgwire.Notice)           {}
func (clientConn) SetParameterStatus(_, _ string) {}

// command handles one command packet; false ends the connection.
func (c *conn) command(pkt []byte) bool {
	ctx, cancel := context.WithCancelCause(c.s.baseCtx)
	c.mu.Lock()
	c.cancel = cancel
	closing := c.closing
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel(nil)
	}()
	if closing {
		c.fatal(toMySQL(errShutdown))
		return false
	}
	if t, ok := c.sess.(pgwire.StatementTimeouter); ok {
		if d := t.StatementTimeout(); d > 0 {
			var stop context.CancelFunc
			ctx, stop = context.WithTimeoutCause(ctx, d, sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to statement timeout"))
			defer stop()
		}
	}
	body := pkt[1:]
	var err error
	switch pkt[0] {
	case comQuery:
		err = c.query(ctx, string(body))
	case comInitDB:
		if err = c.use(ctx, string(body)); err == nil {
			err = c.writeOK(0, false)
		}
	case comPing, comStmtReset, comResetConnection:
		if pkt[0] == comStmtReset {
			if p := c.stmts[(&reader{b: body}).u32()]; p != nil {
				p.longData = nil
			}
		}
		err = c.writeOK(0, false)
	case comFieldList:
		err = c.writeEOF(false) // no column list: clients complete names without it
	case comSetOption:
		err = c.writeEOF(false)
	case comStmtPrepare:
		err = c.prepare(ctx, string(body))
	case comStmtExecute:
		err = c.execute(ctx, body)
	case comStmtSendLong:
		c.sendLongData(body) // no response, errors surface at execute
	case comStmtClose:
		if id := (&reader{b: body}).u32(); c.stmts[id] != nil {
			c.stmts[id].close()
			delete(c.stmts, id)
		}
	default:
		err = newError(erUnknownCommand, "08S01", fmt.Sprintf("unknown command %#x", pkt[0]))
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause
		}
		var ioErr *ioError
		if errors.As(err, &ioErr) {
			return false
		}
		c.sess.OnError(err)
		if e := c.pio.writePacket(appendErr(nil, toMySQL(err))); e != nil {
			return false
		}
	}
	return true
}

// ioError marks a failure to write to the client: the connection ends.
type ioError struct{ err error }

func (e *ioError) Error() string { return e.err.Error() }

func (c *conn) status(more bool) uint16 {
	st := uint16(statusAutocommit)
	if c.sess != nil && c.sess.TxStatus() != pgwire.TxIdle {
		st |= statusInTrans
	}
	if more {
		st |= statusMoreResultsExist
	}
	return st
}

func (c *conn) write(b []byte) error {
	if err := c.pio.writePacket(b); err != nil {
		return &ioError{err}
	}
	return nil
}

func (c *conn) writeOK(affected uint64, more bool) error {
	b := []byte{0}
	b = appendLenEncInt(b, affected)
	b = appendLenEncInt(b, 0) // last insert id: Runnel has no AUTO_INCREMENT
	st := c.status(more)
	b = append(b, byte(st), byte(st>>8), 0, 0)
	return c.write(b)
}

func (c *conn) writeEOF(more bool) error {
	st := c.status(more)
	return c.write([]byte{0xfe, 0, 0, byte(st), byte(st >> 8)})
}
